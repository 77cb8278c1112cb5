//! Per-model settings: `models` in a config file is either the list of models offered in the picker
//! (`models = ["a", "b"]`) or a table of them with settings of their own (`[models."NAME"] edit_mode =
//! "hashline"`); the keys of the table are offered in the picker too. Also the edit mode itself.
//!
//! Owns these settings' format and merge. Must not read files.

use std::collections::BTreeMap;

use serde::Deserialize;

/// How the model edits files (`edit_mode`): `replace` (the default) offers `edit` and `apply_patch`, which find
/// text to replace; `hashline` tags every line `read` returns with `N:hh|` and offers `hashline_edit`, which
/// addresses lines by those tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EditMode {
    #[default]
    Replace,
    Hashline,
}

impl EditMode {
    pub fn name(self) -> &'static str {
        match self {
            EditMode::Replace => "replace",
            EditMode::Hashline => "hashline",
        }
    }
}

/// The settings of one model (`[models."NAME"]`).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    pub edit_mode: Option<EditMode>,
}

impl ModelSettings {
    /// `self` over `lower`, field by field.
    fn under(self, lower: ModelSettings) -> ModelSettings {
        ModelSettings { edit_mode: self.edit_mode.or(lower.edit_mode) }
    }
}

/// `models` as a config file writes it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum ModelsLayer {
    List(Vec<String>),
    Table(BTreeMap<String, ModelSettings>),
}

impl ModelsLayer {
    /// The models offered in the picker.
    pub fn names(&self) -> Vec<String> {
        match self {
            ModelsLayer::List(names) => names.clone(),
            ModelsLayer::Table(table) => table.keys().cloned().collect(),
        }
    }

    /// The per-model settings this layer writes.
    pub fn settings(&self) -> BTreeMap<String, ModelSettings> {
        match self {
            ModelsLayer::List(_) => BTreeMap::new(),
            ModelsLayer::Table(table) => table.clone(),
        }
    }
}

/// Per-model settings of a higher layer over a lower one, per model and per field.
pub fn merge_settings(
    higher: BTreeMap<String, ModelSettings>,
    mut lower: BTreeMap<String, ModelSettings>,
) -> BTreeMap<String, ModelSettings> {
    for (name, mine) in higher {
        let below = lower.remove(&name).unwrap_or_default();
        lower.insert(name, mine.under(below));
    }
    lower
}

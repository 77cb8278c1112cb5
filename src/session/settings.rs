//! A session's settings and how they are offered to the editor: the mode (build, plan, accept-edits, yolo), the
//! model, and the reasoning level when the model has one, as config options of the core's own shape (the
//! `acp` layer converts them). What a model can do comes from the model catalogue (`llm::catalogue`).
//!
//! Owns the choices and their defaults. Must not know ACP types.

/// The modes a session can be in. Each is a permission agent of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Build,
    Plan,
    AcceptEdits,
    Yolo,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Build, Mode::Plan, Mode::AcceptEdits, Mode::Yolo];

    pub fn id(self) -> &'static str {
        match self {
            Mode::Build => "build",
            Mode::Plan => "plan",
            Mode::AcceptEdits => "accept-edits",
            Mode::Yolo => "yolo",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Build => "Build",
            Mode::Plan => "Plan",
            Mode::AcceptEdits => "Accept edits",
            Mode::Yolo => "Yolo",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Mode::Build => "Reads freely; asks before edits and commands",
            Mode::Plan => "Reads and plans; never edits files or runs commands that change anything",
            Mode::AcceptEdits => "Edits without asking; still asks before commands",
            Mode::Yolo => "Does everything without asking, except commands touching secret files",
        }
    }

    pub fn parse(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }
}

/// One value of a select option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
}

/// What an option controls (a hint for the editor's UI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    Mode,
    Model,
    ThoughtLevel,
}

/// A select option with its current value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigOption {
    pub id: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    pub kind: OptionKind,
    pub current: String,
    pub choices: Vec<Choice>,
}

pub const MODE_OPTION: &str = "mode";
pub const MODEL_OPTION: &str = "model";
pub const THOUGHT_OPTION: &str = "thought_level";
/// Reasoning levels offered for models that reason.
pub const THOUGHT_LEVELS: [&str; 3] = ["low", "medium", "high"];

/// The session's current choices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub mode: Mode,
    pub model: String,
    pub thought_level: Option<String>,
}

/// Does this model take a reasoning effort? What the model catalogue says, else known reasoning families by name.
pub fn supports_reasoning(model: &str) -> bool {
    if let Some(entry) = crate::llm::catalogue::compiled("", model) {
        return entry.reasoning;
    }
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    [
        "o1",
        "o3",
        "o4",
        "gpt-5",
        "gpt-oss",
        "deepseek-r",
        "deepseek-reasoner",
        "qwq",
        "qwen3",
        "grok-3-mini",
        "magistral",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
}

impl Settings {
    /// The settings a session stored as `row` starts with under `config` (its mode, else `build`; its model,
    /// else the configured one).
    pub fn of_row(row: &crate::store::sessions::SessionRow, config: &crate::config::Config) -> Self {
        Self {
            mode: Mode::parse(&row.mode).unwrap_or(Mode::Build),
            model: row.model.clone().unwrap_or_else(|| config.model.clone()),
            thought_level: row.thought_level.clone(),
        }
    }

    /// Every option, in priority order: mode, model, then reasoning level when the model supports it.
    pub fn options(&self, models: &[String]) -> Vec<ConfigOption> {
        let mut model_ids: Vec<String> = models.to_vec();
        if !model_ids.contains(&self.model) {
            model_ids.insert(0, self.model.clone());
        }
        let mut options = vec![
            ConfigOption {
                id: MODE_OPTION,
                name: "Mode",
                description: "What the agent may do without asking",
                kind: OptionKind::Mode,
                current: self.mode.id().to_string(),
                choices: Mode::ALL
                    .iter()
                    .map(|m| Choice {
                        id: m.id().into(),
                        name: m.name().into(),
                        description: Some(m.description().into()),
                    })
                    .collect(),
            },
            ConfigOption {
                id: MODEL_OPTION,
                name: "Model",
                description: "The model answering in this session",
                kind: OptionKind::Model,
                current: self.model.clone(),
                choices: model_ids
                    .into_iter()
                    .map(|id| Choice { name: id.clone(), id, description: None })
                    .collect(),
            },
        ];
        if supports_reasoning(&self.model) {
            options.push(ConfigOption {
                id: THOUGHT_OPTION,
                name: "Reasoning",
                description: "How much the model thinks before answering",
                kind: OptionKind::ThoughtLevel,
                current: self.thought_level.clone().unwrap_or_else(|| "medium".into()),
                choices: THOUGHT_LEVELS
                    .iter()
                    .map(|l| Choice { id: l.to_string(), name: l.to_string(), description: None })
                    .collect(),
            });
        }
        options
    }

    /// Apply a choice. `Err` names the problem (unknown option or value).
    pub fn set(&mut self, option: &str, value: &str, models: &[String]) -> Result<(), String> {
        match option {
            MODE_OPTION => {
                self.mode = Mode::parse(value).ok_or_else(|| format!("unknown mode \"{value}\""))?
            }
            MODEL_OPTION => {
                if value.trim().is_empty() {
                    return Err("the model must not be empty".into());
                }
                if !models.is_empty() && !models.iter().any(|m| m == value) && value != self.model {
                    tracing::info!(model = value, "model not in the provider's list; using it anyway");
                }
                self.model = value.to_string();
            }
            THOUGHT_OPTION if supports_reasoning(&self.model) => {
                if !THOUGHT_LEVELS.contains(&value) {
                    return Err(format!("unknown reasoning level \"{value}\""));
                }
                self.thought_level = Some(value.to_string());
            }
            other => return Err(format!("unknown config option \"{other}\"")),
        }
        Ok(())
    }

    /// The reasoning effort to send, if the model takes one.
    pub fn reasoning_effort(&self) -> Option<String> {
        supports_reasoning(&self.model).then(|| self.thought_level.clone().unwrap_or_else(|| "medium".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(model: &str) -> Settings {
        Settings { mode: Mode::Build, model: model.into(), thought_level: None }
    }

    #[test]
    fn options_list_mode_then_model_and_reasoning_only_for_reasoning_models() {
        let plain = settings("gpt-4.1").options(&["gpt-4.1".into(), "gpt-4o".into()]);
        let ids: Vec<&str> = plain.iter().map(|o| o.id).collect();
        assert_eq!(ids, vec!["mode", "model"]);
        assert_eq!(
            plain[1].choices.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            vec!["gpt-4.1", "gpt-4o"]
        );
        let reasoning = settings("o4-mini").options(&[]);
        assert_eq!(
            reasoning.iter().map(|o| o.id).collect::<Vec<_>>(),
            vec!["mode", "model", "thought_level"]
        );
        assert_eq!(reasoning[1].choices[0].id, "o4-mini", "the current model is always a choice");
        assert_eq!(reasoning[2].current, "medium");
    }

    #[test]
    fn setting_values_validates_them() {
        let mut s = settings("gpt-5");
        s.set("mode", "plan", &[]).unwrap();
        assert_eq!(s.mode, Mode::Plan);
        assert_eq!(s.set("mode", "chaos", &[]), Err("unknown mode \"chaos\"".into()));
        s.set("thought_level", "high", &[]).unwrap();
        assert_eq!(s.reasoning_effort(), Some("high".into()));
        s.set("model", "gpt-4.1", &[]).unwrap();
        assert_eq!(s.reasoning_effort(), None);
        assert_eq!(
            s.set("thought_level", "high", &[]),
            Err("unknown config option \"thought_level\"".into())
        );
        assert_eq!(s.set("colour", "red", &[]), Err("unknown config option \"colour\"".into()));
    }
}

//! What one repair did: a rule and the argument names it touched. This is what the model reads in the
//! `<repair_note>` and what the logs record, so it names rules and keys only, never argument values.
//!
//! Owns the wording of every rule. Must not hold a value from the call.

use std::fmt;

/// One repair that fired. `at` is a key path (`edits`, `todos[].status`); array positions are written `[]`
/// so a repair on many items reads once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fix {
    /// The tool name was not exact (`default_api.Read`, `str_replace`): the call went to `to`.
    RenamedTool {
        from: String,
        to: String,
    },
    StrippedFence,
    /// Prose before or after the JSON object was dropped.
    CutToObject,
    /// Backslashes that start no JSON escape (`\d`, `\U`) were kept as backslashes.
    KeptBackslashes,
    /// The JSON-repair crate fixed the syntax (quotes, commas, comments, literals).
    RepairedSyntax,
    /// The whole arguments object arrived as a JSON string.
    UnwrappedString,
    /// An argument the schema wants as an array or object arrived as a JSON string.
    ParsedString {
        at: String,
        kind: &'static str,
    },
    /// A string was read as the number or boolean the schema wants.
    Coerced {
        at: String,
        to: &'static str,
    },
    /// `{"value": x}` where the schema wants the scalar `x`.
    UnwrappedValue {
        at: String,
    },
    /// A single value where the schema wants an array.
    Wrapped {
        at: String,
    },
    DroppedNull {
        at: String,
    },
    DroppedPlaceholder {
        at: String,
    },
    /// A key the schema closes out (`additionalProperties: false`).
    DroppedUnknown {
        at: String,
    },
    Renamed {
        from: String,
        to: &'static str,
    },
    StrippedMarkdown {
        at: String,
    },
    UnwrappedHeredoc {
        at: String,
    },
    /// A backspace character in a regex, which the model meant as `\b`.
    RestoredWordBoundary {
        at: String,
    },
}

impl Fix {
    /// The rule's name, for logs.
    pub fn rule(&self) -> &'static str {
        match self {
            Fix::RenamedTool { .. } => "tool_name",
            Fix::StrippedFence => "code_fence",
            Fix::CutToObject => "surrounding_text",
            Fix::KeptBackslashes => "invalid_escape",
            Fix::RepairedSyntax => "json_syntax",
            Fix::UnwrappedString => "double_encoded",
            Fix::ParsedString { .. } => "stringified",
            Fix::Coerced { .. } => "coerced",
            Fix::UnwrappedValue { .. } => "value_object",
            Fix::Wrapped { .. } => "wrapped_scalar",
            Fix::DroppedNull { .. } => "null_optional",
            Fix::DroppedPlaceholder { .. } => "empty_placeholder",
            Fix::DroppedUnknown { .. } => "unknown_key",
            Fix::Renamed { .. } => "alias",
            Fix::StrippedMarkdown { .. } => "markdown_path",
            Fix::UnwrappedHeredoc { .. } => "heredoc",
            Fix::RestoredWordBoundary { .. } => "word_boundary",
        }
    }
}

impl fmt::Display for Fix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fix::RenamedTool { from, to } => write!(f, "called tool {to} (sent as {from})"),
            Fix::StrippedFence => f.write_str("stripped a Markdown code fence"),
            Fix::CutToObject => f.write_str("dropped text around the JSON object"),
            Fix::KeptBackslashes => f.write_str("escaped backslashes that started no JSON escape"),
            Fix::RepairedSyntax => f.write_str("repaired invalid JSON syntax"),
            Fix::UnwrappedString => f.write_str("parsed arguments that were sent as a JSON string"),
            Fix::ParsedString { at, kind } => write!(f, "parsed stringified {kind} in {at}"),
            Fix::Coerced { at, to } => write!(f, "coerced string to {to} in {at}"),
            Fix::UnwrappedValue { at } => write!(f, "unwrapped {{\"value\": …}} in {at}"),
            Fix::Wrapped { at } => write!(f, "wrapped a single value into an array in {at}"),
            Fix::DroppedNull { at } => write!(f, "dropped null optional {at}"),
            Fix::DroppedPlaceholder { at } => write!(f, "dropped empty placeholder {at}"),
            Fix::DroppedUnknown { at } => write!(f, "dropped unknown key {at}"),
            Fix::Renamed { from, to } => write!(f, "renamed {from}→{to}"),
            Fix::StrippedMarkdown { at } => write!(f, "stripped Markdown from {at}"),
            Fix::UnwrappedHeredoc { at } => write!(f, "unwrapped a shell heredoc in {at}"),
            Fix::RestoredWordBoundary { at } => write!(f, "read a backspace as \\b in {at}"),
        }
    }
}

/// A key path below `parent` (`""` is the arguments object itself).
pub fn child(parent: &str, key: &str) -> String {
    if parent.is_empty() { key.to_string() } else { format!("{parent}.{key}") }
}

/// The path of any item of the array at `parent`.
pub fn item(parent: &str) -> String {
    format!("{parent}[]")
}

/// The `<repair_note>` for these fixes (each sentence once, in order), or `None` when nothing was repaired.
pub fn note(fixes: &[Fix]) -> Option<String> {
    let mut sentences: Vec<String> = Vec::new();
    for fix in fixes {
        let sentence = fix.to_string();
        if !sentences.contains(&sentence) {
            sentences.push(sentence);
        }
    }
    (!sentences.is_empty()).then(|| format!("<repair_note>{}</repair_note>", sentences.join("; ")))
}

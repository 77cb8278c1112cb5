//! The chunk nearly every Chat Completions stream is made of (`{"choices":[{"delta":{"content":"…"}}]}`), read
//! into borrowed fields: no map, no hashing and no copy per chunk (a generic JSON value cost about a microsecond
//! of the agent's ~3 µs per streamed chunk). Anything else (usage, an error, tool calls, `reasoning_details`, a
//! field of an unexpected type) is not taken here and goes the general way, so both ways agree on every chunk.
//!
//! Owns only this shape; what a chunk means stays in `chat`.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::Parts;

#[derive(Deserialize)]
pub(super) struct Chunk<'a> {
    #[serde(borrow, default)]
    pub choices: Vec<Choice<'a>>,
    usage: Option<IgnoredAny>,
    /// Present even as `null`: the general way reports any `error` key.
    #[serde(default)]
    error: Present,
}

#[derive(Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(borrow)]
    pub delta: Option<DeltaFields<'a>>,
    #[serde(borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct DeltaFields<'a> {
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow)]
    refusal: Option<Cow<'a, str>>,
    reasoning_details: Option<IgnoredAny>,
    tool_calls: Option<IgnoredAny>,
}

/// Whether a key was there at all, whatever its value.
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

impl<'a> Chunk<'a> {
    /// The chunk, when it is one this module takes whole.
    pub fn parse(data: &'a str) -> Option<Self> {
        let chunk: Self = serde_json::from_str(data).ok()?;
        let first = chunk.choices.first().and_then(|choice| choice.delta.as_ref());
        let plain = first.is_none_or(|delta| delta.reasoning_details.is_none() && delta.tool_calls.is_none());
        (plain && chunk.usage.is_none() && !chunk.error.0).then_some(chunk)
    }
}

impl DeltaFields<'_> {
    pub fn parts(&self) -> Parts<'_> {
        fn text<'s>(field: &'s Option<Cow<'_, str>>) -> &'s str {
            field.as_deref().unwrap_or_default()
        }
        Parts {
            reasoning_content: text(&self.reasoning_content),
            reasoning: text(&self.reasoning),
            details: None,
            content: text(&self.content),
            refusal: text(&self.refusal),
        }
    }
}

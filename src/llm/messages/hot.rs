//! The event nearly every Anthropic Messages stream is made of (`content_block_delta` with a `text_delta` or a
//! `thinking_delta`), read into borrowed fields: no map, no hashing and no copy per event. Every other event,
//! or a field of an unexpected type, is not taken here and goes the general way, so both ways agree on every
//! event.
//!
//! Owns only this shape; what an event means stays in `messages`.

use std::borrow::Cow;

use serde::Deserialize;

/// A text delta of block `index`: of the answer, or of a thinking block.
pub(super) struct BlockText<'a> {
    pub index: u64,
    pub thinking: bool,
    pub text: Cow<'a, str>,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: Option<u64>,
    #[serde(borrow)]
    delta: Option<Fields<'a>>,
}

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
}

impl<'a> BlockText<'a> {
    /// The delta, when `data` is the event this module takes.
    pub fn parse(data: &'a str) -> Option<Self> {
        let event: Event<'a> = serde_json::from_str(data).ok()?;
        let delta = event.delta.filter(|_| event.kind == "content_block_delta")?;
        let index = event.index.unwrap_or(0);
        match delta.kind.as_deref() {
            Some("text_delta") => Some(Self { index, thinking: false, text: delta.text.unwrap_or_default() }),
            Some("thinking_delta") => {
                Some(Self { index, thinking: true, text: delta.thinking.unwrap_or_default() })
            }
            _ => None,
        }
    }
}

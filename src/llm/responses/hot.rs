//! The events nearly every Responses stream is made of (`response.output_text.delta` and the reasoning text
//! deltas), read into borrowed fields: no map, no hashing and no copy per event. Every other event type, or a
//! field of an unexpected type, is not taken here and goes the general way, so both ways agree on every event.
//!
//! Owns only this shape; what an event means stays in `responses`.

use std::borrow::Cow;

use serde::Deserialize;

/// A text delta of the answer or of its reasoning.
pub(super) enum TextDelta<'a> {
    Answer(Cow<'a, str>),
    Thought(Cow<'a, str>),
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    delta: Option<Cow<'a, str>>,
}

impl<'a> TextDelta<'a> {
    /// The delta, when `data` is one of the events this module takes.
    pub fn parse(data: &'a str) -> Option<Self> {
        let event: Event<'a> = serde_json::from_str(data).ok()?;
        let delta = event.delta.unwrap_or_default();
        match &*event.kind {
            "response.output_text.delta" => Some(Self::Answer(delta)),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                Some(Self::Thought(delta))
            }
            _ => None,
        }
    }
}

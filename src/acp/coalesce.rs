//! Coalescing of streamed text: consecutive chunks of one assistant message (or of one thought) are held and
//! sent as a single `session/update` once [`HOLD`] has passed since the first of them or [`MAX_HELD`] bytes
//! have gathered, and always before any other update (and when the model's stream ends), so a fast model costs
//! one message per few milliseconds instead of one per token, and the editor never waits more than [`HOLD`].
//!
//! Owns the held text only; sending (and the timer that flushes) is the session client's.

use std::time::Duration;

use crate::agent::AgentEvent;

/// Longest time text is held before it goes out.
pub const HOLD: Duration = Duration::from_millis(8);
/// Held text goes out as soon as it reaches this size.
pub const MAX_HELD: usize = 16 * 1024;

/// The text being held, if any.
#[derive(Default)]
pub struct Held {
    chunk: Option<AgentEvent>,
    /// Counts holds, so a timer started for an earlier hold does not flush a later one early.
    generation: u64,
}

/// What became of a pushed chunk.
#[derive(Debug, PartialEq)]
pub enum Pushed {
    /// Joined the held text.
    Joined,
    /// Started a new hold (number `generation`): the caller sends `flushed` (the previous hold, of another
    /// message) now and flushes this one after [`HOLD`].
    Started { flushed: Option<AgentEvent>, generation: u64 },
    /// The held text is full: send it now.
    Full(AgentEvent),
}

fn text_mut(event: &mut AgentEvent) -> Option<(bool, &str, &mut String)> {
    match event {
        AgentEvent::MessageChunk { message_id, text } => Some((false, message_id, text)),
        AgentEvent::ThoughtChunk { message_id, text } => Some((true, message_id, text)),
        _ => None,
    }
}

impl Held {
    /// Hold a message or thought chunk (any other event is returned as `Full`, to be sent at once).
    pub fn push(&mut self, mut event: AgentEvent) -> Pushed {
        let Some((thought, id, text)) = text_mut(&mut event) else { return Pushed::Full(event) };
        if let Some((held_thought, held_id, held)) = self.chunk.as_mut().and_then(text_mut)
            && held_thought == thought
            && held_id == id
        {
            held.push_str(text);
            if held.len() >= MAX_HELD {
                return self.take().map_or(Pushed::Joined, Pushed::Full);
            }
            return Pushed::Joined;
        }
        let flushed = self.chunk.replace(event);
        self.generation += 1;
        Pushed::Started { flushed, generation: self.generation }
    }

    /// The held text, now.
    pub fn take(&mut self) -> Option<AgentEvent> {
        self.chunk.take()
    }

    /// The held text if it is still hold number `generation` (a timer's flush).
    pub fn take_if(&mut self, generation: u64) -> Option<AgentEvent> {
        if self.generation == generation { self.take() } else { None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(id: &str, text: &str) -> AgentEvent {
        AgentEvent::MessageChunk { message_id: id.into(), text: text.into() }
    }

    fn thought(id: &str, text: &str) -> AgentEvent {
        AgentEvent::ThoughtChunk { message_id: id.into(), text: text.into() }
    }

    #[test]
    fn chunks_of_one_message_are_joined_and_another_message_flushes_them() {
        let mut held = Held::default();
        assert_eq!(held.push(text("m", "Hel")), Pushed::Started { flushed: None, generation: 1 });
        assert_eq!(held.push(text("m", "lo")), Pushed::Joined);
        assert_eq!(
            held.push(thought("m", "hmm")),
            Pushed::Started { flushed: Some(text("m", "Hello")), generation: 2 }
        );
        assert_eq!(
            held.push(text("n", "x")),
            Pushed::Started { flushed: Some(thought("m", "hmm")), generation: 3 }
        );
        assert_eq!((held.take_if(2), held.take_if(3), held.take()), (None, Some(text("n", "x")), None));
    }

    #[test]
    fn held_text_goes_out_when_it_reaches_the_size_cap() {
        let mut held = Held::default();
        let half = "a".repeat(MAX_HELD / 2);
        held.push(text("m", &half));
        assert_eq!(held.push(text("m", &half)), Pushed::Full(text("m", &half.repeat(2))));
        assert_eq!(held.take(), None);
    }

    #[test]
    fn other_events_are_not_held() {
        let mut held = Held::default();
        let event = AgentEvent::ToolCallRunning { call_id: "c".into() };
        assert_eq!(held.push(event.clone()), Pushed::Full(event));
    }
}

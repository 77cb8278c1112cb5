//! Turn scheduling of one session. One turn runs at a time; a prompt that arrives meanwhile waits in line (its
//! `session/prompt` stays open until its own turn ends) and the user is told it is queued. A steering message
//! goes into the running turn instead: it waits in the inbox until the turn's next model request takes it. A
//! cancel stops the running turn and every queued prompt, and answers the steering messages still waiting.
//!
//! Owns the line, the cancel generations and the steering inbox. The order of turns itself comes from the
//! conversation lock (tokio's mutex is fair: first come, first served).

use std::sync::Mutex;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::lock;
use crate::agent::{Steer, Steering};

/// What became of a steering message.
#[derive(Debug)]
pub enum Fate {
    /// The running turn's next model request carries it.
    Delivered,
    /// The turn ended before another model request: it must run as a prompt of its own.
    Missed(Steer),
    /// The user cancelled.
    Cancelled,
}

struct Waiting {
    steer: Steer,
    reply: oneshot::Sender<Fate>,
}

struct State {
    /// Cancels the running turn and every prompt queued so far; a cancel starts a fresh generation.
    generation: CancellationToken,
    running: bool,
    waiting: usize,
    inbox: Vec<Waiting>,
}

/// A prompt's place in line.
pub struct Ticket {
    /// Fires when the user cancels (this prompt, the running turn and everything queued with it).
    pub cancel: CancellationToken,
    /// Turns before it: the running one and those queued earlier.
    pub ahead: usize,
}

/// The line of one session.
pub struct Queue {
    closed: CancellationToken,
    state: Mutex<State>,
}

/// The turn that runs now; when it is dropped, steering messages it did not take must run as prompts.
pub struct Running<'a> {
    queue: &'a Queue,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.queue.state);
        state.running = false;
        for waiting in state.inbox.drain(..) {
            let _ = waiting.reply.send(Fate::Missed(waiting.steer));
        }
    }
}

impl Queue {
    /// A line whose turns all stop when `closed` fires.
    pub fn new(closed: CancellationToken) -> Self {
        let generation = closed.child_token();
        Self {
            closed,
            state: Mutex::new(State { generation, running: false, waiting: 0, inbox: Vec::new() }),
        }
    }

    /// Take a place in line.
    pub fn join(&self) -> Ticket {
        let mut state = lock(&self.state);
        let ahead = usize::from(state.running) + state.waiting;
        state.waiting += 1;
        Ticket { cancel: state.generation.clone(), ahead }
    }

    /// The prompt holding a ticket starts its turn (it holds the conversation now).
    pub fn start(&self) -> Running<'_> {
        let mut state = lock(&self.state);
        state.waiting = state.waiting.saturating_sub(1);
        state.running = true;
        Running { queue: self }
    }

    /// Give `steer` to the running turn. `Err` hands it back when no turn runs.
    pub fn offer(&self, steer: Steer) -> Result<oneshot::Receiver<Fate>, Steer> {
        let mut state = lock(&self.state);
        if !state.running || state.generation.is_cancelled() {
            return Err(steer);
        }
        let (reply, fate) = oneshot::channel();
        state.inbox.push(Waiting { steer, reply });
        Ok(fate)
    }

    /// Stop the running turn and everything queued; later prompts start a new generation.
    pub fn cancel(&self) {
        let mut state = lock(&self.state);
        state.generation.cancel();
        state.generation = self.closed.child_token();
        for waiting in state.inbox.drain(..) {
            let _ = waiting.reply.send(Fate::Cancelled);
        }
    }
}

impl Steering for Queue {
    fn take(&self) -> Vec<Steer> {
        let mut state = lock(&self.state);
        state
            .inbox
            .drain(..)
            .map(|waiting| {
                let _ = waiting.reply.send(Fate::Delivered);
                waiting.steer
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::UserPart;

    fn steer(text: &str) -> Steer {
        Steer { parts: vec![UserPart::Text(text.into())], blocks: serde_json::Value::Null }
    }

    #[test]
    fn tickets_count_the_turns_ahead_and_a_cancel_reaches_every_queued_prompt_but_not_later_ones() {
        let queue = Queue::new(CancellationToken::new());
        let first = queue.join();
        assert_eq!(first.ahead, 0);
        let running = queue.start();
        let second = queue.join();
        let third = queue.join();
        assert_eq!((second.ahead, third.ahead), (1, 2));
        queue.cancel();
        assert!(first.cancel.is_cancelled() && second.cancel.is_cancelled() && third.cancel.is_cancelled());
        let fourth = queue.join();
        assert!(!fourth.cancel.is_cancelled());
        drop(running);
        assert_eq!(queue.join().ahead, 3, "three prompts still wait for their turn to notice the cancel");
    }

    #[tokio::test]
    async fn steering_reaches_only_a_running_turn_and_what_it_leaves_must_run_as_a_prompt() {
        let queue = Queue::new(CancellationToken::new());
        assert_eq!(queue.offer(steer("early")).unwrap_err(), steer("early"));
        let _ticket = queue.join();
        let running = queue.start();
        let taken = queue.offer(steer("one")).unwrap();
        assert_eq!(queue.take(), vec![steer("one")]);
        assert!(matches!(taken.await.unwrap(), Fate::Delivered));
        let missed = queue.offer(steer("two")).unwrap();
        drop(running);
        assert!(matches!(missed.await.unwrap(), Fate::Missed(s) if s == steer("two")));
        let _ticket = queue.join();
        let _running = queue.start();
        let cancelled = queue.offer(steer("three")).unwrap();
        queue.cancel();
        assert!(matches!(cancelled.await.unwrap(), Fate::Cancelled));
        assert!(queue.take().is_empty());
    }
}

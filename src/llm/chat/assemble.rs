//! Tool-call assembly from Chat Completions stream deltas (PROVIDERS.md §1.3): slots keyed by `index`, names
//! assigned (never appended), argument fragments joined once at the end, a new slot when a new id arrives
//! and the previous arguments are already complete JSON (Ollama's `index: 0` reuse), generated ids when
//! the provider sends none.
//!
//! Owns only the reassembly; does not validate or repair the arguments.

use std::collections::HashMap;

use serde_json::Value;

use crate::llm::ToolCall;

#[derive(Debug, Default)]
struct Slot {
    id: Option<String>,
    name: String,
    arguments: Vec<String>,
}

impl Slot {
    fn arguments_closed(&self) -> bool {
        let joined = self.arguments.concat();
        !joined.trim().is_empty() && serde_json::from_str::<Value>(&joined).is_ok()
    }
}

/// Collects `delta.tool_calls[]` entries of one choice.
#[derive(Debug, Default)]
pub struct Assembler {
    slots: Vec<Slot>,
    /// Provider index → the slot currently receiving fragments for it.
    current: HashMap<u64, usize>,
}

fn id_of(delta: &Value) -> Option<String> {
    match delta.get("id") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

impl Assembler {
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Take one entry of `delta.tool_calls`.
    pub fn push(&mut self, delta: &Value) {
        let index = delta.get("index").and_then(Value::as_u64).unwrap_or(0);
        let id = id_of(delta);
        let slot = match self.current.get(&index).copied() {
            Some(i) => {
                let prev = &self.slots[i];
                let new_call = matches!((&id, &prev.id), (Some(new), Some(old)) if new != old)
                    && prev.arguments_closed();
                if new_call { None } else { Some(i) }
            }
            None => None,
        };
        let slot = slot.unwrap_or_else(|| {
            self.slots.push(Slot::default());
            self.current.insert(index, self.slots.len() - 1);
            self.slots.len() - 1
        });
        let slot = &mut self.slots[slot];
        if slot.id.is_none() {
            slot.id = id;
        }
        let function = delta.get("function").unwrap_or(&Value::Null);
        if let Some(name) = function.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            slot.name = name.to_string();
        }
        match function.get("arguments") {
            Some(Value::String(fragment)) => slot.arguments.push(fragment.clone()),
            // Some servers send arguments as an object rather than a JSON string.
            Some(other @ (Value::Object(_) | Value::Array(_))) => slot.arguments.push(other.to_string()),
            _ => {}
        }
    }

    /// The assembled calls in stream order. Empty arguments become `{}`.
    pub fn finish(self) -> Vec<ToolCall> {
        self.slots
            .into_iter()
            .map(|slot| {
                let arguments = slot.arguments.concat();
                ToolCall {
                    id: slot.id.unwrap_or_else(crate::llm::ids::generate),
                    name: slot.name,
                    arguments: if arguments.trim().is_empty() { "{}".into() } else { arguments },
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
    }

    #[test]
    fn fragments_of_parallel_calls_are_joined_by_index() {
        let mut a = Assembler::default();
        a.push(&json!({"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}));
        a.push(&json!({"index":1,"id":"call_b","type":"function","function":{"name":"grep","arguments":"{\"pat"}}));
        a.push(&json!({"index":0,"function":{"arguments":"{\"file_path\":"}}));
        a.push(&json!({"index":1,"function":{"arguments":"tern\":\"x\"}"}}));
        a.push(&json!({"index":0,"function":{"arguments":"\"/a\"}"}}));
        assert_eq!(
            a.finish(),
            vec![
                call("call_a", "read", "{\"file_path\":\"/a\"}"),
                call("call_b", "grep", "{\"pattern\":\"x\"}")
            ]
        );
    }

    #[test]
    fn a_repeated_name_is_assigned_not_appended() {
        let mut a = Assembler::default();
        a.push(&json!({"index":0,"id":"c","function":{"name":"read","arguments":"{}"}}));
        a.push(&json!({"index":0,"function":{"name":"read"}}));
        assert_eq!(a.finish(), vec![call("c", "read", "{}")]);
    }

    #[test]
    fn a_new_id_on_a_reused_index_starts_a_new_call_once_the_previous_is_complete() {
        let mut a = Assembler::default();
        a.push(
            &json!({"index":0,"id":"call_1","function":{"name":"read","arguments":"{\"file_path\":\"/a\"}"}}),
        );
        a.push(
            &json!({"index":0,"id":"call_2","function":{"name":"read","arguments":"{\"file_path\":\"/b\"}"}}),
        );
        assert_eq!(
            a.finish(),
            vec![
                call("call_1", "read", "{\"file_path\":\"/a\"}"),
                call("call_2", "read", "{\"file_path\":\"/b\"}")
            ]
        );
    }

    #[test]
    fn a_fresh_id_on_every_chunk_does_not_split_unfinished_arguments() {
        let mut a = Assembler::default();
        a.push(&json!({"index":0,"id":"x1","function":{"name":"read","arguments":"{\"file_"}}));
        a.push(&json!({"index":0,"id":"x2","function":{"arguments":"path\":\"/a\"}"}}));
        assert_eq!(a.finish(), vec![call("x1", "read", "{\"file_path\":\"/a\"}")]);
    }

    #[test]
    fn missing_index_integer_ids_missing_ids_and_empty_arguments_are_tolerated() {
        let mut a = Assembler::default();
        a.push(&json!({"id":7,"function":{"name":"glob","arguments":""}}));
        let calls = a.finish();
        assert_eq!(calls, vec![call("7", "glob", "{}")]);

        let mut a = Assembler::default();
        a.push(&json!({"index":0,"function":{"name":"glob","arguments":{"pattern":"*"}}}));
        let calls = a.finish();
        assert_eq!(calls[0].arguments, "{\"pattern\":\"*\"}");
        assert_eq!(calls[0].id.len(), 9);
        assert!(calls[0].id.chars().all(|c| c.is_ascii_alphanumeric()));
    }
}

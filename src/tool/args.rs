//! Reading tool arguments with errors the model can act on.
//!
//! Owns argument type checks only. Must not know any tool's parameters.

use serde_json::Value;

use super::ToolError;

/// Read a required string argument.
pub fn arg_str<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ToolError::retry(format!("`{name}` must be a string, got {other}"))),
        None => Err(ToolError::retry(format!("missing required argument `{name}`"))),
    }
}

/// Read an optional string argument (`null` counts as absent).
pub fn arg_opt_str<'a>(args: &'a Value, name: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ToolError::retry(format!("`{name}` must be a string, got {other}"))),
    }
}

/// Read an optional non-negative integer argument; numeric strings are accepted.
pub fn arg_opt_u64(args: &Value, name: &str) -> Result<Option<u64>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0).map(|f| f as u64))
            .map(Some)
            .ok_or_else(|| ToolError::retry(format!("`{name}` must be a non-negative integer, got {n}"))),
        Some(Value::String(s)) => {
            s.trim().parse::<u64>().map(Some).map_err(|_| {
                ToolError::retry(format!("`{name}` must be a non-negative integer, got \"{s}\""))
            })
        }
        Some(other) => Err(ToolError::retry(format!("`{name}` must be a non-negative integer, got {other}"))),
    }
}

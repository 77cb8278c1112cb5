//! The model provider layer: provider-neutral request/response types, the [`ModelClient`] trait (streaming is
//! the primitive), and the OpenAI-compatible Chat Completions implementation with its SSE decoder, tool-call
//! assembly, retry policy and stream limits (idle, deadline, output cap). Malformed arguments are repaired by the
//! tool layer (`tool::repair`), which sees the tool's schema.
//!
//! Owns everything on the wire to the model. Must not know about ACP, sessions or tools beyond their JSON Schema.

pub mod assemble;
pub mod limits;
pub mod openai;
pub mod retry;
pub mod sse;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A piece of user input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserPart {
    Text(String),
    /// Base64 image data.
    Image {
        mime: String,
        data: String,
    },
}

/// One complete tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The raw JSON arguments exactly as the model sent them.
    pub arguments: String,
}

/// Which field the provider used for reasoning text; it is sent back under the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningField {
    /// DeepSeek, llama.cpp, LM Studio, most hosted Chinese models.
    ReasoningContent,
    /// vLLM, Ollama, OpenRouter.
    Reasoning,
}

impl ReasoningField {
    pub fn key(self) -> &'static str {
        match self {
            ReasoningField::ReasoningContent => "reasoning_content",
            ReasoningField::Reasoning => "reasoning",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reasoning {
    pub field: ReasoningField,
    pub text: String,
}

/// One message of the conversation history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    User(Vec<UserPart>),
    Assistant {
        text: String,
        reasoning: Option<Reasoning>,
        tool_calls: Vec<ToolCall>,
    },
    /// The result of the tool call `call_id`.
    Tool {
        call_id: String,
        content: String,
    },
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Everything needed for one model request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub model: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_output_tokens: Option<u32>,
    /// `reasoning_effort` for models that take one.
    pub reasoning_effort: Option<String>,
}

/// Streamed output, relayed to the user as it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    Text(String),
    Reasoning(String),
}

/// Why the model stopped. Unknown provider values are kept, never an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    Other(String),
}

impl FinishReason {
    pub fn parse(value: &str) -> Self {
        match value {
            "stop" | "end_turn" | "eos" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_string()),
        }
    }
}

/// Token accounting reported by the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub reasoning_tokens: u64,
}

/// A complete model response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub text: String,
    pub reasoning: Option<Reasoning>,
    pub tool_calls: Vec<ToolCall>,
    pub finish: FinishReason,
    pub usage: Option<Usage>,
    /// A refusal message, when the provider sent one.
    pub refusal: Option<String>,
}

/// Why a model request failed. Handled by the turn loop, which ends the turn and shows the user
/// [`LlmError::user_message`]; the session stays usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// 401/403: the key is missing, wrong or lacks access. Never retried.
    #[error("the model provider rejected the credentials (HTTP {status}): {message}")]
    Auth { status: u16, message: String },
    /// The conversation no longer fits the model's context window. Never retried.
    #[error("the conversation is too long for the model's context window: {message}")]
    ContextOverflow { message: String },
    /// The account is out of quota or credit. Never retried.
    #[error("the model provider reports the quota or billing limit is exhausted: {message}")]
    Quota { message: String },
    /// Rate limits, server errors or connection failures outlasted the retry budget.
    #[error("the model provider kept failing after {attempts} attempts; last error: {last}")]
    RetriesExhausted { attempts: u32, last: String },
    /// Any other refusal of the request (bad model name, bad parameters).
    #[error("the model provider rejected the request (HTTP {status}): {message}")]
    Rejected { status: u16, message: String },
    /// The stream broke (or stalled) after output had reached the user; not retried so text is not duplicated.
    #[error("the model's response stream was interrupted: {message}")]
    StreamInterrupted { message: String },
    /// The response, retries included, took longer than `response_timeout_ms`. Never retried.
    #[error("the response exceeded the {limit} deadline{}", last.as_ref().map(|l| format!(" (last attempt: {l})")).unwrap_or_default())]
    Deadline { limit: String, last: Option<String> },
    /// The response grew past the output cap (`max_output_tokens`, or the default cap). Never retried.
    #[error("the response exceeded the output cap of {tokens} tokens")]
    OutputCap { tokens: u64 },
    /// The provider sent something that cannot be decoded.
    #[error("the model provider sent an invalid response: {0}")]
    Protocol(String),
    /// The turn was cancelled.
    #[error("cancelled")]
    Cancelled,
}

impl LlmError {
    /// A message for the user that names the cause and what to do.
    pub fn user_message(&self) -> String {
        match self {
            LlmError::Auth { .. } => format!(
                "Model request failed: {self}. Check TINYCODE_API_KEY (or OPENAI_API_KEY) and TINYCODE_BASE_URL."
            ),
            LlmError::ContextOverflow { .. } => {
                format!("Model request failed: {self}. Start a new session or shorten the conversation.")
            }
            LlmError::Deadline { .. } => {
                format!(
                    "Model request failed: {self}. Raise response_timeout_ms in the config if the model needs longer."
                )
            }
            LlmError::OutputCap { .. } => {
                format!(
                    "Model request failed: {self}. Set max_output_tokens in the config to allow longer responses."
                )
            }
            other => format!("Model request failed: {other}."),
        }
    }
}

/// A streaming chat model.
pub trait ModelClient: Send + Sync {
    /// Send `request`, relay deltas through `on_delta` as they arrive, and return the assembled response.
    /// Must return [`LlmError::Cancelled`] promptly once `cancel` fires.
    fn stream<'a>(
        &'a self,
        request: &'a Request,
        on_delta: &'a (dyn Fn(Delta) + Send + Sync),
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>>;
}

//! The model provider layer: provider-neutral request/response types and the [`ModelClient`] trait (streaming is
//! the primitive). `transport` owns HTTP, SSE, errors and retries; one module per wire format (`chat` for
//! Chat Completions, `responses` for OpenAI Responses, `messages` for Anthropic) turns the neutral types into
//! requests and streams back into responses; `router` picks the client by provider; `catalogue` knows models;
//! `detect` finds local servers; `ids` makes tool-call ids every provider accepts; `limits` bounds one
//! streamed response (idle, deadline, output cap). Malformed arguments are repaired by the tool layer
//! (`tool::repair`), which sees the tool's schema.
//!
//! Owns everything on the wire to the model. Must not know about ACP, sessions or tools beyond their JSON Schema.

pub mod catalogue;
pub mod chat;
pub mod detect;
pub mod ids;
pub mod limits;
pub mod messages;
pub mod responses;
pub mod router;
pub mod tool_content;
pub mod transport;

use std::time::Duration;

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

/// Where the provider put its reasoning; Chat Completions reasoning is sent back under the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningField {
    /// DeepSeek, llama.cpp, LM Studio, most hosted Chinese models.
    ReasoningContent,
    /// vLLM, Ollama, OpenRouter.
    Reasoning,
    /// Anthropic `thinking` blocks.
    Thinking,
    /// OpenAI Responses reasoning summaries.
    Summary,
}

impl ReasoningField {
    pub fn key(self) -> &'static str {
        match self {
            ReasoningField::ReasoningContent => "reasoning_content",
            ReasoningField::Reasoning => "reasoning",
            ReasoningField::Thinking => "thinking",
            ReasoningField::Summary => "summary",
        }
    }

    pub fn from_key(key: &str) -> Self {
        match key {
            "reasoning" => ReasoningField::Reasoning,
            "thinking" => ReasoningField::Thinking,
            "summary" => ReasoningField::Summary,
            _ => ReasoningField::ReasoningContent,
        }
    }
}

/// A response's reasoning: the text shown as thoughts, and what the provider needs back verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reasoning {
    pub field: ReasoningField,
    pub text: String,
    /// Sent back unchanged in later requests: Anthropic thinking blocks with their signatures, OpenRouter
    /// `reasoning_details`, Responses reasoning items with their encrypted content. Opaque everywhere else.
    pub replay: Option<Value>,
    /// The `provider/model` that wrote it. Reasoning goes back only to the same (`None`: from before this was
    /// recorded, sent back as text only).
    pub origin: Option<String>,
}

impl Reasoning {
    /// Reasoning text under a Chat Completions field, with nothing to replay.
    pub fn text(field: ReasoningField, text: impl Into<String>) -> Self {
        Self { field, text: text.into(), replay: None, origin: None }
    }

    /// May this reasoning go back in a request to `origin` (`provider/model`)?
    pub fn goes_back_to(&self, origin: &str) -> bool {
        self.origin.as_deref().is_none_or(|from| from == origin)
    }
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
    /// Not output: what the client is doing while the user waits ("Retrying in 4 s (HTTP 503)…").
    Notice(String),
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

/// Token accounting reported by the provider. `input_tokens` includes cached input (it fills the window too).
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

/// The hint for a user with no provider at all.
pub const NO_PROVIDER: &str = "no API key is set: set OPENAI_API_KEY, ANTHROPIC_API_KEY or TINYCODE_API_KEY, or point \
     TINYCODE_BASE_URL at a local server such as Ollama (`tinycode setup` walks you through it)";

/// Why a model request failed. Handled by the turn loop, which ends the turn and shows the user
/// [`LlmError::user_message`] (the ACP layer answers [`LlmError::needs_sign_in`] errors with `auth_required`);
/// the session stays usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// Nothing is configured and no local server was found. Never retried.
    #[error("{NO_PROVIDER}")]
    NoProvider,
    /// The provider needs a key and none is set. Never sent.
    #[error("no API key is set for {provider}: {help}")]
    MissingKey { provider: String, help: String },
    /// 401/403: the key is wrong or lacks access. Never retried.
    #[error("the model provider rejected the credentials (HTTP {status}): {message}{}", if help.is_empty() { String::new() } else { format!("; fix the key: {help}") })]
    Auth { status: u16, message: String, help: String },
    /// The base URL cannot be used at all. Never sent.
    #[error("the base URL `{url}` cannot be used: {reason}")]
    BadUrl { url: String, reason: String },
    /// The server cannot be reached in a way that will not heal by waiting (nothing listening, no such host, TLS).
    #[error("{cause}: {hint}")]
    Unreachable { url: String, cause: String, hint: String },
    /// The server answered, but it is not a model API of this kind (a web page, a wrong path).
    #[error(
        "this is not {dialect}: {request} answered {answer}; check the base URL (it usually ends in /v1)"
    )]
    NotModelApi { dialect: &'static str, request: String, answer: String },
    /// The provider does not know the model.
    #[error("model `{model}` not found{}", if offered.is_empty() { format!(" ({message})") } else { format!("; this provider offers: {}", offered.join(", ")) })]
    ModelNotFound { model: String, message: String, offered: Vec<String> },
    /// The conversation no longer fits the model's context window. Never retried.
    #[error("the conversation is too long for the model's context window: {message}")]
    ContextOverflow { message: String },
    /// The account is out of quota or credit. Never retried.
    #[error("the model provider reports the quota or billing limit is exhausted: {message}")]
    Quota { message: String },
    /// The provider asked for a longer wait than tinycode waits.
    #[error("the provider asks to wait {} before the next request (HTTP {status}: {message}); try again then", transport::format_wait(*wait))]
    RateLimited { status: u16, wait: Duration, message: String },
    /// Rate limits, server errors or connection failures outlasted the retry budget.
    #[error("the model provider kept failing after {attempts} attempts; last error: {last}")]
    RetriesExhausted { attempts: u32, last: String },
    /// Any other refusal of the request (bad parameters).
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
        let text = match self {
            LlmError::ContextOverflow { .. } => {
                format!(
                    "{}. Start a new session or shorten the conversation",
                    self.to_string().trim_end_matches('.')
                )
            }
            LlmError::Deadline { .. } => {
                format!("{self}. Raise response_timeout_ms in the config if the model needs longer")
            }
            LlmError::OutputCap { .. } => {
                format!("{self}. Set max_output_tokens in the config to allow longer responses")
            }
            other => other.to_string(),
        };
        let text = text.trim_end();
        let end = if text.ends_with(['.', '!', '?']) { "" } else { "." };
        format!("Model request failed: {text}{end}")
    }

    /// The same error with every text passed through `redact` (a provider may repeat the key in its answer).
    pub fn redacted(self, redact: &dyn Fn(&str) -> String) -> LlmError {
        let r = |text: String| redact(&text);
        match self {
            LlmError::NoProvider => LlmError::NoProvider,
            LlmError::MissingKey { provider, help } => {
                LlmError::MissingKey { provider: r(provider), help: r(help) }
            }
            LlmError::Auth { status, message, help } => {
                LlmError::Auth { status, message: r(message), help: r(help) }
            }
            LlmError::BadUrl { url, reason } => LlmError::BadUrl { url: r(url), reason: r(reason) },
            LlmError::Unreachable { url, cause, hint } => {
                LlmError::Unreachable { url: r(url), cause: r(cause), hint: r(hint) }
            }
            LlmError::NotModelApi { dialect, request, answer } => {
                LlmError::NotModelApi { dialect, request: r(request), answer: r(answer) }
            }
            LlmError::ModelNotFound { model, message, offered } => LlmError::ModelNotFound {
                model: r(model),
                message: r(message),
                offered: offered.into_iter().map(r).collect(),
            },
            LlmError::ContextOverflow { message } => LlmError::ContextOverflow { message: r(message) },
            LlmError::Quota { message } => LlmError::Quota { message: r(message) },
            LlmError::RateLimited { status, wait, message } => {
                LlmError::RateLimited { status, wait, message: r(message) }
            }
            LlmError::RetriesExhausted { attempts, last } => {
                LlmError::RetriesExhausted { attempts, last: r(last) }
            }
            LlmError::Rejected { status, message } => LlmError::Rejected { status, message: r(message) },
            LlmError::StreamInterrupted { message } => LlmError::StreamInterrupted { message: r(message) },
            LlmError::Deadline { limit, last } => LlmError::Deadline { limit, last: last.map(r) },
            LlmError::OutputCap { tokens } => LlmError::OutputCap { tokens },
            LlmError::Protocol(message) => LlmError::Protocol(r(message)),
            LlmError::Cancelled => LlmError::Cancelled,
        }
    }

    /// The user must sign in (set or fix a key): editors show their sign-in flow for these.
    pub fn needs_sign_in(&self) -> bool {
        matches!(self, LlmError::NoProvider | LlmError::MissingKey { .. } | LlmError::Auth { .. })
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

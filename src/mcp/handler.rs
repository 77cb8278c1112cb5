//! tinycode's side of an MCP connection (rmcp's `ClientHandler`): what it declares (form elicitation only when the
//! editor can ask, never sampling or roots), what it does with the server's requests (elicitation goes to the
//! editor's form, sampling is refused with a clear error) and notifications (list changes mark the lists for a
//! refresh before the next model request; progress goes to the running call's card).
//!
//! Owns the handler. Calls and lists belong to `server`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorCode, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProgressToken, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};

use super::{Elicited, Elicitor};

/// The session's way to the editor's form, shared by its servers and replaced when another connection takes the
/// session over.
pub type ElicitorSlot = Arc<RwLock<Option<Arc<dyn Elicitor>>>>;

/// Where a running call's progress messages go.
pub type ProgressSink = Arc<dyn Fn(String) + Send + Sync>;

/// State one connection's handler shares with its server.
pub struct Shared {
    pub server: String,
    pub elicitor: ElicitorSlot,
    pub tools_changed: AtomicBool,
    pub prompts_changed: AtomicBool,
    pub resources_changed: AtomicBool,
    /// Running calls by progress token.
    pub progress: Mutex<HashMap<String, ProgressSink>>,
    /// Tells the session something changed.
    pub on_change: Arc<dyn Fn() + Send + Sync>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The key a progress token is filed under.
pub fn token_key(token: &ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

impl Shared {
    pub fn elicitor(&self) -> Option<Arc<dyn Elicitor>> {
        match self.elicitor.read() {
            Ok(slot) => slot.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn watch_progress(&self, token: &ProgressToken, sink: ProgressSink) {
        lock(&self.progress).insert(token_key(token), sink);
    }

    pub fn unwatch_progress(&self, token: &ProgressToken) {
        lock(&self.progress).remove(&token_key(token));
    }
}

/// The handler of one connection.
#[derive(Clone)]
pub struct Handler {
    pub shared: Arc<Shared>,
}

/// What a server is told about tinycode.
pub fn client_config(elicitation: bool) -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    if elicitation {
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
    }
    ClientConfig::new(capabilities, Implementation::new("tinycode", env!("CARGO_PKG_VERSION")))
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        client_config(self.shared.elicitor().is_some())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (Some(elicitor), ElicitRequestParams::FormElicitationParams { message, requested_schema, .. }) =
            (self.shared.elicitor(), request)
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        Ok(match elicitor.elicit(&self.shared.server, &message, &schema).await {
            Elicited::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(serde_json::Value::Object(content))
            }
            Elicited::Decline => ElicitResult::new(ElicitationAction::Decline),
            Elicited::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        _params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "tinycode does not offer sampling: it never lets an MCP server use its model (sampling/createMessage is declined)",
            None,
        ))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.tools_changed.store(true, Ordering::SeqCst);
        (self.shared.on_change)();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.prompts_changed.store(true, Ordering::SeqCst);
        (self.shared.on_change)();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.resources_changed.store(true, Ordering::SeqCst);
        (self.shared.on_change)();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let sink = lock(&self.shared.progress).get(&token_key(&params.progress_token)).cloned();
        let Some(sink) = sink else { return };
        let amount = match params.total {
            Some(total) if total > 0.0 => format!("{:.0}%", params.progress / total * 100.0),
            _ => format!("{}", params.progress),
        };
        sink(match params.message {
            Some(message) => format!("{message} ({amount})"),
            None => format!("Progress: {amount}"),
        });
    }
}

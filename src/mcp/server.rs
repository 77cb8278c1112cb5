//! One MCP server of a session: starting it (spawn or connect, handshake, first lists), its phase (a model request
//! waits for a starting server only until its start-up timeout has passed; a late server keeps starting, up to
//! [`late_limit`], and joins when ready), its lists (re-read when the server says they changed), calls with a timeout and
//! cancellation (the server is sent `notifications/cancelled`), noticing that it stopped (reported once, its tools
//! withdrawn), and closing it within the bounds of `process`.
//!
//! Owns one connection. Naming and the session's set belong to `servers`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientRequest,
    GetPromptRequestParams, GetPromptResult, Prompt, ReadResourceRequestParams, ReadResourceResult, Resource,
    ServerResult, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, RunningService, ServiceError, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::handler::{Handler, ProgressSink, Shared};
use super::lines::{LineGuard, MAX_LINE_BYTES, OVERSIZED};
use super::process::{Launch, Process};
use super::spec::{Spec, Transport};
use super::{Phase, Report};
use crate::tool::ToolError;

/// Time a list refresh may take before the old list is kept.
const REFRESH_TIMEOUT: Duration = Duration::from_secs(10);
/// Time allowed for a server whose handshake failed to be seen exiting.
const EXIT_NOTICE: Duration = Duration::from_millis(500);
/// Time an HTTP server gets to hear that the session ends.
const HTTP_CLOSE: Duration = Duration::from_secs(1);
/// The least time a late server gets to finish starting before it counts as failed.
const LATE_FLOOR: Duration = Duration::from_secs(60);

/// How long a server with start-up timeout `timeout` may keep starting in the background before it counts as
/// failed: ten times its timeout, at least [`LATE_FLOOR`].
pub fn late_limit(timeout: Duration) -> Duration {
    timeout.saturating_mul(10).max(LATE_FLOOR)
}

/// A server's lists as last read.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub tools: Vec<Tool>,
    pub prompts: Vec<Prompt>,
    pub resources: Vec<Resource>,
}

/// A connected server.
struct Live {
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    process: Option<Process>,
    catalog: Mutex<Catalog>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// One server.
pub struct Server {
    pub spec: Spec,
    launch: Launch,
    phase: watch::Sender<Phase>,
    /// Until when a model request waits for the server while it starts (its start-up timeout from its creation).
    wait_until: tokio::time::Instant,
    live: Mutex<Option<Arc<Live>>>,
    pub(super) shared: Arc<Shared>,
    closing: AtomicBool,
    report: Arc<dyn Fn(Report) + Send + Sync>,
}

/// The process-wide HTTP client for MCP servers: ring-backed TLS like the provider's, no idle pooling (the
/// SDK's advice), and no redirects (a redirect would replay the session id and custom headers elsewhere).
fn http_client() -> Result<reqwest::Client, String> {
    static CLIENT: std::sync::OnceLock<Result<reqwest::Client, String>> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            crate::tls::client_builder()
                .user_agent(concat!("tinycode/", env!("CARGO_PKG_VERSION")))
                .pool_max_idle_per_host(0)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| e.to_string())
        })
        .clone()
}

fn with_stderr(reason: String, process: Option<&Process>) -> String {
    match process.map(Process::stderr_tail).filter(|t| !t.trim().is_empty()) {
        Some(tail) => format!("{reason}. Its last output:\n{tail}"),
        None => reason,
    }
}

impl Server {
    pub fn new(
        spec: Spec,
        launch: Launch,
        shared: Arc<Shared>,
        report: Arc<dyn Fn(Report) + Send + Sync>,
    ) -> Arc<Server> {
        let phase = if spec.enabled { Phase::Starting } else { Phase::Disabled };
        let wait_until = tokio::time::Instant::now() + spec.startup_timeout;
        Arc::new(Server {
            spec,
            launch,
            phase: watch::Sender::new(phase),
            wait_until,
            live: Mutex::new(None),
            shared,
            closing: AtomicBool::new(false),
            report,
        })
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn phase(&self) -> Phase {
        self.phase.borrow().clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }

    /// Until when a model request waits for this server while it is still starting.
    pub fn wait_until(&self) -> tokio::time::Instant {
        self.wait_until
    }

    fn live(&self) -> Option<Arc<Live>> {
        lock(&self.live).clone()
    }

    /// The lists as last read (empty unless ready).
    pub fn catalog(&self) -> Catalog {
        self.live().map(|live| lock(&live.catalog).clone()).unwrap_or_default()
    }

    /// Start the server; returns when it is ready, failed or the session closed. Past its start-up timeout it
    /// keeps starting (model requests stop waiting for it), until [`late_limit`].
    pub async fn start(self: Arc<Self>, closed: CancellationToken) {
        if !self.spec.enabled {
            return;
        }
        let transport = match self.spec.transport.clone() {
            Ok(transport) => transport,
            Err(reason) => return self.fail(format!("it cannot be used: {reason}")),
        };
        let limit = late_limit(self.spec.startup_timeout);
        let connected = tokio::select! {
            connected = tokio::time::timeout(limit, self.connect(transport)) => connected,
            () = closed.cancelled() => return,
        };
        match connected {
            Ok(Ok(live)) => {
                let live = Arc::new(live);
                *lock(&self.live) = Some(live.clone());
                if self.closing.load(Ordering::SeqCst) {
                    return;
                }
                self.phase.send_replace(Phase::Ready);
                (self.shared.on_change)();
                if live.process.is_some() {
                    tokio::spawn(self.clone().watch_exit(live));
                }
            }
            Ok(Err(reason)) => self.fail(reason),
            Err(_) => self.fail(format!("it did not start within {} s", limit.as_secs_f64())),
        }
    }

    async fn connect(&self, transport: Transport) -> Result<Live, String> {
        let handler = Handler { shared: self.shared.clone() };
        let (service, process) = match transport {
            Transport::Stdio { command, args, env } => {
                let (process, stdout, stdin) =
                    Process::spawn(self.name(), &command, &args, &env, &self.launch)
                        .map_err(|e| format!("`{command}` could not be started: {e}"))?;
                let transport = AsyncRwTransport::new(LineGuard::new(stdout), stdin)
                    .with_max_line_length(MAX_LINE_BYTES + 2);
                match handler.serve(transport).await {
                    Ok(service) => (service, Some(process)),
                    Err(e) => {
                        // A server that died says more by how it exited than by the broken pipe.
                        let exited = tokio::time::timeout(EXIT_NOTICE, process.wait()).await.ok();
                        let reason = match exited {
                            Some(how) => format!("it {how} before completing the MCP handshake"),
                            None => format!("its MCP handshake failed: {e}"),
                        };
                        return Err(with_stderr(reason, Some(&process)));
                    }
                }
            }
            Transport::Http { url, headers } => {
                crate::tls::prepare_for(url.as_str());
                let mut custom = std::collections::HashMap::new();
                for (name, value) in headers {
                    let name =
                        reqwest::header::HeaderName::try_from(name.as_str()).map_err(|e| e.to_string())?;
                    let value =
                        reqwest::header::HeaderValue::try_from(value.as_str()).map_err(|e| e.to_string())?;
                    custom.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom)
                    .reinit_on_expired_session(true);
                let transport = StreamableHttpClientTransport::with_client(http_client()?, config);
                let service =
                    handler.serve(transport).await.map_err(|e| format!("could not connect to {url}: {e}"))?;
                (service, None)
            }
        };
        let peer = service.peer().clone();
        let catalog = read_catalog(&peer).await.map_err(|e| with_stderr(e, process.as_ref()))?;
        Ok(Live {
            peer,
            service: tokio::sync::Mutex::new(Some(service)),
            process,
            catalog: Mutex::new(catalog),
        })
    }

    /// Mark the server failed and say so, once.
    fn fail(&self, reason: String) {
        if self.closing.load(Ordering::SeqCst) {
            return;
        }
        let first = !matches!(self.phase(), Phase::Failed(_));
        self.phase.send_replace(Phase::Failed(reason.clone()));
        if first {
            tracing::warn!(server = %self.name(), %reason, "MCP server unavailable");
            (self.report)(Report::Failed { server: self.name().to_string(), reason });
            (self.shared.on_change)();
        }
    }

    /// A stdio server's exit while in use is a crash.
    async fn watch_exit(self: Arc<Self>, live: Arc<Live>) {
        let Some(process) = &live.process else { return };
        let how = process.wait().await;
        if self.closing.load(Ordering::SeqCst) {
            return;
        }
        self.stopped(&live, format!("it stopped: it {how}"));
    }

    /// The connection is gone: withdraw the server and report it.
    fn stopped(&self, live: &Arc<Live>, reason: String) {
        let mut slot = lock(&self.live);
        if slot.as_ref().is_some_and(|current| Arc::ptr_eq(current, live)) {
            *slot = None;
        }
        drop(slot);
        self.fail(with_stderr(reason, live.process.as_ref()));
        let live = live.clone();
        tokio::spawn(async move { close_live(&live).await });
    }

    /// Re-read the lists the server said changed. A failed refresh keeps the old lists.
    pub async fn refresh(&self) {
        let Some(live) = self.live() else { return };
        let tools = self.shared.tools_changed.swap(false, Ordering::SeqCst);
        let prompts = self.shared.prompts_changed.swap(false, Ordering::SeqCst);
        let resources = self.shared.resources_changed.swap(false, Ordering::SeqCst);
        if !(tools || prompts || resources) {
            return;
        }
        let read = tokio::time::timeout(REFRESH_TIMEOUT, read_catalog(&live.peer)).await;
        match read {
            Ok(Ok(catalog)) => *lock(&live.catalog) = catalog,
            Ok(Err(e)) => {
                tracing::warn!(server = %self.name(), error = %e, "could not refresh the MCP server's lists")
            }
            Err(_) => tracing::warn!(server = %self.name(), "refreshing the MCP server's lists timed out"),
        }
    }

    fn unavailable(&self) -> ToolError {
        match self.phase() {
            Phase::Failed(reason) => {
                ToolError::execution(format!("the MCP server `{}` is not available: {reason}", self.name()))
            }
            _ => ToolError::execution(format!("the MCP server `{}` is not running", self.name())),
        }
    }

    /// A failed request: a closed connection withdraws the server (a stdio server's exit, when it comes within
    /// [`EXIT_NOTICE`], says why).
    async fn request_failed(&self, live: &Arc<Live>, error: ServiceError) -> ToolError {
        match error {
            ServiceError::McpError(e) if e.code.0 == OVERSIZED => ToolError::execution(format!(
                "the MCP server `{}` answered with a message longer than the {} MB line limit; it was discarded",
                self.name(),
                MAX_LINE_BYTES >> 20
            )),
            ServiceError::McpError(e) => ToolError::execution(format!(
                "the MCP server `{}` answered with an error: {}",
                self.name(),
                e.message
            )),
            ServiceError::Timeout { timeout } => ToolError::execution(format!(
                "the MCP server `{}` did not answer within {} s; the request was cancelled",
                self.name(),
                timeout.as_secs_f64()
            )),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let how = match &live.process {
                    Some(process) => tokio::time::timeout(EXIT_NOTICE, process.wait()).await.ok(),
                    None => None,
                };
                let reason = match how {
                    Some(how) => format!("it stopped: it {how}"),
                    None => "its connection closed".to_string(),
                };
                self.stopped(live, reason.clone());
                ToolError::execution(format!("the MCP server `{}` is not available: {reason}", self.name()))
            }
            other => ToolError::execution(format!("the MCP server `{}` failed: {other}", self.name())),
        }
    }

    /// Send one request with the call timeout; cancelling sends `notifications/cancelled`.
    async fn request(
        &self,
        request: ClientRequest,
        cancel: &CancellationToken,
        progress: Option<ProgressSink>,
    ) -> Result<ServerResult, ToolError> {
        let live = self.live().ok_or_else(|| self.unavailable())?;
        let options = PeerRequestOptions::with_timeout(self.spec.call_timeout);
        let handle = match live.peer.send_request_with_option(request, options).await {
            Ok(handle) => handle,
            Err(e) => return Err(self.request_failed(&live, e).await),
        };
        let token = handle.progress_token.clone();
        if let Some(sink) = progress {
            self.shared.watch_progress(&token, sink);
        }
        let (id, peer) = (handle.id.clone(), handle.peer.clone());
        let result = tokio::select! {
            biased;
            result = handle.await_response() => Some(result),
            () = cancel.cancelled() => None,
        };
        self.shared.unwatch_progress(&token);
        match result {
            Some(Ok(result)) => Ok(result),
            Some(Err(e)) => Err(self.request_failed(&live, e).await),
            None => {
                let notice = CancelledNotificationParam::new(Some(id), Some("cancelled by the user".into()));
                if let Err(e) = peer.notify_cancelled(notice).await {
                    tracing::debug!(server = %self.name(), error = %e, "could not send notifications/cancelled");
                }
                Err(ToolError::Cancelled)
            }
        }
    }

    /// Call tool `tool` (its raw name) with `arguments`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        progress: Option<ProgressSink>,
    ) -> Result<CallToolResult, ToolError> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        match self
            .request(ClientRequest::CallToolRequest(CallToolRequest::new(params)), cancel, progress)
            .await?
        {
            ServerResult::CallToolResult(result) => Ok(result),
            _ => Err(ToolError::execution(format!(
                "the MCP server `{}` answered the call with something other than a tool result",
                self.name()
            ))),
        }
    }

    /// Read resource `uri`.
    pub async fn read_resource(
        &self,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<ReadResourceResult, ToolError> {
        let request = ClientRequest::ReadResourceRequest(rmcp::model::ReadResourceRequest::new(
            ReadResourceRequestParams::new(uri),
        ));
        match self.request(request, cancel, None).await? {
            ServerResult::ReadResourceResult(result) => Ok(result),
            _ => Err(ToolError::execution(format!(
                "the MCP server `{}` answered with something other than a resource",
                self.name()
            ))),
        }
    }

    /// Get prompt `name` with `arguments`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<GetPromptResult, ToolError> {
        let params = GetPromptRequestParams::new(name).with_arguments(arguments);
        let request = ClientRequest::GetPromptRequest(rmcp::model::GetPromptRequest::new(params));
        match self.request(request, cancel, None).await? {
            ServerResult::GetPromptResult(result) => Ok(result),
            _ => Err(ToolError::execution(format!(
                "the MCP server `{}` answered with something other than a prompt",
                self.name()
            ))),
        }
    }

    /// Close the server within the bounds of `process::Process::finish`.
    pub async fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
        self.phase.send_replace(Phase::Closed);
        let live = lock(&self.live).take();
        if let Some(live) = live {
            close_live(&live).await;
        }
    }
}

/// End a connection: the service stops (for stdio its stdin closes; for HTTP the session is deleted), then a
/// stdio server is finished off.
async fn close_live(live: &Live) {
    let service = live.service.lock().await.take();
    if let Some(service) = service {
        match &live.process {
            // The service's end drops the transport, closing the server's stdin; do not wait for it.
            Some(_) => {
                service.cancellation_token().cancel();
                drop(service);
            }
            None => {
                let mut service = service;
                let _ = service.close_with_timeout(HTTP_CLOSE).await;
            }
        }
    }
    if let Some(process) = &live.process {
        let how = process.finish().await;
        tracing::debug!(pid = process.pid, how, "MCP server closed");
    }
}

/// The server's tools, prompts and resources (lists it does not offer are empty; a failing optional list too).
async fn read_catalog(peer: &Peer<RoleClient>) -> Result<Catalog, String> {
    let capabilities = peer.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default();
    let tools = match capabilities.tools {
        Some(_) => peer.list_all_tools().await.map_err(|e| format!("listing its tools failed: {e}"))?,
        None => Vec::new(),
    };
    let prompts = match capabilities.prompts {
        Some(_) => peer.list_all_prompts().await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "listing an MCP server's prompts failed");
            Vec::new()
        }),
        None => Vec::new(),
    };
    let resources = match capabilities.resources {
        Some(_) => peer.list_all_resources().await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "listing an MCP server's resources failed");
            Vec::new()
        }),
        None => Vec::new(),
    };
    Ok(Catalog { tools, prompts, resources })
}

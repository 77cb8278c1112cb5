//! A session's MCP servers: started in the background once the editor has the session's answer (or when the user
//! trusts a project that defines some), changed when another connection declares other servers, waited for before
//! a model request only until their start-up timeout has passed (a late server joins at a later request), and
//! synchronised into the session's tool registry between model requests, never during one. Also what `/mcp` lists,
//! the prompts offered as slash commands, and closing them all at once within the bounds of `process`.
//!
//! Owns the set and the names. One server's connection belongs to `server`.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};

use rmcp::model::{ContentBlock, GetPromptResult};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::handler::{ElicitorSlot, Shared};
use super::naming::{self, Names};
use super::process::Launch;
use super::server::Server;
use super::spec::Spec;
use super::{Elicitor, Phase, PromptCommand, Report, Status, adapter};
use crate::shell::environment::Environment;
use crate::shell::launch::Launcher;
use crate::tool::Registry;

/// How long after the session's answer was handed to the transport its servers are launched: the answer's write
/// must not compete with three process spawns and their start-up for a small machine's cores. Model requests
/// wait for starting servers anyway (their start-up timeout counts from the session's start).
pub const AFTER_ANSWER: std::time::Duration = std::time::Duration::from_millis(10);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The servers of one session.
pub struct Servers {
    cwd: PathBuf,
    /// What starts stdio servers (the session's launcher; until it is set, one of the agent's own environment).
    launcher: RwLock<Option<Arc<Launcher>>>,
    servers: Mutex<Vec<Arc<Server>>>,
    names: Mutex<Names>,
    elicitor: ElicitorSlot,
    report: Arc<dyn Fn(Report) + Send + Sync>,
    closed: CancellationToken,
    /// The tool ids this set put into the registry.
    registered: Mutex<Vec<String>>,
    /// While held, servers wait here instead of starting (a session holds them until the editor has its answer).
    held: Mutex<Option<Vec<Arc<Server>>>>,
}

impl Servers {
    /// An empty set for a session rooted at `cwd`; `report` hears about failures and changes.
    pub fn new(cwd: PathBuf, report: Arc<dyn Fn(Report) + Send + Sync>) -> Arc<Servers> {
        Arc::new(Servers {
            cwd,
            launcher: RwLock::new(None),
            servers: Mutex::new(Vec::new()),
            names: Mutex::new(Names::default()),
            elicitor: Arc::new(RwLock::new(None)),
            report,
            closed: CancellationToken::new(),
            registered: Mutex::new(Vec::new()),
            held: Mutex::new(None),
        })
    }

    /// Start no server until [`Servers::release`]: the answer to `session/new` must not share the machine with
    /// three process spawns.
    pub fn hold(&self) {
        let mut held = lock(&self.held);
        if held.is_none() {
            *held = Some(Vec::new());
        }
    }

    /// Start the servers held back (after [`AFTER_ANSWER`]), and any later ones at once.
    pub fn release(&self) {
        let held = lock(&self.held).take().unwrap_or_default();
        if held.is_empty() {
            return;
        }
        let closed = self.closed.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(AFTER_ANSWER) => {}
                () = closed.cancelled() => return,
            }
            for server in held {
                tokio::spawn(server.start(closed.child_token()));
            }
        });
    }

    fn launch(&self, server: Arc<Server>) {
        match lock(&self.held).as_mut() {
            Some(held) => held.push(server),
            None => {
                tokio::spawn(server.start(self.closed.child_token()));
            }
        }
    }

    /// What starts the servers from now on (each gets the launcher's environment with its own `env` on top).
    pub fn set_launcher(&self, launcher: Arc<Launcher>) {
        match self.launcher.write() {
            Ok(mut slot) => *slot = Some(launcher),
            Err(poisoned) => *poisoned.into_inner() = Some(launcher),
        }
    }

    fn launch_in(&self) -> Launch {
        let set = match self.launcher.read() {
            Ok(slot) => slot.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        let launcher = set.unwrap_or_else(|| {
            Arc::new(Launcher::new(std::slice::from_ref(&self.cwd), Arc::new(Environment::default())))
        });
        Launch { cwd: self.cwd.clone(), launcher }
    }

    /// Where servers' questions go from now on (servers started later declare elicitation by it).
    pub fn set_elicitor(&self, elicitor: Option<Arc<dyn Elicitor>>) {
        match self.elicitor.write() {
            Ok(mut slot) => *slot = elicitor,
            Err(poisoned) => *poisoned.into_inner() = elicitor,
        }
    }

    fn all(&self) -> Vec<Arc<Server>> {
        lock(&self.servers).clone()
    }

    /// Run exactly `specs`: servers whose definition is unchanged keep running, the others are closed and the
    /// new ones started, all in the background.
    pub fn apply(&self, specs: Vec<Spec>) {
        let mut servers = lock(&self.servers);
        let (kept, dropped): (Vec<Arc<Server>>, Vec<Arc<Server>>) =
            servers.drain(..).partition(|s| specs.contains(&s.spec));
        for server in dropped {
            tokio::spawn(async move { server.close().await });
        }
        for spec in specs {
            if let Some(server) = kept.iter().find(|s| s.spec == spec) {
                servers.push(server.clone());
                continue;
            }
            let report = self.report.clone();
            let changed = report.clone();
            let shared = Arc::new(Shared {
                server: spec.name.clone(),
                elicitor: self.elicitor.clone(),
                tools_changed: AtomicBool::new(false),
                prompts_changed: AtomicBool::new(false),
                resources_changed: AtomicBool::new(false),
                progress: Mutex::new(Default::default()),
                on_change: Arc::new(move || changed(Report::Changed)),
            });
            let server = Server::new(spec, self.launch_in(), shared, report);
            servers.push(server.clone());
            self.launch(server);
        }
        drop(servers);
        (self.report)(Report::Changed);
    }

    /// Wait until no server is still starting, each at most until its start-up timeout has passed since it was
    /// launched (a late server keeps starting and joins at a later request), or `cancel` fires.
    pub async fn settled(&self, cancel: &CancellationToken) {
        for server in self.all() {
            let mut phase = server.subscribe();
            let deadline = server.wait_until();
            loop {
                if *phase.borrow_and_update() != Phase::Starting {
                    break;
                }
                tokio::select! {
                    changed = phase.changed() => if changed.is_err() { break },
                    () = tokio::time::sleep_until(deadline) => break,
                    () = cancel.cancelled() => return,
                    () = self.closed.cancelled() => return,
                }
            }
        }
    }

    /// Bring `registry` up to date: re-read changed lists, offer the ready servers' tools (and `mcp_resource` when
    /// one has resources), withdraw the rest.
    pub async fn sync(&self, registry: &Registry) {
        let servers = self.all();
        for server in &servers {
            server.refresh().await;
        }
        let mut wanted = Vec::new();
        let mut resources = false;
        {
            let mut names = lock(&self.names);
            for server in &servers {
                let catalog =
                    if server.phase() == Phase::Ready { server.catalog() } else { Default::default() };
                let raw: Vec<String> = catalog.tools.iter().map(|t| t.name.to_string()).collect();
                names.retain(server.name(), &raw);
                resources |= !catalog.resources.is_empty();
                for tool in &catalog.tools {
                    let id = names.assign(server.name(), &tool.name);
                    wanted.push(adapter::tool_def(server.clone(), id, tool));
                }
            }
        }
        if resources {
            wanted.push(adapter::resource_def(servers.clone()));
        }
        let ids: Vec<String> = wanted.iter().map(|d| d.id.clone()).collect();
        let mut registered = lock(&self.registered);
        for old in registered.iter().filter(|id| !ids.contains(id)) {
            registry.unregister(old);
        }
        for def in wanted {
            registry.register(def);
        }
        *registered = ids;
    }

    /// Every server as `/mcp` lists it.
    pub fn statuses(&self) -> Vec<Status> {
        self.all()
            .iter()
            .map(|server| {
                let catalog = server.catalog();
                Status {
                    name: server.name().to_string(),
                    source: server.spec.source,
                    phase: server.phase(),
                    tools: catalog.tools.len(),
                    prompts: catalog.prompts.len(),
                    resources: catalog.resources.len(),
                }
            })
            .collect()
    }

    /// The ready servers' prompts, as slash commands.
    pub fn prompt_commands(&self) -> Vec<PromptCommand> {
        let mut commands: Vec<PromptCommand> = Vec::new();
        for server in self.all().iter().filter(|s| s.phase() == Phase::Ready) {
            for prompt in server.catalog().prompts {
                let name = naming::plain(server.name(), &prompt.name);
                if commands.iter().any(|c| c.name == name) {
                    continue;
                }
                let arguments = prompt
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| (a.name, a.required.unwrap_or(false)))
                    .collect();
                let description = prompt.description.or(prompt.title).unwrap_or_else(|| {
                    format!("Prompt `{}` of the MCP server `{}`", prompt.name, server.name())
                });
                commands.push(PromptCommand {
                    name,
                    server: server.name().to_string(),
                    prompt: prompt.name,
                    description,
                    arguments,
                });
            }
        }
        commands
    }

    /// The text of prompt command `command` with `args` (split shell-style; the last argument takes the rest).
    pub async fn prompt_text(
        &self,
        command: &PromptCommand,
        args: &str,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let server = self
            .all()
            .into_iter()
            .find(|s| s.name() == command.server)
            .ok_or_else(|| format!("the MCP server `{}` is gone", command.server))?;
        let words = crate::extensions::arguments::split(args);
        let mut arguments = Map::new();
        for (n, (name, required)) in command.arguments.iter().enumerate() {
            let value = if n + 1 == command.arguments.len() {
                words.get(n..).map(|rest| rest.join(" ")).filter(|v| !v.is_empty())
            } else {
                words.get(n).cloned()
            };
            match value {
                Some(value) => {
                    arguments.insert(name.clone(), Value::String(value));
                }
                None if *required => {
                    let all: Vec<String> = command.arguments.iter().map(|(a, _)| format!("<{a}>")).collect();
                    return Err(format!(
                        "`/{}` needs its argument `{name}`: /{} {}",
                        command.name,
                        command.name,
                        all.join(" ")
                    ));
                }
                None => {}
            }
        }
        let result =
            server.get_prompt(&command.prompt, arguments, cancel).await.map_err(|e| e.to_string())?;
        Ok(prompt_messages(&result))
    }

    /// Close every server (concurrently, each within the bounds of `process`) and refuse new ones.
    pub async fn close(&self) {
        self.closed.cancel();
        let servers: Vec<Arc<Server>> = lock(&self.servers).drain(..).collect();
        futures::future::join_all(servers.iter().map(|s| s.close())).await;
    }
}

/// A prompt's messages as one user message.
fn prompt_messages(result: &GetPromptResult) -> String {
    let parts: Vec<String> = result
        .messages
        .iter()
        .map(|message| match &message.content {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Resource(resource) => super::content::resource_text(&resource.resource),
            ContentBlock::ResourceLink(link) => format!("[resource {}]", link.uri),
            ContentBlock::Image(image) => format!("[image {}]", image.mime_type),
            _ => String::new(),
        })
        .filter(|p| !p.is_empty())
        .collect();
    parts.join("\n\n")
}

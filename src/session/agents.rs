//! Subagent definitions: the built-in `general`, `explore` and `plan`, custom agents from Markdown files
//! with a front matter (`name`, `description`, `tools`, `model`, `mode`; the body is the agent's prompt) in the
//! user's `~/.config/tinycode/agents/*.md` and the project's `.tinycode/agents/*.md`, and `[agents.NAME]` tables
//! of the config files (`config::agents`: the user's, and a project's only once it is trusted). And what a child
//! may do: its tools and mode are always *narrowed* from its parent's, never widened.
//!
//! The agent files are listed once per session, off the async runtime ([`discover`] is blocking: call it from
//! `spawn_blocking`); the config's agents are joined to them whenever the list is needed ([`all`]), so trusting a
//! project mid-session offers its agents from the next `task` call on.
//!
//! A project's agent files arrive with the repository, so they are treated like the project's other settings
//! that need trust (`config::trust`): they may narrow what a subagent does (fewer tools, a stricter mode), but
//! they never name the model (that picks who receives the code, and is gated for a project's config too), nor
//! shadow a built-in or a user's agent. No agent file can set a base URL, key or provider: a subagent always
//! talks to its parent's provider with its parent's key.
//!
//! Owns agent discovery and the narrowing rules. Reads agent files only through `workspace::project_file` (the
//! project's may not lead out of the project, the user's not out of their tinycode folder); must not run
//! anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::settings::Mode;
use crate::config::agents::AgentConfig;
use crate::tool::subagent::MAX_SUBAGENT_DEPTH;
use crate::workspace::project_file::{self, Scope};

const SUBAGENT: &str = include_str!("prompts/subagent.md");
const GENERAL: &str = include_str!("prompts/general.md");
const EXPLORE: &str = include_str!("prompts/explore.md");
const PLAN: &str = include_str!("prompts/plan.md");

/// Larger agent files are ignored whole.
const MAX_AGENT_FILE_BYTES: u64 = 64 * 1024;
/// At most this many agent files are read per directory.
const MAX_AGENT_FILES: usize = 64;
/// Tools no subagent gets: it cannot ask the user, keep the parent's to-do list, switch modes, move the session
/// into or out of a worktree, or schedule jobs (those belong to the user's session).
const NEVER_FOR_CHILDREN: [&str; 9] = [
    "question",
    "todowrite",
    "plan_enter",
    "plan_exit",
    "enter_worktree",
    "exit_worktree",
    "cron_create",
    "cron_list",
    "cron_delete",
];
/// Tools of the read-only `explore` agent.
const EXPLORE_TOOLS: [&str; 7] = ["read", "glob", "grep", "list_dir", "discover", "webfetch", "websearch"];
/// Tools of the `plan` agent (its mode lets `bash` run read-only commands only).
const PLAN_TOOLS: [&str; 8] =
    ["read", "glob", "grep", "list_dir", "discover", "webfetch", "websearch", "bash"];
/// Front matter keys that would send requests elsewhere; never honoured in an agent file.
const REDIRECTING_KEYS: [&str; 3] = ["base_url", "api_key", "provider"];

/// Where an agent was defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    BuiltIn,
    User,
    /// A `[agents.NAME]` table of the user's config or of a trusted project's.
    Config,
    Project,
}

/// One agent a `task` call may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDef {
    pub name: String,
    pub description: String,
    /// The tools it may use (always intersected with its parent's); `None` means all of the parent's.
    pub tools: Option<Vec<String>>,
    /// A model of the parent's provider; only a user's agent may set it.
    pub model: Option<String>,
    /// The mode it runs in at most (never looser than its parent's).
    pub mode: Option<Mode>,
    /// Its instructions, added to the system prompt after the subagent preamble.
    pub prompt: String,
    pub origin: Origin,
}

fn builtin(
    name: &str,
    description: &str,
    tools: Option<&[&str]>,
    mode: Option<Mode>,
    prompt: &str,
) -> AgentDef {
    AgentDef {
        name: name.into(),
        description: description.into(),
        tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
        model: None,
        mode,
        prompt: prompt.trim().into(),
        origin: Origin::BuiltIn,
    }
}

/// The built-in agents.
pub fn builtins() -> Vec<AgentDef> {
    vec![
        builtin(
            "general",
            "General-purpose: researches and makes changes, with all your tools",
            None,
            None,
            GENERAL,
        ),
        builtin(
            "explore",
            "Read-only: searches and reads code and the web to answer a question; changes nothing",
            Some(&EXPLORE_TOOLS),
            Some(Mode::Plan),
            EXPLORE,
        ),
        builtin(
            "plan",
            "Read-only: investigates and returns an implementation plan; changes nothing",
            Some(&PLAN_TOOLS),
            Some(Mode::Plan),
            PLAN,
        ),
    ]
}

/// How loose a mode is: a child's mode is the stricter of its own and its parent's.
fn looseness(mode: Mode) -> u8 {
    match mode {
        Mode::Plan => 0,
        Mode::Build => 1,
        Mode::AcceptEdits => 2,
        Mode::Yolo => 3,
    }
}

/// The mode a child of `parent` running `agent` gets: never looser than the parent's.
pub fn child_mode(parent: Mode, agent: &AgentDef) -> Mode {
    match agent.mode {
        Some(wanted) if looseness(wanted) < looseness(parent) => wanted,
        _ => parent,
    }
}

/// May a child at `depth` running `agent` use the parent's tool `id`?
pub fn child_may_use(agent: &AgentDef, depth: u32, id: &str) -> bool {
    if NEVER_FOR_CHILDREN.contains(&id) || (id == "task" && depth >= MAX_SUBAGENT_DEPTH) {
        return false;
    }
    agent.tools.as_ref().is_none_or(|tools| tools.iter().any(|t| t == id))
}

/// The text added to the system prompt of a child running `agent`.
pub fn instructions(agent: &AgentDef) -> String {
    format!("{}\n\n{}", SUBAGENT.trim(), agent.prompt)
}

/// The agents of the Markdown files a session rooted at `cwd` may use: the user's, then the project's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Files {
    pub user: Vec<AgentDef>,
    pub project: Vec<AgentDef>,
    /// Agent files refused by the reader, with why (the session names them to the user).
    pub refused: Vec<(PathBuf, String)>,
}

/// List and read the agent files (blocking: directory listings and file reads).
pub fn discover(user_config_home: Option<&Path>, cwd: &Path) -> Files {
    let mut refused = Vec::new();
    let user = match user_config_home {
        Some(home) => {
            let folder = home.join("tinycode");
            read_dir(&folder.join("agents"), Origin::User, &Scope::within(&folder), &mut refused)
        }
        None => Vec::new(),
    };
    let reach = Scope::within(&crate::extensions::project_root(cwd));
    let project = read_dir(&cwd.join(".tinycode").join("agents"), Origin::Project, &reach, &mut refused);
    Files { user, project, refused }
}

/// All agents a session may start: built-ins, the user's files, the config's tables, then the project's files (a
/// later one never replaces an earlier one with the same name).
pub fn all(files: &Files, config: &BTreeMap<String, AgentConfig>) -> Vec<AgentDef> {
    let mut agents = builtins();
    let configured = config.iter().filter_map(|(name, table)| match from_config(name, table) {
        Ok(agent) => Some(agent),
        Err(why) => {
            tracing::warn!(agent = %name, why, "[agents] table ignored");
            None
        }
    });
    let found = files.user.iter().cloned().chain(configured).chain(files.project.iter().cloned());
    for agent in found {
        if agents.iter().any(|a| a.name == agent.name) {
            tracing::warn!(agent = %agent.name, "an agent with this name exists already; ignored");
            continue;
        }
        agents.push(agent);
    }
    agents
}

/// An `[agents.NAME]` table as an agent.
pub fn from_config(name: &str, table: &AgentConfig) -> Result<AgentDef, String> {
    if !valid_name(name) {
        return Err(format!("`{name}` is not a valid agent name (a-z, 0-9, `-`, `_`)"));
    }
    if table.description.trim().is_empty() {
        return Err("it has no `description`".into());
    }
    let mode = match table.mode.as_deref() {
        None => None,
        Some(value) => Some(Mode::parse(value).ok_or_else(|| format!("unknown mode `{value}`"))?),
    };
    Ok(AgentDef {
        name: name.to_string(),
        description: table.description.trim().to_string(),
        tools: table.tools.clone(),
        model: table.model.clone().filter(|m| !m.trim().is_empty()),
        mode,
        prompt: table.prompt.trim().to_string(),
        origin: Origin::Config,
    })
}

fn read_dir(
    dir: &Path,
    origin: Origin,
    reach: &Scope,
    refused: &mut Vec<(PathBuf, String)>,
) -> Vec<AgentDef> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files.truncate(MAX_AGENT_FILES);
    let mut agents = Vec::new();
    for file in &files {
        match project_file::read(file, reach, MAX_AGENT_FILE_BYTES) {
            Ok(read) if read.complete => {
                agents.extend(read_file(file, &String::from_utf8_lossy(&read.bytes), origin))
            }
            Ok(_) => tracing::warn!(file = %file.display(), "agent file over 64 KB ignored"),
            Err(refusal) if refusal.is_guard() => refused.push((file.clone(), refusal.to_string())),
            Err(refusal) => tracing::warn!(file = %file.display(), %refusal, "agent file ignored"),
        }
    }
    agents
}

fn read_file(file: &Path, text: &str, origin: Origin) -> Option<AgentDef> {
    let stem = file.file_stem()?.to_string_lossy().to_string();
    match parse(text, &stem, origin) {
        Ok(agent) => Some(agent),
        Err(why) => {
            tracing::warn!(file = %file.display(), why, "agent file ignored");
            None
        }
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// A list value: `[a, b]` or `a, b`.
fn list(value: &str) -> Vec<String> {
    value
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|t| t.trim().trim_matches('"').trim_matches('\'').to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

/// Parse an agent file: front matter between `---` lines, then the prompt.
pub fn parse(text: &str, stem: &str, origin: Origin) -> Result<AgentDef, String> {
    let rest = text.strip_prefix("---").ok_or("it does not start with a `---` front matter")?;
    let (front, body) = rest.split_once("\n---").ok_or("its front matter is not closed with `---`")?;
    let body = body.split_once('\n').map(|(_, b)| b).unwrap_or("");
    let mut agent = AgentDef {
        name: stem.to_string(),
        description: String::new(),
        tools: None,
        model: None,
        mode: None,
        prompt: body.trim().to_string(),
        origin,
    };
    for line in front.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("`{line}` is not `key: value`"));
        };
        let (key, value) = (key.trim(), value.trim().trim_matches('"').trim_matches('\''));
        match key {
            "name" => agent.name = value.to_string(),
            "description" => agent.description = value.to_string(),
            "tools" => agent.tools = Some(list(value)),
            "model" if origin == Origin::Project => {
                tracing::warn!(agent = %agent.name, "a project's agent cannot choose the model; the parent's is used")
            }
            "model" => agent.model = Some(value.to_string()).filter(|m| !m.is_empty()),
            "mode" => agent.mode = Some(Mode::parse(value).ok_or_else(|| format!("unknown mode `{value}`"))?),
            key if REDIRECTING_KEYS.contains(&key) => {
                tracing::warn!(agent = %agent.name, key, "agents use their parent's provider; ignored")
            }
            other => tracing::debug!(agent = %agent.name, key = other, "unknown agent setting ignored"),
        }
    }
    if !valid_name(&agent.name) {
        return Err(format!("`{}` is not a valid agent name (a-z, 0-9, `-`, `_`)", agent.name));
    }
    if agent.description.is_empty() {
        return Err("it has no `description`".into());
    }
    Ok(agent)
}

/// The agents as the `task` tool's description lists them.
pub fn catalogue(agents: &[AgentDef]) -> String {
    agents.iter().map(|a| format!("\n- {}: {}", a.name, a.description)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_file_is_read_from_its_front_matter_and_body() {
        let text = "---\nname: reviewer\ndescription: Reviews diffs\ntools: [read, grep]\nmodel: big\nmode: plan\n---\nReview carefully.\n";
        let agent = parse(text, "file", Origin::User).unwrap();
        assert_eq!(
            agent,
            AgentDef {
                name: "reviewer".into(),
                description: "Reviews diffs".into(),
                tools: Some(vec!["read".into(), "grep".into()]),
                model: Some("big".into()),
                mode: Some(Mode::Plan),
                prompt: "Review carefully.".into(),
                origin: Origin::User,
            }
        );
        assert_eq!(
            parse("no front matter", "x", Origin::User).unwrap_err(),
            "it does not start with a `---` front matter"
        );
        assert_eq!(
            parse("---\nname: Bad Name\ndescription: d\n---\n", "x", Origin::User).unwrap_err(),
            "`Bad Name` is not a valid agent name (a-z, 0-9, `-`, `_`)"
        );
    }

    #[test]
    fn a_project_agent_never_chooses_the_model_nor_a_provider() {
        let text = "---\ndescription: d\nmodel: router/elsewhere\nbase_url: http://evil.example/v1\napi_key: k\n---\nx";
        let agent = parse(text, "sneaky", Origin::Project).unwrap();
        assert_eq!(agent.model, None);
        let user = parse(text, "mine", Origin::User).unwrap();
        assert_eq!(user.model.as_deref(), Some("router/elsewhere"));
    }

    #[test]
    fn a_child_mode_is_never_looser_than_its_parent() {
        let agent = |mode| AgentDef { mode, ..builtins().remove(0) };
        assert_eq!(child_mode(Mode::Build, &agent(Some(Mode::Yolo))), Mode::Build);
        assert_eq!(child_mode(Mode::Plan, &agent(Some(Mode::AcceptEdits))), Mode::Plan);
        assert_eq!(child_mode(Mode::Yolo, &agent(Some(Mode::Plan))), Mode::Plan);
        assert_eq!(child_mode(Mode::AcceptEdits, &agent(None)), Mode::AcceptEdits);
    }

    #[test]
    fn children_never_get_the_user_facing_tools_nor_task_at_the_depth_limit() {
        let general = builtins().remove(0);
        assert!(child_may_use(&general, 1, "bash"));
        assert!(child_may_use(&general, 4, "task"));
        assert!(!child_may_use(&general, 5, "task"));
        assert!(!child_may_use(&general, 1, "question"));
        let explore = builtins().remove(1);
        assert!(!child_may_use(&explore, 1, "write"));
        assert!(child_may_use(&explore, 1, "grep"));
    }

    #[test]
    fn project_agents_cannot_shadow_built_in_or_user_agents() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let user_dir = home.path().join("tinycode").join("agents");
        let project_dir = project.path().join(".tinycode").join("agents");
        std::fs::create_dir_all(&user_dir).unwrap();
        std::fs::create_dir_all(&project_dir).unwrap();
        std::fs::write(user_dir.join("mine.md"), "---\ndescription: user's\n---\nu").unwrap();
        std::fs::write(project_dir.join("mine.md"), "---\ndescription: project's\n---\np").unwrap();
        std::fs::write(project_dir.join("explore.md"), "---\ndescription: wider\ntools: bash\n---\np")
            .unwrap();
        std::fs::write(project_dir.join("helper.md"), "---\ndescription: helps\n---\nh").unwrap();
        let agents = all(&discover(Some(home.path()), project.path()), &BTreeMap::new());
        let summary: Vec<(String, String)> =
            agents.iter().map(|a| (a.name.clone(), a.description.clone())).collect();
        assert_eq!(summary[3..], [("mine".into(), "user's".into()), ("helper".into(), "helps".into())]);
        assert_eq!(agents[1].tools.as_deref(), Some(&EXPLORE_TOOLS.map(String::from)[..]));
    }

    #[test]
    fn config_agents_join_after_the_user_files_and_before_the_project_files() {
        let table = |description: &str, mode: Option<&str>| AgentConfig {
            description: description.into(),
            prompt: " Review. ".into(),
            model: Some("big".into()),
            tools: Some(vec!["read".into()]),
            mode: mode.map(String::from),
        };
        let files = Files {
            user: vec![parse("---\ndescription: user file\n---\nu", "mine", Origin::User).unwrap()],
            project: vec![
                parse("---\ndescription: project file\n---\np", "reviewer", Origin::Project).unwrap(),
                parse("---\ndescription: helps\n---\nh", "helper", Origin::Project).unwrap(),
            ],
            refused: vec![],
        };
        let config = BTreeMap::from([
            ("reviewer".to_string(), table("Reviews diffs", Some("plan"))),
            ("mine".to_string(), table("shadowed", None)),
            ("Bad Name".to_string(), table("bad", None)),
            ("odd".to_string(), table("odd mode", Some("turbo"))),
        ]);
        let agents = all(&files, &config);
        let names: Vec<(&str, Origin)> = agents.iter().map(|a| (a.name.as_str(), a.origin)).collect();
        assert_eq!(
            names[3..],
            [("mine", Origin::User), ("reviewer", Origin::Config), ("helper", Origin::Project)]
        );
        assert_eq!(
            agents[4],
            AgentDef {
                name: "reviewer".into(),
                description: "Reviews diffs".into(),
                tools: Some(vec!["read".into()]),
                model: Some("big".into()),
                mode: Some(Mode::Plan),
                prompt: "Review.".into(),
                origin: Origin::Config,
            }
        );
        assert_eq!(from_config("odd", &config["odd"]).unwrap_err(), "unknown mode `turbo`");
    }
}

//! The answers of the built-ins that are answered locally: `/help`, `/mcp`, `/skills`, and the listings of
//! `/model` and `/mode` without a name.
//!
//! Owns those texts. Pure: the session gathers what they show.

use std::path::PathBuf;

use crate::agent::event::CommandInfo;
use crate::extensions::{Catalog, Scope};
use crate::mcp::{Phase, Status};
use crate::session::settings::Mode;

/// What `/help` shows.
pub struct Help<'a> {
    pub commands: &'a [CommandInfo],
    pub mode: Mode,
    pub model: &'a str,
    pub base_url: &'a str,
    pub servers: &'a [Status],
    pub skills: usize,
    pub user_config: Option<PathBuf>,
    pub project_config: PathBuf,
}

pub fn help(help: &Help) -> String {
    let mut text = String::from("**Commands**\n");
    for command in help.commands {
        let hint = command.hint.as_deref().map(|h| format!(" {h}")).unwrap_or_default();
        text.push_str(&format!("- `/{}{hint}`: {}\n", command.name, command.description));
    }
    text.push_str(&format!(
        "\n**Modes** (now `{}`; switch with `/mode NAME` or the mode picker)\n",
        help.mode.id()
    ));
    for mode in Mode::ALL {
        text.push_str(&format!("- `{}`: {}\n", mode.id(), mode.description()));
    }
    let ready = help.servers.iter().filter(|s| s.phase == Phase::Ready).count();
    text.push_str(&format!(
        "\n**Settings**\n- Model: `{}` at {} (switch with `/model NAME` or the model picker)\n- MCP servers: {} ({ready} ready; `/mcp` lists them)\n- Skills: {} (`/skills` lists them)\n",
        help.model,
        help.base_url,
        help.servers.len(),
        help.skills
    ));
    text.push_str("- Configuration: ");
    if let Some(user) = &help.user_config {
        text.push_str(&format!("`{}` (yours), ", user.display()));
    }
    text.push_str(&format!(
        "`{}` (the project's; what could run code or send data elsewhere applies once you trust the project)\n",
        help.project_config.display()
    ));
    text
}

fn phase(status: &Status) -> String {
    match &status.phase {
        Phase::Starting => "starting".into(),
        Phase::Ready => {
            let mut parts =
                vec![format!("{} tool{}", status.tools, if status.tools == 1 { "" } else { "s" })];
            if status.prompts > 0 {
                parts.push(format!(
                    "{} prompt{}",
                    status.prompts,
                    if status.prompts == 1 { "" } else { "s" }
                ));
            }
            if status.resources > 0 {
                parts.push(format!(
                    "{} resource{}",
                    status.resources,
                    if status.resources == 1 { "" } else { "s" }
                ));
            }
            format!("ready with {}", parts.join(", "))
        }
        Phase::Failed(reason) => format!("failed: {reason}"),
        Phase::Disabled => "disabled in the configuration".into(),
        Phase::Closed => "closed".into(),
    }
}

/// `/mcp`.
pub fn mcp(servers: &[Status]) -> String {
    if servers.is_empty() {
        return "No MCP servers. Add them in your editor's settings, or as `[mcp.NAME]` tables (`command`, `args`, `env`, or `url`, `headers`) in your config file.".into();
    }
    let mut text = String::from("**MCP servers**\n");
    for status in servers {
        text.push_str(&format!("- `{}` ({}): {}\n", status.name, status.source.as_str(), phase(status)));
    }
    text
}

/// `/skills`.
pub fn skills(catalog: &Catalog) -> String {
    let mut text = String::new();
    if catalog.skills.is_empty() {
        text.push_str("No skills. A skill is a folder with a `SKILL.md` (frontmatter `name` and `description`, then instructions) under `.tinycode/skills/`, `.agents/skills/` or `.claude/skills/` in the project or your home.\n");
    } else {
        text.push_str("**Skills** (the agent uses them by itself; `/NAME args` uses one now)\n");
        for skill in &catalog.skills {
            let whose = if skill.origin.scope == Scope::Project { "project" } else { "yours" };
            text.push_str(&format!("- `{}` ({whose}): {}\n", skill.name, skill.description));
            for warning in &skill.warnings {
                text.push_str(&format!("  - note: {warning}\n"));
            }
        }
    }
    if !catalog.problems.is_empty() {
        text.push_str("\n**Files that could not be used**\n");
        for problem in &catalog.problems {
            text.push_str(&format!("- `{}`: {}\n", problem.path.display(), problem.reason));
        }
    }
    text
}

/// `/model` without a name.
pub fn models(current: &str, models: &[String]) -> String {
    let mut text = format!("The model is `{current}`. Switch with `/model NAME`; known models:\n");
    for model in models {
        text.push_str(&format!("- `{model}`\n"));
    }
    text
}

/// `/mode` without a name.
pub fn modes(current: Mode) -> String {
    let mut text = format!("The mode is `{}`. Switch with `/mode NAME`:\n", current.id());
    for mode in Mode::ALL {
        text.push_str(&format!("- `{}`: {}\n", mode.id(), mode.description()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::spec::Source;

    fn status(name: &str, phase: Phase, tools: usize) -> Status {
        Status { name: name.into(), source: Source::Editor, phase, tools, prompts: 0, resources: 0 }
    }

    #[test]
    fn mcp_lists_each_server_with_its_state() {
        let servers = [
            status("fs", Phase::Ready, 1),
            Status { prompts: 2, resources: 1, ..status("web", Phase::Ready, 3) },
            status("slow", Phase::Starting, 0),
            status("gone", Phase::Failed("it stopped: it exited with status 3".into()), 0),
            Status { source: Source::Config, ..status("off", Phase::Disabled, 0) },
        ];
        assert_eq!(
            mcp(&servers),
            "**MCP servers**\n- `fs` (editor): ready with 1 tool\n- `web` (editor): ready with 3 tools, 2 prompts, 1 resource\n\
             - `slow` (editor): starting\n- `gone` (editor): failed: it stopped: it exited with status 3\n\
             - `off` (config): disabled in the configuration\n"
        );
    }
}

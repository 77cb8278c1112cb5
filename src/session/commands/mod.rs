//! Slash commands: the built-ins (answered by the session, or turned into a prompt like `/init`), the user's and
//! the project's custom commands, skills, and MCP server prompts. They are advertised together (in that order of
//! precedence: a name belongs to the first that has it) and routed when a prompt's first text starts with
//! `/name`; any other text goes to the model unchanged.
//!
//! Owns the list, the routing and the built-ins' texts. Running them belongs to the session (`session::slash`).

pub mod builtin;
pub mod expand;
pub mod permissions;

use crate::agent::event::CommandInfo;
use crate::extensions::{Catalog, CustomCommand, Skill};
use crate::llm::UserPart;
use crate::mcp::PromptCommand;

/// The built-in commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Help,
    Init,
    Compact,
    Permissions,
    Model,
    Mode,
    Mcp,
    Skills,
    Undo,
    Checkpoints,
    Restore,
    Steer,
}

/// The built-ins as advertised: command, name, description, input hint.
pub const BUILTINS: [(Builtin, &str, &str, Option<&str>); 12] = [
    (Builtin::Help, "help", "Show the commands, the modes and the key settings", None),
    (
        Builtin::Init,
        "init",
        "Look at the repository and write or improve AGENTS.md",
        Some("what to focus on (optional)"),
    ),
    (Builtin::Compact, "compact", "Summarise older messages to free up the context window", None),
    (
        Builtin::Permissions,
        "permissions",
        "List the permissions remembered for this project; `revoke N` or `clear` forgets them",
        Some("revoke N | clear"),
    ),
    (Builtin::Model, "model", "Switch the model by name (without one, list the models)", Some("model name")),
    (
        Builtin::Mode,
        "mode",
        "Switch the mode: build, plan, accept-edits or yolo",
        Some("build | plan | accept-edits | yolo"),
    ),
    (Builtin::Mcp, "mcp", "List the MCP servers: starting, ready with their tools, or failed and why", None),
    (Builtin::Skills, "skills", "List the skills the agent can use, and files that could not be read", None),
    (
        Builtin::Undo,
        "undo",
        "Revert the file changes of the last turn (the editor shows the revert as a diff)",
        None,
    ),
    (
        Builtin::Checkpoints,
        "checkpoints",
        "List the turns that changed files; /restore N returns to one",
        None,
    ),
    (
        Builtin::Restore,
        "restore",
        "Put the files back as they were before checkpoint N (undoing it and every later turn)",
        Some("checkpoint number"),
    ),
    (
        Builtin::Steer,
        "steer",
        "Add a message to the running turn without stopping it",
        Some("what the agent should know now"),
    ),
];

/// What a prompt invokes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    Builtin(Builtin, String),
    Custom(CustomCommand, String),
    Skill(Skill, String),
    Prompt(PromptCommand, String),
}

/// The `/name` and the rest of the first text block, if the prompt starts with a slash command.
pub fn split(input: &[UserPart]) -> Option<(String, String)> {
    let Some(UserPart::Text(text)) = input.first() else { return None };
    let rest = text.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, args) = rest.split_at(end);
    (!name.is_empty()).then(|| (name.to_string(), args.trim().to_string()))
}

/// What `/name args` invokes, by precedence: built-in, custom command, skill, MCP prompt.
pub fn resolve(name: &str, args: String, catalog: &Catalog, prompts: &[PromptCommand]) -> Option<Invocation> {
    if let Some((builtin, ..)) = BUILTINS.iter().find(|(_, n, ..)| *n == name) {
        return Some(Invocation::Builtin(*builtin, args));
    }
    if let Some(command) = catalog.command(name) {
        return Some(Invocation::Custom(command.clone(), args));
    }
    if let Some(skill) = catalog.skill(name) {
        return Some(Invocation::Skill(skill.clone(), args));
    }
    prompts.iter().find(|p| p.name == name).map(|p| Invocation::Prompt(p.clone(), args))
}

fn info(name: &str, description: &str, hint: Option<&str>) -> CommandInfo {
    CommandInfo { name: name.into(), description: description.into(), hint: hint.map(String::from) }
}

/// Every command the session offers, as advertised (a name once, by precedence).
pub fn available(catalog: &Catalog, prompts: &[PromptCommand]) -> Vec<CommandInfo> {
    let mut list: Vec<CommandInfo> =
        BUILTINS.iter().map(|(_, name, about, hint)| info(name, about, *hint)).collect();
    let mut add = |item: CommandInfo| {
        if !list.iter().any(|c| c.name == item.name) {
            list.push(item);
        }
    };
    for command in &catalog.commands {
        add(info(&command.name, &command.description, command.hint.as_deref()));
    }
    for skill in &catalog.skills {
        add(info(&skill.name, &skill.description, Some("arguments (optional)")));
    }
    for prompt in prompts {
        let hint: Vec<String> = prompt.arguments.iter().map(|(a, _)| format!("<{a}>")).collect();
        let hint = (!hint.is_empty()).then(|| hint.join(" "));
        add(info(&prompt.name, &prompt.description, hint.as_deref()));
    }
    list
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::extensions::{Origin, Scope};

    fn text(t: &str) -> Vec<UserPart> {
        vec![UserPart::Text(t.into())]
    }

    fn command(name: &str) -> CustomCommand {
        CustomCommand {
            name: name.into(),
            description: format!("custom {name}"),
            hint: None,
            model: None,
            agent: None,
            body: "b".into(),
            path: PathBuf::from("/c.md"),
            origin: Origin { scope: Scope::Project, claude: false },
        }
    }

    fn skill(name: &str) -> Skill {
        Skill {
            name: name.into(),
            description: format!("skill {name}"),
            path: PathBuf::from("/s/SKILL.md"),
            dir: PathBuf::from("/s"),
            origin: Origin { scope: Scope::User, claude: false },
            reach: crate::workspace::project_file::Scope::named(),
            warnings: vec![],
        }
    }

    #[test]
    fn a_prompt_whose_first_text_starts_with_a_slash_names_a_command() {
        assert_eq!(split(&text(" /compact ")), Some(("compact".into(), String::new())));
        assert_eq!(split(&text("/review  src/a.rs now")), Some(("review".into(), "src/a.rs now".into())));
        assert_eq!(split(&text("compact")), None);
        assert_eq!(split(&text("/ x")), None);
        assert_eq!(
            split(&[UserPart::Text("/fix 1".into()), UserPart::Text("more".into())]),
            Some(("fix".into(), "1".into()))
        );
    }

    #[test]
    fn builtins_win_then_commands_then_skills_then_prompts() {
        let catalog = Catalog {
            skills: vec![skill("review"), skill("pdf"), skill("help")],
            commands: vec![command("review"), command("help")],
            problems: vec![],
        };
        let prompt = PromptCommand {
            name: "pdf".into(),
            server: "s".into(),
            prompt: "p".into(),
            description: "d".into(),
            arguments: vec![("focus".into(), true)],
        };
        let other = PromptCommand { name: "mcp__s__q".into(), ..prompt.clone() };
        let prompts = [prompt, other.clone()];
        assert_eq!(
            resolve("help", "x".into(), &catalog, &prompts),
            Some(Invocation::Builtin(Builtin::Help, "x".into()))
        );
        assert_eq!(
            resolve("review", String::new(), &catalog, &prompts),
            Some(Invocation::Custom(command("review"), String::new()))
        );
        assert_eq!(
            resolve("pdf", String::new(), &catalog, &prompts),
            Some(Invocation::Skill(skill("pdf"), String::new()))
        );
        assert_eq!(
            resolve("mcp__s__q", "a".into(), &catalog, &prompts),
            Some(Invocation::Prompt(other, "a".into()))
        );
        assert_eq!(resolve("nope", String::new(), &catalog, &prompts), None);
        let names: Vec<String> = available(&catalog, &prompts).into_iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "help",
                "init",
                "compact",
                "permissions",
                "model",
                "mode",
                "mcp",
                "skills",
                "undo",
                "checkpoints",
                "restore",
                "steer",
                "review",
                "pdf",
                "mcp__s__q"
            ]
        );
        let listed = available(&catalog, &prompts);
        assert_eq!(listed.last().unwrap().hint.as_deref(), Some("<focus>"));
        assert_eq!(listed[12].description, "custom review");
    }
}

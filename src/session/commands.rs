//! Slash commands a session answers instead of the model: `/compact`, and `/permissions` to list the project's
//! remembered "always" rules and revoke them (`/permissions revoke N`, `/permissions clear`). `/undo`,
//! `/checkpoints` and `/restore N` are answered by `checkpoints`; `/steer TEXT` is routed by `turns`.
//!
//! Owns parsing and the texts of the answers. Compaction itself belongs to the turn.

use crate::llm::UserPart;
use crate::permission::remembered::Remembered;

/// The commands as advertised: name, description, input hint.
pub const COMMANDS: [(&str, &str, Option<&str>); 6] = [
    ("compact", "Summarise older messages to free up the context window", None),
    (
        "permissions",
        "List the permissions remembered for this project; `revoke N` or `clear` forgets them",
        Some("revoke N | clear"),
    ),
    super::checkpoints::UNDO,
    super::checkpoints::CHECKPOINTS,
    super::checkpoints::RESTORE,
    (
        "steer",
        "Add a message to the running turn without stopping it",
        Some("what the agent should know now"),
    ),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Compact,
    Permissions(Vec<String>),
    Undo,
    Checkpoints,
    /// `/restore N`: the argument as typed.
    Restore(String),
}

/// The command a prompt invokes, if it is one: a single text block starting with `/` and a known name.
pub fn parse(input: &[UserPart]) -> Option<Command> {
    let [UserPart::Text(text)] = input else { return None };
    let mut words = text.trim().strip_prefix('/')?.split_whitespace();
    match words.next()? {
        "compact" => Some(Command::Compact),
        "permissions" => Some(Command::Permissions(words.map(String::from).collect())),
        "undo" => Some(Command::Undo),
        "checkpoints" => Some(Command::Checkpoints),
        "restore" => Some(Command::Restore(words.collect::<Vec<_>>().join(" "))),
        _ => None,
    }
}

fn listing(remembered: &Remembered) -> String {
    let rules = remembered.list();
    if rules.is_empty() {
        return format!(
            "No permissions are remembered for `{}`. Answering an ask with \"Always allow\" or \"Always reject\" adds one.",
            remembered.project()
        );
    }
    let mut text = format!("Permissions remembered for `{}`:\n", remembered.project());
    for (n, rule) in rules.iter().enumerate() {
        text.push_str(&format!(
            "{}. {} `{}` for `{}`\n",
            n + 1,
            rule.action.as_str(),
            rule.permission,
            rule.pattern
        ));
    }
    text.push_str("\n`/permissions revoke N` forgets one; `/permissions clear` forgets them all.");
    text
}

/// Run `/permissions` with `args` and return the answer for the user.
pub async fn permissions(remembered: &Remembered, args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] | ["list"] => listing(remembered),
        ["clear"] => match remembered.clear().await {
            0 => "There were no remembered permissions to forget.".into(),
            1 => "Forgot 1 remembered permission; the next such call asks again.".into(),
            n => format!("Forgot {n} remembered permissions; those calls ask again."),
        },
        ["revoke", number] => match number.parse::<usize>() {
            Ok(n) => match remembered.revoke(n).await {
                Some(rule) => format!(
                    "Forgot rule {n} ({} `{}` for `{}`); such calls ask again.",
                    rule.action.as_str(),
                    rule.permission,
                    rule.pattern
                ),
                None => format!("There is no rule {n}.\n\n{}", listing(remembered)),
            },
            Err(_) => format!("`{number}` is not a rule number.\n\n{}", listing(remembered)),
        },
        _ => format!(
            "Unknown use of /permissions. Use `/permissions`, `/permissions revoke N` or `/permissions clear`.\n\n{}",
            listing(remembered)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::{Action, Rule};

    fn text(t: &str) -> Vec<UserPart> {
        vec![UserPart::Text(t.into())]
    }

    #[test]
    fn only_known_slash_commands_in_a_lone_text_block_are_commands() {
        assert_eq!(parse(&text(" /compact ")), Some(Command::Compact));
        assert_eq!(
            parse(&text("/permissions revoke 2")),
            Some(Command::Permissions(vec!["revoke".into(), "2".into()]))
        );
        assert_eq!(parse(&text("/unknown")), None);
        assert_eq!(parse(&text("compact")), None);
        assert_eq!(parse(&[UserPart::Text("/compact".into()), UserPart::Text("more".into())]), None);
    }

    #[tokio::test]
    async fn permissions_lists_numbered_rules_and_revokes_by_number() {
        let remembered = Remembered::new("/p");
        assert_eq!(
            permissions(&remembered, &[]).await,
            "No permissions are remembered for `/p`. Answering an ask with \"Always allow\" or \"Always reject\" adds one."
        );
        remembered.add(Rule::new("edit", "/p/**", Action::Allow)).await;
        remembered.add(Rule::new("shell", "git push", Action::Deny)).await;
        assert_eq!(
            permissions(&remembered, &[]).await,
            "Permissions remembered for `/p`:\n1. allow `edit` for `/p/**`\n2. deny `shell` for `git push`\n\n`/permissions revoke N` forgets one; `/permissions clear` forgets them all."
        );
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            permissions(&remembered, &args(&["revoke", "1"])).await,
            "Forgot rule 1 (allow `edit` for `/p/**`); such calls ask again."
        );
        assert!(
            permissions(&remembered, &args(&["revoke", "5"]))
                .await
                .starts_with("There is no rule 5.\n\nPermissions remembered for `/p`:\n1. deny `shell`")
        );
        assert_eq!(
            permissions(&remembered, &args(&["clear"])).await,
            "Forgot 1 remembered permission; the next such call asks again."
        );
        assert_eq!(remembered.list(), vec![]);
    }
}

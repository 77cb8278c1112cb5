//! `/permissions`: list the project's remembered "always" rules and revoke them (`/permissions revoke N`,
//! `/permissions clear`).
//!
//! Owns the texts of the answers.

use crate::permission::remembered::Remembered;

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

//! Slash commands, skills and instruction files through ACP: the advertised menu (built-ins, the project's and
//! the user's commands, skills, in precedence order, after the session answer), `/help` answered locally,
//! commands expanded (arguments, `@path`, shell lines only after an ask and only from trusted places), skills
//! through the `skill` tool and as commands, `/init`, `/model` and `/mode` by name, unreadable files reported once,
//! and instruction files (global, `CLAUDE.md`, `instructions = [...]`) in the system prompt.

use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};

use super::turn::tool_result;
use crate::support::client::{Answer, Harness, Setup};
use crate::support::fake_model::{answer, calls};
use crate::support::mcp::{last_user, system};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn commands(h: &Harness, session: &agent_client_protocol::v1::schema::SessionId) -> Vec<Value> {
    h.client
        .updates(session)
        .into_iter()
        .rev()
        .find(|u| u["sessionUpdate"] == "available_commands_update")
        .map(|u| u["availableCommands"].as_array().cloned().unwrap_or_default())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_menu_lists_built_ins_then_commands_then_skills_with_hints_and_the_project_wins() {
    let h = Harness::start(vec![]).await;
    h.write(
        ".tinycode/commands/review.md",
        "---\ndescription: Review the diff\nargument-hint: \"[focus]\"\n---\nReview $ARGUMENTS\n",
    );
    h.write(".claude/commands/team/fix.md", "Fix issue $0 in $1\n");
    h.write(
        ".agents/skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Work with PDFs.\n---\nUse pdftotext.\n",
    );
    write(&h.config_home().join("tinycode/commands/review.md"), "---\ndescription: My review\n---\nmine\n");
    write(
        &h.home().join(".claude/skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: Take notes.\n---\nWrite them down.\n",
    );
    let session = h.session().await;
    let menu = commands(&h, &session);
    let names: Vec<&str> = menu.iter().map(|c| c["name"].as_str().unwrap()).collect();
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
            "team:fix",
            "pdf",
            "notes"
        ]
    );
    assert_eq!(
        menu[12],
        json!({"name": "review", "description": "Review the diff", "input": {"hint": "[focus]"}})
    );
    assert_eq!(
        menu[13],
        json!({"name": "team:fix", "description": "Fix issue $0 in $1", "input": {"hint": "<$0> <$1>"}})
    );
    assert_eq!(menu[14]["description"], "Work with PDFs.");
    // The announcement comes after the session's answer, so the editor knows the session.
    let first = h
        .client
        .updates_json()
        .iter()
        .position(|n| n["update"]["sessionUpdate"] == "available_commands_update");
    assert!(first.is_some());
}

#[tokio::test]
async fn help_is_answered_locally_without_asking_the_model() {
    let h = Harness::start(vec![]).await;
    let session = h.session().await;
    h.client.prompt(&session, "/help").await.unwrap();
    let text = h.said(&session).concat();
    assert!(
        text.starts_with("**Commands**\n- `/help`: Show the commands, the modes and the key settings\n"),
        "{text}"
    );
    assert!(text.contains("- `/mode build | plan | accept-edits | yolo`: Switch the mode"), "{text}");
    assert!(text.contains("**Modes** (now `build`;"), "{text}");
    assert!(text.contains("- Model: `fake-model` at "), "{text}");
    assert!(h.model.requests().is_empty());
}

#[tokio::test]
async fn a_command_expands_its_arguments_and_inlines_files_before_the_model_sees_it() {
    let h = Harness::start(vec![answer(&["reviewed"])]).await;
    h.write(".tinycode/commands/review.md", "Review $1 with focus on $2. See @src/a.rs\n");
    h.write("src/a.rs", "fn a() {}\n");
    let session = h.session().await;
    h.client.prompt(&session, "/review src/a.rs error handling").await.unwrap();
    let file = std::fs::canonicalize(h.cwd.join("src/a.rs")).unwrap();
    assert_eq!(
        last_user(&h.model, 0),
        format!(
            "Review src/a.rs with focus on error handling. See @src/a.rs\n\n<file path=\"{}\">\nfn a() {{}}\n</file>",
            file.display()
        )
    );
}

#[tokio::test]
async fn a_users_command_runs_its_shell_lines_only_after_an_ask_without_always() {
    let h = Harness::start(vec![answer(&["ok"]), answer(&["ok"])]).await;
    write(&h.config_home().join("tinycode/commands/status.md"), "Status:\n!`echo hello from the shell`\n");
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce), Answer::Pick(K::RejectOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "/status").await.unwrap();
    assert_eq!(last_user(&h.model, 0), "Status:\nhello from the shell");
    let asks = h.client.log.permission_requests.lock().unwrap().clone();
    let ask = serde_json::to_value(&asks[0]).unwrap();
    assert_eq!(ask["toolCall"]["title"], "/status runs `echo hello from the shell`");
    let options: Vec<&str> =
        ask["options"].as_array().unwrap().iter().map(|o| o["optionId"].as_str().unwrap()).collect();
    assert_eq!(
        options,
        ["allow_once", "reject_once", "reject_always"],
        "no \"always allow\" for shell lines"
    );
    h.client.prompt(&session, "/status").await.unwrap();
    assert_eq!(
        last_user(&h.model, 1),
        "Status:\n[`echo hello from the shell` was not run: the user declined it]"
    );
    assert_eq!(h.client.log.permission_requests.lock().unwrap().len(), 2, "every run asks again");
}

#[tokio::test]
async fn a_project_commands_shell_lines_never_run_until_the_project_is_trusted() {
    let h = Harness::start(vec![answer(&["ok"])]).await;
    h.write(".tinycode/commands/leak.md", "Look: !`touch pwned`\n");
    let session = h.session().await;
    // The trust question names the shell line; the test client does not answer it, which is "not now".
    h.client.wait_log("the trust question", |log| !log.permission_requests.lock().unwrap().is_empty()).await;
    let trust = serde_json::to_value(&h.client.log.permission_requests.lock().unwrap()[0]).unwrap();
    let summary = trust["toolCall"]["content"][0]["content"]["text"].as_str().unwrap().to_string();
    assert!(summary.contains("`commands.leak = [\"touch pwned\"]`"), "{summary}");
    h.client.prompt(&session, "/leak").await.unwrap();
    assert_eq!(
        last_user(&h.model, 0),
        "Look: [`touch pwned` was not run: shell lines in the project's commands run only once you trust the project]"
    );
    assert!(!h.cwd.join("pwned").exists());
    assert_eq!(
        h.client.log.permission_requests.lock().unwrap().len(),
        1,
        "only the trust question was asked"
    );
}

#[tokio::test]
async fn a_trusted_projects_command_asks_before_each_shell_line() {
    let h = Setup::new(vec![answer(&["ok"])])
        .file(".tinycode/commands/mark.md", "Mark: !`touch marked && echo done`\n")
        .trusted()
        .start()
        .await;
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "/mark").await.unwrap();
    assert_eq!(last_user(&h.model, 0), "Mark: done");
    assert!(h.cwd.join("marked").exists());
}

#[tokio::test]
async fn skills_load_through_the_skill_tool_and_as_slash_commands() {
    let h = Harness::start(vec![
        calls(&[("s1", "skill", r#"{"name": "pdf", "arguments": "report.pdf"}"#)]),
        answer(&["done"]),
        answer(&["done"]),
        calls(&[("s2", "skill", r#"{"name": "nope"}"#)]),
        answer(&["done"]),
    ])
    .await;
    h.write(
        ".agents/skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Work with PDFs.\n---\nExtract $1 with pdftotext.\n",
    );
    let session = h.session().await;
    h.client.prompt(&session, "read the pdf").await.unwrap();
    let prompt = system(&h.model, 0);
    assert!(
        prompt.contains("<skill><name>pdf</name><description>Work with PDFs.</description></skill>"),
        "{prompt}"
    );
    assert!(!prompt.contains("pdftotext"), "only names and descriptions are in the prompt");
    let dir = h.cwd.join(".agents/skills/pdf");
    let loaded = format!(
        "<skill name=\"pdf\">\nExtract report.pdf with pdftotext.\n\nBase directory for this skill: {}. Relative paths in this skill (e.g., scripts/, references/) are relative to this base directory.\n</skill>",
        dir.display()
    );
    assert_eq!(tool_result(&h.model.messages(1), "s1"), loaded);
    h.client.prompt(&session, "/pdf report.pdf").await.unwrap();
    assert_eq!(last_user(&h.model, 2), loaded);
    h.client.prompt(&session, "another").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(4), "s2"),
        "There is no skill named `nope`. Available skills: pdf."
    );
}

#[tokio::test]
async fn a_skill_added_while_the_session_runs_is_offered_at_the_next_prompt() {
    let h = Harness::start(vec![answer(&["a"]), answer(&["b"])]).await;
    let session = h.session().await;
    h.client.prompt(&session, "one").await.unwrap();
    assert!(!system(&h.model, 0).contains("<skill>"), "{}", system(&h.model, 0));
    h.write(".agents/skills/late/SKILL.md", "---\nname: late\ndescription: Added later.\n---\nBody.\n");
    h.client.prompt(&session, "two").await.unwrap();
    assert!(
        system(&h.model, 1)
            .contains("<skill><name>late</name><description>Added later.</description></skill>"),
        "{}",
        system(&h.model, 1)
    );
    let names: Vec<String> =
        commands(&h, &session).iter().map(|c| c["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names.last().map(String::as_str), Some("late"), "{names:?}");
}

#[tokio::test]
async fn unreadable_skill_files_are_reported_once_and_listed_by_skills() {
    let h = Harness::start(vec![answer(&["a"]), answer(&["b"])]).await;
    h.write(".tinycode/skills/broken/SKILL.md", "---\nname: broken\ndescription: never closed\n");
    let session = h.session().await;
    h.client.prompt(&session, "one").await.unwrap();
    h.client.prompt(&session, "two").await.unwrap();
    h.client.prompt(&session, "/skills").await.unwrap();
    let text = h.said(&session).concat();
    let path = h.cwd.join(".tinycode/skills/broken/SKILL.md");
    let line = format!("{}: the frontmatter that starts with `---` is never closed", path.display());
    assert_eq!(text.matches(&line).count(), 1, "reported once as a notice: {text}");
    assert!(
        text.contains(&format!("**Files that could not be used**\n- `{}`: the frontmatter", path.display())),
        "{text}"
    );
}

#[tokio::test]
async fn init_asks_the_model_to_write_agents_md() {
    let h = Harness::start(vec![answer(&["written"])]).await;
    let session = h.session().await;
    h.client.prompt(&session, "/init the test commands").await.unwrap();
    let prompt = last_user(&h.model, 0);
    assert!(prompt.starts_with("Look at this repository and write `AGENTS.md` at its root"), "{prompt}");
    assert!(prompt.ends_with("Focus on: the test commands"), "{prompt}");
}

#[tokio::test]
async fn mode_and_model_switch_by_name_for_clients_without_pickers() {
    let h = Harness::start(vec![]).await;
    let session = h.session().await;
    h.client.prompt(&session, "/mode plan").await.unwrap();
    h.client.prompt(&session, "/mode sideways").await.unwrap();
    h.client.prompt(&session, "/model fake-model-large").await.unwrap();
    let text = h.said(&session).concat();
    assert!(text.starts_with("The mode is now `plan`: "), "{text}");
    assert!(
        text.contains("There is no mode `sideways`.\n\nThe mode is `plan`. Switch with `/mode NAME`:"),
        "{text}"
    );
    assert!(text.ends_with("The model is now `fake-model-large`."), "{text}");
    let updates = h.client.updates(&session);
    assert!(
        updates.iter().any(|u| u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "plan")
    );
    let options = updates.iter().rev().find(|u| u["sessionUpdate"] == "config_option_update").unwrap();
    let model = options["configOptions"].as_array().unwrap().iter().find(|o| o["id"] == "model").unwrap();
    assert_eq!(model["currentValue"], "fake-model-large");
    assert!(h.model.requests().is_empty());
}

#[tokio::test]
async fn instruction_files_come_from_home_the_project_and_the_configuration() {
    let h = Setup::new(vec![answer(&["ok"])])
        .config("instructions = [\"docs/style.md\", \"/etc/hostname\"]")
        .start()
        .await;
    write(&h.config_home().join("tinycode/AGENTS.md"), "Global rule.");
    h.write("CLAUDE.md", "Claude rule.");
    h.write("docs/style.md", "Style rule.");
    let session = h.session().await;
    h.client.prompt(&session, "hi").await.unwrap();
    let prompt = system(&h.model, 0);
    let at = |text: &str| prompt.find(text).unwrap_or_else(|| panic!("{text} missing from {prompt}"));
    assert!(at("Global rule.") < at("Claude rule.") && at("Claude rule.") < at("Style rule."));
    assert!(!prompt.contains("(from /etc/hostname)"), "files outside the project need trust");
}

fn mkfifo(path: &std::path::Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

#[tokio::test]
async fn a_skill_or_command_that_is_a_fifo_never_blocks_the_session_and_is_reported() {
    let h = Harness::start(vec![answer(&["fine"])]).await;
    mkfifo(&h.cwd.join(".tinycode/skills/trap/SKILL.md"));
    mkfifo(&h.cwd.join(".tinycode/commands/trap.md"));
    h.write(".tinycode/commands/ok.md", "Say ok");
    let session = h.session().await;
    h.client.prompt(&session, "hello").await.unwrap();
    h.client.prompt(&session, "/skills").await.unwrap();
    let names: Vec<Value> = commands(&h, &session).iter().map(|c| c["name"].clone()).collect();
    assert!(names.contains(&json!("ok")) && !names.contains(&json!("trap")), "{names:?}");
    let text = h.said(&session).concat();
    for file in [".tinycode/skills/trap/SKILL.md", ".tinycode/commands/trap.md"] {
        let line = format!("{}: it is a FIFO (named pipe), not a regular file", h.cwd.join(file).display());
        assert!(text.contains(&line), "{line} in {text}");
    }
}

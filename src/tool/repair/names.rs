//! Tool-name repair (PROVIDERS.md §6.1): what is left of a name after a model garbled it. Exact names always
//! win; then surrounding whitespace and quotes, a chat-template token glued on (`read<|channel|>…`), a dotted
//! namespace (`default_api.read`, `functions.read`, `tools.read`), case and `-`/`_`/space differences
//! (`Read`, `apply-patch`, `ApplyPatch`), and last the common names other agents give the same tool
//! (`str_replace` → edit, `cat` → read). An alias applies only when its tool is registered.
//!
//! Owns the tool-name alias table (keyed by tool id, data only). Must not import a tool.

/// Tool id ← names other agents use for it, compared squashed (lowercase, without `_`, `-` and spaces).
const TOOL_ALIASES: &[(&str, &[&str])] = &[
    (
        "read",
        &[
            "readfile",
            "fileread",
            "cat",
            "view",
            "viewfile",
            "openfile",
            "open",
            "readfiles",
            "readmultiplefiles",
        ],
    ),
    ("write", &["writefile", "filewrite", "createfile", "savefile", "writetofile", "create"]),
    (
        "edit",
        &[
            "strreplace",
            "strreplaceeditor",
            "strreplacebasededittool",
            "searchreplace",
            "replace",
            "replaceinfile",
            "editfile",
            "fileedit",
            "modifyfile",
        ],
    ),
    ("apply_patch", &["patch", "applydiff", "diff"]),
    (
        "bash",
        &[
            "shell",
            "sh",
            "exec",
            "run",
            "runcommand",
            "runshellcommand",
            "executecommand",
            "shellcommand",
            "terminal",
            "command",
            "cmd",
            "execute",
            "containerexec",
        ],
    ),
    ("grep", &["search", "rg", "ripgrep", "searchfiles", "contentsearch", "grepsearch", "findinfiles"]),
    ("glob", &["findfiles", "globsearch", "filesearch", "find"]),
    ("list_dir", &["readdirectory", "listdirectory", "ls", "listfiles", "dirlist"]),
    ("monitor", &["monitorcommand"]),
    ("shell_tasks", &["listshells", "bashtasks"]),
    ("todowrite", &["todo", "todos", "updatetodos", "writetodos", "todolist"]),
    ("question", &["ask", "askuser", "askquestion", "askfollowupquestion"]),
    ("shell_output", &["bashoutput", "taskoutput", "monitorevents"]),
    ("kill_shell", &["killbash", "killtask", "killprocess", "taskstop"]),
    ("plan_enter", &["enterplanmode"]),
    ("plan_exit", &["exitplanmode"]),
];

/// Defaults an old name carries (seed 003): `task_output` waited for the task to exit.
const ALIAS_DEFAULTS: &[(&str, &str, &str)] = &[("taskoutput", "wait", "exit")];

/// The arguments an old name implies, for keys the call did not send: (key, value).
pub fn implied_arguments(name: &str) -> Vec<(&'static str, &'static str)> {
    let cleaned = name.split("<|").next().unwrap_or(name).trim();
    let cleaned = cleaned.rsplit_once('.').map_or(cleaned, |(_, last)| last);
    let wanted = squash(cleaned);
    ALIAS_DEFAULTS
        .iter()
        .filter(|(alias, _, _)| *alias == wanted)
        .map(|(_, key, value)| (*key, *value))
        .collect()
}

fn squash(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, '_' | '-' | ' ')).flat_map(char::to_lowercase).collect()
}

/// The registered id `name` stands for, among `ids`; `None` when nothing fits or two ids fit equally.
pub fn canonical<'a>(name: &str, ids: &[&'a str]) -> Option<&'a str> {
    if let Some(id) = ids.iter().find(|id| **id == name) {
        return Some(id);
    }
    let mut cleaned = name.split("<|").next().unwrap_or(name).trim();
    cleaned = cleaned.trim_matches(|c| matches!(c, '"' | '\'' | '`')).trim();
    if let Some((_, last)) = cleaned.rsplit_once('.') {
        cleaned = last;
    }
    let wanted = squash(cleaned);
    if wanted.is_empty() {
        return None;
    }
    let matching: Vec<&'a str> = ids.iter().copied().filter(|id| squash(id) == wanted).collect();
    match matching[..] {
        [only] => return Some(only),
        [] => {}
        _ => return None,
    }
    TOOL_ALIASES
        .iter()
        .find(|(_, aliases)| aliases.contains(&wanted.as_str()))
        .and_then(|(id, _)| ids.iter().copied().find(|registered| registered == id))
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDS: [&str; 6] = ["read", "edit", "apply_patch", "bash", "grep", "my_server_search"];

    #[test]
    fn case_whitespace_separators_and_namespaces_are_forgiven() {
        for (sent, id) in [
            ("read", "read"),
            (" Read ", "read"),
            ("READ", "read"),
            ("default_api.Read", "read"),
            ("functions.read", "read"),
            ("tools.apply_patch", "apply_patch"),
            ("apply-patch", "apply_patch"),
            ("ApplyPatch", "apply_patch"),
            ("`grep`", "grep"),
            ("read<|channel|>commentary", "read"),
            ("My-Server-Search", "my_server_search"),
        ] {
            assert_eq!(canonical(sent, &IDS), Some(id), "{sent}");
        }
    }

    #[test]
    fn common_names_from_other_agents_reach_our_tools() {
        for (sent, id) in [
            ("str_replace", "edit"),
            ("str_replace_based_edit_tool", "edit"),
            ("cat", "read"),
            ("read_file", "read"),
            ("run_shell_command", "bash"),
            ("container.exec", "bash"),
            ("ripgrep", "grep"),
            ("applyDiff", "apply_patch"),
        ] {
            assert_eq!(canonical(sent, &IDS), Some(id), "{sent}");
        }
    }

    #[test]
    fn seed_003_s_old_names_reach_their_tools_and_keep_their_defaults() {
        let ids = ["read", "bash", "monitor", "shell_output", "shell_tasks", "kill_shell", "list_dir"];
        for (sent, id) in [
            ("read_multiple_files", "read"),
            ("shell_command", "bash"),
            ("monitor_command", "monitor"),
            ("bash_output", "shell_output"),
            ("task_output", "shell_output"),
            ("monitor_events", "shell_output"),
            ("task_stop", "kill_shell"),
            ("read_directory", "list_dir"),
        ] {
            assert_eq!(canonical(sent, &ids), Some(id), "{sent}");
        }
        assert_eq!(implied_arguments("task_output"), vec![("wait", "exit")]);
        assert_eq!(implied_arguments("functions.TaskOutput"), vec![("wait", "exit")]);
        assert!(implied_arguments("bash_output").is_empty());
    }

    #[test]
    fn unknown_names_ambiguous_names_and_unregistered_targets_stay_unresolved() {
        assert_eq!(canonical("fly", &IDS), None);
        assert_eq!(canonical("", &IDS), None);
        assert_eq!(canonical("default_api.", &IDS), None);
        // `create_file` would be `write`, which this registry does not have.
        assert_eq!(canonical("create_file", &IDS), None);
        assert_eq!(canonical("a-b", &["a_b", "ab"]), None);
        // A registered tool that happens to carry an alias's name is called, not the alias's target.
        assert_eq!(canonical("search", &["grep", "search"]), Some("search"));
    }
}

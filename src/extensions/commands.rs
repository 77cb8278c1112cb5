//! Custom slash commands: Markdown files whose body is the prompt, with optional frontmatter (`description`,
//! `argument-hint`, `model`, `agent`). A file's name is the command's name; nested folders give `ns:name`
//! (`frontend/review.md` is `/frontend:review`). The body may hold argument placeholders (see `arguments`),
//! `` !`cmd` `` shell lines whose output is inlined (run by the session only after asking) and `@path` file
//! references.
//!
//! Owns the command format and discovery.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::{Origin, Problem, Root, arguments, frontmatter};

/// Folder levels searched below a root.
const MAX_DEPTH: usize = 4;
/// Files looked at per root.
const MAX_PER_ROOT: usize = 500;
/// Longest description shown in the menu when the file has none (its first line is used).
const MAX_DERIVED_DESCRIPTION: usize = 80;

static SHELL_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"!`([^`\n]+)`").ok());

/// One custom command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    pub name: String,
    pub description: String,
    /// What the menu shows for the arguments: the frontmatter's `argument-hint`, else the placeholders used.
    pub hint: Option<String>,
    pub model: Option<String>,
    pub agent: Option<String>,
    pub body: String,
    pub path: PathBuf,
    pub origin: Origin,
}

/// The shell lines (`` !`cmd` ``) of a body, in order.
pub fn shell_lines(body: &str) -> Vec<String> {
    let Some(re) = SHELL_LINE.as_ref() else { return Vec::new() };
    re.captures_iter(body).filter_map(|c| c.get(1)).map(|m| m.as_str().trim().to_string()).collect()
}

/// Replace each shell line in `body` by what `run` returns for it.
pub fn replace_shell_lines(body: &str, mut run: impl FnMut(&str) -> String) -> String {
    let Some(re) = SHELL_LINE.as_ref() else { return body.to_string() };
    re.replace_all(body, |caps: &regex::Captures| {
        run(caps.get(1).map(|m| m.as_str().trim()).unwrap_or_default())
    })
    .into_owned()
}

fn derived_description(body: &str) -> String {
    let line = body.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("Custom command");
    let line = line.trim_start_matches('#').trim();
    if line.chars().count() <= MAX_DERIVED_DESCRIPTION {
        return line.to_string();
    }
    format!("{}…", line.chars().take(MAX_DERIVED_DESCRIPTION).collect::<String>())
}

fn read(path: &Path, name: String, root: &Root) -> Result<CustomCommand, String> {
    let (origin, text) = (root.origin, super::read_text(path, &root.reach)?);
    let document = frontmatter::parse(&text)?;
    let body = document.body.trim().to_string();
    if body.is_empty() {
        return Err("it has no prompt text after its frontmatter".into());
    }
    let hint =
        document.get("argument-hint").map(String::from).or_else(|| arguments::hint(&body, origin.style()));
    Ok(CustomCommand {
        name,
        description: document
            .get("description")
            .map(String::from)
            .unwrap_or_else(|| derived_description(&body)),
        hint,
        model: document.get("model").map(String::from),
        agent: document.get("agent").map(String::from),
        body,
        path: path.to_path_buf(),
        origin,
    })
}

/// The Markdown files under `dir` with their command names, sorted.
fn files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), Vec::<String>::new())];
    while let Some((current, prefix)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let Some(file) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else { continue };
            if file.starts_with('.') {
                continue;
            }
            if path.is_dir() && prefix.len() + 1 < MAX_DEPTH {
                pending.push((path, [prefix.clone(), vec![file]].concat()));
            } else if let Some(stem) = file.strip_suffix(".md").filter(|_| super::present(&path)) {
                let name = [prefix.clone(), vec![stem.to_string()]].concat().join(":");
                found.push((name, path));
            }
        }
        if found.len() >= MAX_PER_ROOT {
            break;
        }
    }
    found.sort();
    found.truncate(MAX_PER_ROOT);
    found
}

/// The commands under `roots` (highest precedence first; a name is taken by its first file) and the files that
/// could not be used.
pub fn discover(roots: &[Root]) -> (Vec<CustomCommand>, Vec<Problem>) {
    let mut commands = Vec::new();
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for root in roots {
        for (name, path) in files(&root.dir) {
            if name.is_empty() || name.chars().any(char::is_whitespace) {
                problems.push(Problem { path, reason: "its name contains whitespace".into() });
                continue;
            }
            if seen.contains(&name) {
                continue;
            }
            match read(&path, name.clone(), root) {
                Ok(command) => {
                    seen.insert(name);
                    commands.push(command);
                }
                Err(reason) => problems.push(Problem { path, reason }),
            }
        }
    }
    (commands, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extensions::Scope;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn commands_take_their_names_from_files_and_folders_and_the_first_root_wins() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        write(
            &a.join("review.md"),
            "---\ndescription: Review the diff\nargument-hint: \"[focus]\"\nmodel: m\nagent: plan\n---\nReview: $ARGUMENTS\n",
        );
        write(&a.join("frontend/lint.md"), "# Lint the frontend\nRun the linter on $1 and $2.\n");
        write(&b.join("review.md"), "Other review\n");
        write(&b.join("empty.md"), "---\ndescription: nothing\n---\n");
        write(&b.join("notes.txt"), "not a command");
        let project = Origin { scope: Scope::Project, claude: false };
        let reach = crate::workspace::project_file::Scope::within(dir.path());
        let roots = [
            Root { dir: a.clone(), origin: project, reach: reach.clone() },
            Root { dir: b.clone(), origin: project, reach },
        ];
        let (commands, problems) = discover(&roots);
        let review = &commands[1];
        assert_eq!(commands.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["frontend:lint", "review"]);
        assert_eq!(
            (
                review.description.as_str(),
                review.hint.as_deref(),
                review.model.as_deref(),
                review.agent.as_deref()
            ),
            ("Review the diff", Some("[focus]"), Some("m"), Some("plan"))
        );
        assert_eq!(review.body, "Review: $ARGUMENTS");
        assert_eq!(
            (commands[0].description.as_str(), commands[0].hint.as_deref()),
            ("Lint the frontend", Some("<$1> <$2>"))
        );
        assert_eq!(
            problems,
            [Problem {
                path: b.join("empty.md"),
                reason: "it has no prompt text after its frontmatter".into()
            }]
        );
    }

    #[test]
    fn shell_lines_are_found_and_replaced_in_place() {
        let body = "Status:\n!`git status --short`\nLog: !`git log -1` done";
        assert_eq!(shell_lines(body), ["git status --short", "git log -1"]);
        assert_eq!(
            replace_shell_lines(body, |cmd| format!("<{cmd}>")),
            "Status:\n<git status --short>\nLog: <git log -1> done"
        );
    }
}

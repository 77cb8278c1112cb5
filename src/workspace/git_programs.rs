//! Would git's read-only commands (`git status`, `git diff`, `git log`, ...) run a program the repository
//! names? Asked of git itself, never parsed by hand: a hand-written reader of git's configuration format
//! disagrees with git on some inputs (a comment that ends in a backslash, two section headers on one line,
//! an `include.path`), and git is the one that will run the command.
//!
//! For the repository git finds from a directory and, recursively, every populated submodule (`git status`
//! and `git diff` run git inside each one, with its own configuration), inert queries
//! ([`git::inert_command`]) ask for the common git directory and whether it is bare, every key set in the
//! repository's own configuration (`git config --list --show-scope`: the `local` and `worktree` scopes,
//! with what their includes set, as git reads it) and the index's gitlinks (`git ls-files --stage`). The answer
//! is "runs nothing" only when no such key names a program ([`names_a_program`]), the hooks directory holds
//! only `*.sample` files (a status that refreshes the index runs `post-index-change`), and every query
//! answered in time. The user's and the system's configuration are theirs and left out. Outside any
//! repository git runs nothing.
//!
//! Owns that question and the list of program keys. The queries' form is `git`'s.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::git;

/// How long one query may take; past it the answer is "cannot tell", so "not read-only".
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// Submodules (at every depth) looked into; a repository with more is "cannot tell".
const MAX_SUBMODULES: usize = 64;

/// Sections every key of which names a program (or a driver that runs one).
const PROGRAM_SECTIONS: &[&str] = &[
    "filter",
    "credential",
    "gpg",
    "browser",
    "man",
    "difftool",
    "mergetool",
    "trailer",
    "sequence",
    "uploadpack",
    "pager",
];

/// Words that, in a key's section or name, make git run a program or look elsewhere for its repository.
const PROGRAM_WORDS: &[&str] = &[
    "fsmonitor",
    "pager",
    "external",
    "textconv",
    "command",
    "editor",
    "program",
    "askpass",
    "hook",
    "filter",
    "gitproxy",
    "cmd",
    "exec",
    "helper",
    "driver",
    "browser",
    "showsignature",
    "worktree",
];

/// Does the configuration key `key` (`section.name` or `section.subsection.name`, as git lists it) name a
/// program? The subsection is free text (a driver's or remote's name) and is not looked at.
pub fn names_a_program(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let section = key.split('.').next().unwrap_or("");
    let name = key.rsplit('.').next().unwrap_or("");
    PROGRAM_SECTIONS.contains(&section)
        || PROGRAM_WORDS.iter().any(|word| section.contains(word) || name.contains(word))
}

/// One query's result: did git succeed, its stdout, its stderr.
struct Answer {
    ok: bool,
    stdout: Vec<u8>,
    stderr: String,
}

/// A started query and the thread reading its output.
struct Pending {
    child: Child,
    output: mpsc::Receiver<(Vec<u8>, Vec<u8>)>,
}

fn start(dir: &Path, args: &[&str]) -> Option<Pending> {
    let mut command = git::inert_command(dir, &[]).ok()?;
    command.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().ok()?;
    let (mut out, mut err) = (child.stdout.take()?, child.stderr.take()?);
    let (send, output) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        // git writes little to stderr; a full stderr pipe is cut short by the time limit.
        let _ = out.read_to_end(&mut stdout);
        let _ = err.read_to_end(&mut stderr);
        let _ = send.send((stdout, stderr));
    });
    Some(Pending { child, output })
}

fn finish(pending: Option<Pending>) -> Option<Answer> {
    let mut pending = pending?;
    let Ok((stdout, stderr)) = pending.output.recv_timeout(QUERY_TIMEOUT) else {
        let _ = pending.child.kill();
        let _ = pending.child.wait();
        return None;
    };
    let ok = pending.child.wait().ok()?.success();
    Some(Answer { ok, stdout, stderr: String::from_utf8_lossy(&stderr).into_owned() })
}

/// Does the repository git finds from `dir` (and each submodule) leave git's read-only commands running no
/// program? `false` when it cannot tell.
pub fn runs_nothing(dir: &Path) -> bool {
    let mut budget = MAX_SUBMODULES;
    let mut seen = Vec::new();
    repository_runs_nothing(dir, &mut budget, &mut seen)
}

fn repository_runs_nothing(dir: &Path, budget: &mut usize, seen: &mut Vec<PathBuf>) -> bool {
    // Started together, read in turn: one query's time, not three.
    let located = start(
        dir,
        &["rev-parse", "--path-format=absolute", "--git-common-dir", "--is-bare-repository", "--show-cdup"],
    );
    let config = start(dir, &["config", "--list", "--show-scope", "-z"]);
    let gitlinks = start(dir, &["ls-files", "--stage", "-z", "--full-name", "--", ":/"]);
    let (located, config, gitlinks) = (finish(located), finish(config), finish(gitlinks));
    let Some(located) = located else { return false };
    if !located.ok {
        // Outside any repository git reads no repository configuration (and `git status` fails).
        return located.stderr.starts_with("fatal: not a git repository");
    }
    let located = String::from_utf8_lossy(&located.stdout).into_owned();
    let mut lines = located.lines();
    let (Some(common), Some(bare)) = (lines.next(), lines.next()) else { return false };
    let common = PathBuf::from(common);
    if seen.contains(&common) {
        // A submodule directory that is not checked out: git found the repository already looked at.
        return true;
    }
    seen.push(common.clone());
    let Some(config) = config.filter(|c| c.ok) else { return false };
    if own_keys(&config.stdout).any(|key| names_a_program(&key)) || !hooks_are_samples(&common.join("hooks"))
    {
        return false;
    }
    if bare == "true" {
        return true;
    }
    let top = dir.join(lines.next().unwrap_or(""));
    let Some(gitlinks) = gitlinks.filter(|g| g.ok) else { return false };
    submodules(&gitlinks.stdout).iter().all(|path| {
        let sub = top.join(path);
        if !sub.join(".git").exists() {
            return true;
        }
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        repository_runs_nothing(&sub, budget, seen)
    })
}

/// The keys `git config --list --show-scope -z` reports from the repository's own files (and what they
/// include): `scope NUL key LF value NUL`.
fn own_keys(listing: &[u8]) -> impl Iterator<Item = String> + '_ {
    let mut fields = listing.split(|b| *b == 0);
    std::iter::from_fn(move || {
        loop {
            let scope = fields.next()?;
            let entry = fields.next()?;
            if scope == b"local" || scope == b"worktree" {
                let key = entry.split(|b| *b == b'\n').next().unwrap_or_default();
                return Some(String::from_utf8_lossy(key).into_owned());
            }
        }
    })
}

/// The gitlinks (mode 160000) in `git ls-files --stage -z` output: `mode SP object SP stage TAB path NUL`.
fn submodules(listing: &[u8]) -> Vec<String> {
    listing
        .split(|b| *b == 0)
        .filter(|record| record.starts_with(b"160000 "))
        .filter_map(|record| record.splitn(2, |b| *b == b'\t').nth(1))
        .map(|path| String::from_utf8_lossy(path).into_owned())
        .collect()
}

fn hooks_are_samples(hooks: &Path) -> bool {
    match std::fs::read_dir(hooks) {
        Ok(entries) => entries.flatten().all(|e| e.file_name().to_string_lossy().ends_with(".sample")),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_keys_are_judged_by_section_and_name_never_by_the_free_text_subsection() {
        for key in [
            "core.fsmonitor",
            "core.pager",
            "pager.log",
            "diff.external",
            "diff.x.textconv",
            "diff.x.command",
            "filter.Odd.clean",
            "filter.lfs.required",
            "merge.x.driver",
            "credential.helper",
            "gpg.ssh.program",
            "core.hooksPath",
            "core.sshCommand",
            "core.askPass",
            "sequence.editor",
            "log.showSignature",
            "core.worktree",
            "uploadpack.packObjectsHook",
        ] {
            assert!(names_a_program(key), "{key}");
        }
        for key in ["core.bare", "remote.pager-filter.url", "user.name", "include.path", "branch.main.merge"]
        {
            assert!(!names_a_program(key), "{key}");
        }
    }

    #[test]
    fn only_the_repository_s_own_scopes_count_and_gitlinks_are_read_from_the_index_listing() {
        let listing = b"global\0core.pager\nless\0local\0core.bare\nfalse\0worktree\0filter.x.clean\nrun\0command\0core.fsmonitor\nfalse\0";
        assert_eq!(own_keys(listing).collect::<Vec<_>>(), vec!["core.bare", "filter.x.clean"]);
        let index = b"100644 aa 0\ta.txt\x00160000 bb 0\tlib/sub\x00120000 cc 0\tlink\x00";
        assert_eq!(submodules(index), vec!["lib/sub".to_string()]);
    }
}

//! The ignore stack: the one definition of what searches, listings and suggestions leave out. From highest
//! precedence to lowest:
//!
//! 1. version-control directories ([`VCS_DIRS`]): always left out, nothing re-includes them;
//! 2. `.tinycodeignore`, the user's override layer (`!vendor/` re-includes what a layer below leaves out);
//! 3. `.ignore`;
//! 4. `.gitignore`, also outside a git repository;
//! 5. `.git/info/exclude` of a repository;
//! 6. the user's global git excludes file (`core.excludesFile`, else `~/.config/git/ignore`);
//! 7. the built-in defaults ([`DEFAULTS`]): dependency, cache and build folders. The names that are also
//!    ordinary source folders (`bin`, `build`, `vendor`, ...) are anchored at the project root, so
//!    `src/bin/main.rs` is never hidden.
//!
//! Within one kind of file the nearest directory wins, and the last matching line of a file wins (git's
//! rules). Rules of the searched root's parent directories apply too, as in ripgrep.
//!
//! The files are read like every other file (`regular`: type checked, never blocking, capped): the `ignore`
//! crate's own walker opens them with a blocking `open`, so a FIFO named `.gitignore` in a hostile repository
//! hung every search, and a link to an endless file grew without bound. A file that cannot be read safely
//! counts as absent. Only the crate's pattern matcher is used.
//!
//! Owns reading and applying ignore files. Must not walk directories.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::regular;

/// Larger ignore files are treated as absent.
pub const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// Version-control directories: never searched, listed or suggested, whatever an ignore file says.
pub const VCS_DIRS: [&str; 5] = [".git", ".hg", ".svn", ".bzr", ".jj"];

/// The ignore files read in each directory, highest precedence first.
pub const IGNORE_FILES: [&str; 3] = [".tinycodeignore", ".ignore", ".gitignore"];

/// A repository's own exclude file, read where a directory holds `.git`.
const GIT_EXCLUDE: &str = ".git/info/exclude";

/// Kinds of per-directory rules, in precedence order: the three [`IGNORE_FILES`], then [`GIT_EXCLUDE`].
const KINDS: usize = 4;

/// The built-in defaults, lowest precedence (any ignore file can re-include with `!`). A leading `/` anchors
/// a name at the project root: those names are also ordinary source folders deeper down.
pub const DEFAULTS: &[&str] = &[
    // Dependencies and environments, wherever they are.
    "node_modules/",
    "bower_components/",
    "jspm_packages/",
    ".venv/",
    "venv/",
    ".tox/",
    ".nox/",
    ".eggs/",
    "*.egg-info/",
    ".bundle/",
    ".gradle/",
    ".dart_tool/",
    // Caches and build output of specific tools, wherever they are.
    "__pycache__/",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".next/",
    ".nuxt/",
    ".svelte-kit/",
    ".turbo/",
    ".parcel-cache/",
    ".terraform/",
    ".serverless/",
    ".zig-cache/",
    "zig-out/",
    "htmlcov/",
    ".idea/",
    ".vs/",
    ".tinycode/",
    // Names that are also source folders: only at the project root.
    "/bin/",
    "/obj/",
    "/build/",
    "/dist/",
    "/out/",
    "/target/",
    "/vendor/",
    "/tmp/",
    "/temp/",
    "/cache/",
    "/.cache/",
    "/logs/",
    "/env/",
    "/coverage/",
    // Generated files.
    "*.pyc",
    "*.pyo",
    "*.class",
    "*.swp",
    "*.swo",
    ".DS_Store",
    "Thumbs.db",
];

/// The rules of `file`, whose patterns are relative to `dir`, if it can be read safely.
fn read_rules(dir: &Path, file: &Path) -> Option<Gitignore> {
    let read = regular::read(file, MAX_IGNORE_FILE_BYTES).ok().filter(|r| r.complete)?;
    rules_from_text(dir, file, &String::from_utf8_lossy(&read.bytes))
}

/// Rules from the text of an ignore file. A line that is not a valid pattern is skipped, as git does.
fn rules_from_text(dir: &Path, file: &Path, text: &str) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(dir);
    for line in text.trim_start_matches('\u{feff}').lines() {
        let _ = builder.add_line(Some(file.to_path_buf()), line);
    }
    builder.build().ok().filter(|rules| !rules.is_empty())
}

/// Which ignore files a directory holds, as its listing shows (so the walk asks the disk only for those).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Present {
    /// Per entry of [`IGNORE_FILES`].
    pub files: [bool; 3],
    /// The directory holds `.git` (a repository root, whose exclude file applies).
    pub git: bool,
}

impl Present {
    /// Note one entry of the directory's listing.
    pub fn note(&mut self, name: &std::ffi::OsStr) {
        if let Some(i) = IGNORE_FILES.iter().position(|f| name == *f) {
            self.files[i] = true;
        } else if name == ".git" {
            self.git = true;
        }
    }

    /// Every file might be there (the directory was not listed).
    pub fn unknown() -> Self {
        Self { files: [true; 3], git: true }
    }

    fn any(&self) -> bool {
        self.git || self.files.iter().any(|f| *f)
    }
}

/// The rules one directory's files define, by kind.
#[derive(Debug, Default)]
struct Node {
    rules: [Option<Gitignore>; KINDS],
    parent: Option<Arc<Node>>,
}

/// A session's ignore stack: the project root the defaults are anchored at and the user's global excludes.
/// Cheap to share; searches start from it with [`Stack::level`].
#[derive(Debug, Clone)]
pub struct Stack {
    anchor: PathBuf,
    /// Path and text of the global excludes file, read once.
    global: Option<(PathBuf, Arc<str>)>,
}

impl Stack {
    /// A stack whose defaults are anchored at `anchor` (the session's directory) and which applies the global
    /// excludes file at `global_excludes`, when there is one that can be read.
    pub fn new(anchor: &Path, global_excludes: Option<&Path>) -> Self {
        let global = global_excludes.and_then(|path| {
            let read = regular::read(path, MAX_IGNORE_FILE_BYTES).ok().filter(|r| r.complete)?;
            Some((path.to_path_buf(), Arc::from(String::from_utf8_lossy(&read.bytes).as_ref())))
        });
        Self { anchor: anchor.to_path_buf(), global }
    }

    /// The stack without a global excludes file.
    pub fn plain(anchor: &Path) -> Self {
        Self::new(anchor, None)
    }

    /// The project root of a search of `root`: the anchor when `root` is inside it, else `root` itself.
    fn anchor_for<'a>(&'a self, root: &'a Path) -> &'a Path {
        if root.starts_with(&self.anchor) { &self.anchor } else { root }
    }

    /// The rules that apply to the entries of `dir`: every layer, with the ignore files of `dir` and of the
    /// directories above it read (a search starts here with its root).
    pub fn level(&self, dir: &Path) -> Level {
        let anchor = self.anchor_for(dir).to_path_buf();
        let defaults = |lines: &mut dyn Iterator<Item = &&str>| {
            let mut builder = GitignoreBuilder::new(&anchor);
            for line in lines {
                let _ = builder.add_line(None, line);
            }
            builder.build().ok()
        };
        let global = self.global.as_ref().and_then(|(path, text)| rules_from_text(&anchor, path, text));
        let fixed = Arc::new(Fixed {
            defaults: defaults(&mut DEFAULTS.iter()),
            // A default ending in `/` matches only directories: files are checked against the others alone.
            file_defaults: defaults(&mut DEFAULTS.iter().filter(|line| !line.ends_with('/'))),
            global,
        });
        let mut level = Level { node: Arc::new(Node::default()), fixed };
        let dirs: Vec<&Path> = dir.ancestors().collect();
        for dir in dirs.into_iter().rev() {
            level = level.enter(dir, Present::unknown());
        }
        level
    }
}

/// The layers that do not depend on the directory.
#[derive(Debug)]
struct Fixed {
    defaults: Option<Gitignore>,
    file_defaults: Option<Gitignore>,
    global: Option<Gitignore>,
}

/// The rules that apply inside one directory: its own ignore files, those of the directories above it, and
/// the global and built-in layers.
#[derive(Debug, Clone)]
pub struct Level {
    node: Arc<Node>,
    fixed: Arc<Fixed>,
}

impl Level {
    /// The rules inside `dir`, a child of this level's directory, which holds the ignore files in `present`.
    pub fn enter(&self, dir: &Path, present: Present) -> Level {
        if !present.any() {
            return self.clone();
        }
        let mut rules: [Option<Gitignore>; KINDS] = Default::default();
        for (i, name) in IGNORE_FILES.iter().enumerate() {
            if present.files[i] {
                rules[i] = read_rules(dir, &dir.join(name));
            }
        }
        if present.git {
            rules[KINDS - 1] = read_rules(dir, &dir.join(GIT_EXCLUDE));
        }
        if rules.iter().all(Option::is_none) {
            return self.clone();
        }
        Level { node: Arc::new(Node { rules, parent: Some(self.node.clone()) }), fixed: self.fixed.clone() }
    }

    /// Whether the entry `path` (inside this level's directory) is left out.
    pub fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        if is_dir && path.file_name().is_some_and(|name| VCS_DIRS.iter().any(|v| name == *v)) {
            return true;
        }
        for kind in 0..KINDS {
            let mut node = Some(&*self.node);
            while let Some(current) = node {
                if let Some(rules) = &current.rules[kind] {
                    match rules.matched(path, is_dir) {
                        Match::Ignore(_) => return true,
                        Match::Whitelist(_) => return false,
                        Match::None => {}
                    }
                }
                node = current.parent.as_deref();
            }
        }
        let defaults = if is_dir { &self.fixed.defaults } else { &self.fixed.file_defaults };
        for rules in [&self.fixed.global, defaults].into_iter().flatten() {
            match rules.matched(path, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        false
    }
}

/// Whether `path` is left out by the stack, checking every directory from `root` down to it (a path under an
/// ignored directory is ignored). For single lookups (suggestions); a walk uses [`Level`] as it descends.
pub fn ignored_below(stack: &Stack, root: &Path, path: &Path, is_dir: bool) -> bool {
    let Ok(rel) = path.strip_prefix(root) else { return false };
    let mut level = stack.level(root);
    let mut dir = root.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for (i, part) in parts.iter().enumerate() {
        let next = dir.join(part);
        let last = i + 1 == parts.len();
        if level.ignores(&next, !last || is_dir) {
            return true;
        }
        if !last {
            level = level.enter(&next, Present::unknown());
        }
        dir = next;
    }
    false
}

#[cfg(test)]
mod tests;

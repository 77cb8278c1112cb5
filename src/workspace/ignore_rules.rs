//! The ignore rules a walk honours: in every directory, `.ignore`, then `.gitignore`, then `.git/info/exclude`;
//! a deeper directory's rules win over its parents', and `!pattern` re-includes. They apply also outside a git
//! repository and from the searched root's parent directories, as ripgrep does.
//!
//! The files are read like every other file (`regular`: type checked, never blocking, capped): the `ignore`
//! crate's own walker opens them with a blocking `open`, so a FIFO named `.gitignore` in a hostile repository
//! hung every search, and a link to an endless file grew without bound. A file that cannot be read safely
//! counts as absent. Only the crate's pattern matcher is used.
//!
//! Owns reading and applying ignore files. Must not walk directories.

use std::path::Path;
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::regular;

/// Larger ignore files are treated as absent.
pub const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// The files read in each directory, highest precedence first.
const IGNORE_FILES: [&str; 3] = [".ignore", ".gitignore", ".git/info/exclude"];

/// The rules of one directory and of every directory above it.
#[derive(Debug, Default)]
pub struct Chain {
    rules: Vec<Gitignore>,
    parent: Option<Arc<Chain>>,
}

/// The rules of `file`, which belongs to `dir`, if it can be read safely.
fn read_rules(dir: &Path, file: &Path) -> Option<Gitignore> {
    let read = regular::read(file, MAX_IGNORE_FILE_BYTES).ok().filter(|r| r.complete)?;
    let text = String::from_utf8_lossy(&read.bytes);
    let mut builder = GitignoreBuilder::new(dir);
    for line in text.trim_start_matches('\u{feff}').lines() {
        // A line that is not a valid pattern is skipped, as git does.
        let _ = builder.add_line(Some(file.to_path_buf()), line);
    }
    builder.build().ok().filter(|rules| !rules.is_empty())
}

/// The rules `dir`'s own ignore files define (possibly none).
fn rules_of(dir: &Path) -> Vec<Gitignore> {
    IGNORE_FILES.iter().filter_map(|name| read_rules(dir, &dir.join(name))).collect()
}

impl Chain {
    /// The rules that apply inside `root`: those of its parent directories, up to `/`.
    pub fn above(root: &Path) -> Arc<Chain> {
        let mut chain = Arc::new(Chain::default());
        let parents: Vec<&Path> = root.ancestors().skip(1).collect();
        for dir in parents.into_iter().rev() {
            chain = chain.enter(dir);
        }
        chain
    }

    /// The rules that apply inside `dir`, a child of the directory this chain belongs to.
    pub fn enter(self: &Arc<Self>, dir: &Path) -> Arc<Chain> {
        let rules = rules_of(dir);
        if rules.is_empty() {
            return self.clone();
        }
        Arc::new(Chain { rules, parent: Some(self.clone()) })
    }

    /// Whether `path` (inside every directory of this chain) is ignored.
    pub fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        let mut node = Some(self);
        while let Some(chain) = node {
            for rules in &chain.rules {
                match rules.matched(path, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            node = chain.parent.as_deref();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn deeper_rules_win_and_negations_re_include() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(&root.join(".gitignore"), "*.log\nbuild/\n");
        write(&root.join("keep/.gitignore"), "!important.log\n");
        write(&root.join(".ignore"), "!build/\n");
        write(&root.join(".git/info/exclude"), "secret-notes.txt\n");
        let top = Chain::above(root).enter(root);
        assert!(top.ignores(&root.join("a.log"), false));
        assert!(!top.ignores(&root.join("build"), true), ".ignore outranks .gitignore");
        assert!(top.ignores(&root.join("secret-notes.txt"), false));
        let keep = top.enter(&root.join("keep"));
        assert!(!keep.ignores(&root.join("keep/important.log"), false));
        assert!(keep.ignores(&root.join("keep/other.log"), false));
    }

    #[test]
    fn ignore_files_that_are_fifos_or_devices_count_as_absent_and_never_block() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let name =
            std::ffi::CString::new(root.join(".gitignore").into_os_string().into_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        std::os::unix::fs::symlink("/dev/zero", root.join(".ignore")).unwrap();
        let chain = Chain::above(root).enter(root);
        assert!(chain.rules.is_empty());
        assert!(!chain.ignores(&root.join("a.log"), false));
    }
}

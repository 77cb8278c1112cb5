//! The workspace boundary: where a path really leads, and whether that is inside the session's roots (its
//! directory and the editor's `additionalDirectories`). Every component is resolved, including a tail that
//! does not exist yet: a dangling symlink is followed through its target text, link after link, up to
//! [`MAX_SYMLINKS`]. So `ws/link/new.txt`, with `link` pointing at a missing directory outside, is outside.
//!
//! Owns path resolution and the inside/outside decision. Reads only link metadata; never opens a file.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Links followed while resolving one path before it counts as a loop (Linux's own limit).
pub const MAX_SYMLINKS: usize = 40;

/// One step left to resolve.
enum Step {
    Parent,
    Name(OsString),
}

fn push_steps(stack: &mut Vec<Step>, path: &Path) {
    let steps = path.components().filter_map(|c| match c {
        Component::ParentDir => Some(Step::Parent),
        Component::Normal(name) => Some(Step::Name(name.to_os_string())),
        Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
    });
    let steps: Vec<Step> = steps.collect();
    stack.extend(steps.into_iter().rev());
}

/// The real path of the absolute `path`: every symlink resolved, also in components that do not exist (a
/// link's target is followed whether or not it exists). Fails only on a loop of links.
pub fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let mut stack = Vec::new();
    push_steps(&mut stack, path);
    let mut out = PathBuf::from("/");
    let mut links = 0;
    while let Some(step) = stack.pop() {
        let name = match step {
            Step::Parent => {
                out.pop();
                continue;
            }
            Step::Name(name) => name,
        };
        let candidate = out.join(&name);
        let is_link = std::fs::symlink_metadata(&candidate).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            out = candidate;
            continue;
        }
        links += 1;
        if links > MAX_SYMLINKS {
            return Err(std::io::Error::other(format!(
                "too many levels of symbolic links at {}",
                candidate.display()
            )));
        }
        let target = std::fs::read_link(&candidate)?;
        if target.is_absolute() {
            out = PathBuf::from("/");
        }
        push_steps(&mut stack, &target);
    }
    Ok(out)
}

/// Where a path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The resolved path, spelled under the root that holds it as the session names that root (so a session
    /// opened at `/tmp/ws` whose real path is `/private/tmp/ws` keeps seeing `/tmp/ws/...`).
    pub path: PathBuf,
    /// Whether it is inside one of the session's roots.
    pub inside: bool,
}

/// The session's roots as given and as resolved.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    roots: Vec<(PathBuf, PathBuf)>,
}

impl Roots {
    /// `dirs` are absolute; the first is the session's directory.
    pub fn new(dirs: &[PathBuf]) -> Self {
        let roots = dirs.iter().map(|d| (d.clone(), resolve(d).unwrap_or_else(|_| d.clone()))).collect();
        Self { roots }
    }

    /// The roots as given.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.roots.iter().map(|(given, _)| given.clone()).collect()
    }

    /// Resolve the absolute `path` and place it inside or outside the roots.
    pub fn locate(&self, path: &Path) -> std::io::Result<Located> {
        let real = resolve(path)?;
        let holder = self
            .roots
            .iter()
            .filter(|(_, root)| real.starts_with(root))
            .max_by_key(|(_, root)| root.components().count());
        Ok(match holder {
            Some((given, root)) => {
                let rest = real.strip_prefix(root).unwrap_or(Path::new(""));
                let path = if rest.as_os_str().is_empty() { given.clone() } else { given.join(rest) };
                Located { path, inside: true }
            }
            None => Located { path: real, inside: false },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_dangling_link_is_followed_through_its_missing_target() {
        let dir = tempfile::tempdir().unwrap();
        let real = resolve(dir.path()).unwrap();
        std::fs::create_dir(real.join("ws")).unwrap();
        symlink(real.join("outside/new-dir"), real.join("ws/out")).unwrap();
        symlink("../elsewhere/file.txt", real.join("ws/rel")).unwrap();
        assert_eq!(resolve(&real.join("ws/out/a/b.txt")).unwrap(), real.join("outside/new-dir/a/b.txt"));
        assert_eq!(resolve(&real.join("ws/rel")).unwrap(), real.join("elsewhere/file.txt"));
        assert!(!real.join("outside").exists(), "resolving creates nothing");
    }

    #[test]
    fn chains_of_links_resolve_and_loops_fail() {
        let dir = tempfile::tempdir().unwrap();
        let real = resolve(dir.path()).unwrap();
        std::fs::create_dir(real.join("target")).unwrap();
        symlink("target", real.join("one")).unwrap();
        symlink("one/../one", real.join("two")).unwrap();
        assert_eq!(resolve(&real.join("two/x")).unwrap(), real.join("target/x"));
        symlink("loop-b", real.join("loop-a")).unwrap();
        symlink("loop-a", real.join("loop-b")).unwrap();
        let err = resolve(&real.join("loop-a/x")).unwrap_err();
        assert!(err.to_string().starts_with("too many levels of symbolic links at "), "{err}");
    }

    #[test]
    fn paths_are_placed_under_the_root_as_the_session_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let real = resolve(dir.path()).unwrap();
        std::fs::create_dir_all(real.join("ws/src")).unwrap();
        std::fs::create_dir_all(real.join("extra")).unwrap();
        symlink(real.join("ws"), real.join("alias")).unwrap();
        symlink(&real, real.join("ws/escape")).unwrap();
        let roots = Roots::new(&[real.join("alias"), real.join("extra")]);
        let at = |p: &str| roots.locate(&real.join(p)).unwrap();
        assert_eq!(at("ws/src/a.rs"), Located { path: real.join("alias/src/a.rs"), inside: true });
        assert_eq!(at("extra/new/b.rs"), Located { path: real.join("extra/new/b.rs"), inside: true });
        assert_eq!(at("ws/escape/other.txt"), Located { path: real.join("other.txt"), inside: false });
        assert_eq!(at("alias"), Located { path: real.join("alias"), inside: true });
        assert!(!at("extras").inside, "a sibling sharing a prefix is outside");
    }
}

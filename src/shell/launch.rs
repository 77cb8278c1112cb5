//! The one launcher for programs tinycode starts on its own, with no tool call in between: formatters, language
//! servers, MCP stdio servers, the git commands of `workspace::git`, and probes. (The model's commands are not
//! launched here: they run through `process::spawn` after their ask.)
//!
//! In a project the user has not trusted, a program is found outside the project only: `PATH` entries that are
//! empty, relative, missing or inside a project root (a project `.venv/bin`, `node_modules/.bin`) are skipped, a
//! program that resolves into a root (through a symlink too) is refused, and the program gets that cleaned `PATH`.
//! Toolchain proxies are pinned to the user's own choice: `RUSTUP_TOOLCHAIN` names the user's default toolchain
//! (from rustup's settings outside the project), so a `rust-toolchain.toml` in the repository cannot name the
//! binary a rustup proxy runs. Formatters and language servers wait until the project is trusted; the first one
//! held is told, once, to the hook the session installs. Once trusted, the same launcher runs them with the
//! user's environment as it is.
//!
//! Owns finding a program and the environment it starts with. Must not start, wait for or signal a process (that
//! is `process`), nor decide trust (that is `config::trust` and the session).

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use super::environment::Environment;

/// What a program is started for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Formatter,
    LanguageServer,
    McpServer,
    Git,
    Probe,
}

impl Purpose {
    /// Formatters and language servers read the project as they run (toolchain files, build scripts, plug-ins,
    /// project settings), whoever configured them: they wait until the project is trusted.
    pub fn waits_for_trust(self) -> bool {
        matches!(self, Purpose::Formatter | Purpose::LanguageServer)
    }
}

/// Why a program was not started. Handled by the caller, where its other start failures go: a formatter's in the
/// write's result, a language server's in its note, an MCP server's in its start error, git's as unavailable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    #[error("`{program}` waits until you trust this project")]
    WaitsForTrust { program: String },
    #[error("`{program}` was not found on PATH")]
    NotFound { program: String },
    #[error("`{program}` was not found on PATH outside the project (the project is not trusted)")]
    NotFoundOutside { program: String },
    #[error(
        "`{program}` is {path}, inside the project, which you have not trusted: tinycode does not run it by itself"
    )]
    InsideProject { program: String, path: PathBuf },
    #[error("`{program}` is a relative path, which would run a file of the project you have not trusted")]
    Relative { program: String },
}

/// A program ready to start: its absolute path and exactly the environment it gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    pub program: PathBuf,
    pub environment: Environment,
}

impl Ready {
    /// A command for the program with its environment (arguments, directory and pipes are the caller's).
    pub fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        self.environment.apply(&mut command);
        command
    }
}

/// Told once when the first formatter or language server is held for trust.
pub type Hold = Arc<dyn Fn() + Send + Sync>;

/// The launcher of one session (shared with its subagents): the project's roots, whether the user trusts the
/// project, and the session's command environment.
pub struct Launcher {
    roots: RwLock<Vec<PathBuf>>,
    trusted: AtomicBool,
    environment: Arc<Environment>,
    hold: Mutex<Option<Hold>>,
    held: AtomicBool,
    /// The user's default Rust toolchain, read once (only when a program starts in an untrusted project).
    toolchain: OnceLock<OsString>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// `path` and, when it differs, the path with symlinks resolved (both are matched against roots).
fn forms(path: &Path) -> Vec<PathBuf> {
    let mut forms = vec![path.to_path_buf()];
    if let Ok(real) = std::fs::canonicalize(path)
        && real != path
    {
        forms.push(real);
    }
    forms
}

fn inside(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| path.starts_with(root))
}

fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Where programs are looked for when there is no `PATH` (as `execvp` does).
const DEFAULT_PATH: &str = "/usr/bin:/bin";

/// The directories of `path_var` (without one, [`DEFAULT_PATH`]'s) a program may come from when the project is not
/// trusted: absolute, existing, and outside every root (as written and with symlinks resolved), each as its
/// resolved path.
pub fn outside_dirs(path_var: Option<&OsStr>, roots: &[PathBuf]) -> Vec<PathBuf> {
    let path_var = path_var.unwrap_or(OsStr::new(DEFAULT_PATH));
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in std::env::split_paths(path_var).filter(|d| d.is_absolute()) {
        let Ok(real) = std::fs::canonicalize(&dir) else { continue };
        if !inside(&dir, roots) && !inside(&real, roots) && !dirs.contains(&real) {
            dirs.push(real);
        }
    }
    dirs
}

/// Where `program` comes from when the project (`roots`, as written and resolved) is not trusted: an absolute
/// path outside the roots, or the first executable of that name in [`outside_dirs`] that resolves outside them.
pub fn resolve_outside(program: &str, dirs: &[PathBuf], roots: &[PathBuf]) -> Result<PathBuf, LaunchError> {
    let given = Path::new(program);
    let refused = |path: &Path| LaunchError::InsideProject { program: program.into(), path: path.into() };
    if given.is_absolute() {
        // A missing file fails when it is started, with the system's own words.
        return match forms(given).iter().find(|f| inside(f, roots)) {
            Some(form) => Err(refused(form)),
            None => Ok(given.to_path_buf()),
        };
    }
    if program.contains('/') {
        return Err(LaunchError::Relative { program: program.into() });
    }
    let mut first_inside = None;
    for candidate in dirs.iter().map(|dir| dir.join(program)).filter(|c| executable(c)) {
        match forms(&candidate).into_iter().find(|f| inside(f, roots)) {
            None => return Ok(candidate),
            Some(form) => {
                first_inside.get_or_insert(form);
            }
        }
    }
    Err(match first_inside {
        Some(path) => refused(&path),
        None => LaunchError::NotFoundOutside { program: program.into() },
    })
}

/// Where `program` comes from in a trusted project: itself when absolute, `cwd`'s file for a relative path, else
/// the first executable of that name in the absolute entries of `path_var`.
fn resolve_trusted(program: &str, cwd: &Path, path_var: Option<&OsStr>) -> Result<PathBuf, LaunchError> {
    let given = Path::new(program);
    if given.is_absolute() || program.contains('/') {
        return Ok(cwd.join(given));
    }
    let found = path_var.and_then(|var| {
        std::env::split_paths(var)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(program))
            .find(|candidate| executable(candidate))
    });
    found.ok_or_else(|| LaunchError::NotFound { program: program.into() })
}

/// The user's default toolchain in rustup's settings (`$RUSTUP_HOME/settings.toml`, else `~/.rustup`).
pub fn default_toolchain(env: &Environment) -> Option<String> {
    let home = match env.get("RUSTUP_HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home),
        None => PathBuf::from(env.get("HOME").filter(|h| !h.is_empty())?).join(".rustup"),
    };
    let text = std::fs::read_to_string(home.join("settings.toml")).ok()?;
    let settings: toml::Table = toml::from_str(&text).ok()?;
    settings.get("default_toolchain")?.as_str().map(str::to_string)
}

/// The roots git must not take a program from when it runs in `dir`: `dir` and its work tree's top (the nearest
/// folder above it holding `.git`), as written and resolved.
fn work_tree_roots(dir: &Path) -> Vec<PathBuf> {
    let mut roots = forms(dir);
    if let Some(top) = dir.ancestors().find(|d| d.join(".git").exists()) {
        roots.extend(forms(top));
    }
    roots
}

/// `git` for the commands `workspace::git` runs in `dir`, found on the agent's `PATH` outside `dir`'s work tree
/// (as for a project the user has not trusted), with the `PATH` to give it (the same directories: programs git
/// starts itself are not found in the project either). The caller builds the rest of its environment.
pub fn git(dir: &Path) -> Result<(PathBuf, std::ffi::OsString), LaunchError> {
    let roots = work_tree_roots(dir);
    let dirs = outside_dirs(std::env::var_os("PATH").as_deref(), &roots);
    let program = resolve_outside("git", &dirs, &roots)?;
    let path = std::env::join_paths(&dirs).unwrap_or_default();
    Ok((program, path))
}

/// A probe (`lsof` where there is no `/proc`), found on the agent's `PATH` outside the directory it runs in.
pub fn probe(program: &str) -> Result<std::process::Command, LaunchError> {
    let roots = std::env::current_dir().map(|cwd| forms(&cwd)).unwrap_or_default();
    let dirs = outside_dirs(std::env::var_os("PATH").as_deref(), &roots);
    Ok(std::process::Command::new(resolve_outside(program, &dirs, &roots)?))
}

impl Launcher {
    /// A launcher for a project at `roots` (absolute; the session's directory first) that is not trusted yet.
    pub fn new(roots: &[PathBuf], environment: Arc<Environment>) -> Self {
        Self {
            roots: RwLock::new(roots.iter().flat_map(|r| forms(r)).collect()),
            trusted: AtomicBool::new(false),
            environment,
            hold: Mutex::new(None),
            held: AtomicBool::new(false),
            toolchain: OnceLock::new(),
        }
    }

    /// The session's command environment (the base of every program's).
    pub fn environment(&self) -> &Arc<Environment> {
        &self.environment
    }

    /// The user trusts the project (or no longer does).
    pub fn set_trusted(&self, trusted: bool) {
        self.trusted.store(trusted, Ordering::SeqCst);
    }

    pub fn trusted(&self) -> bool {
        self.trusted.load(Ordering::SeqCst)
    }

    /// Count `roots` as the project too (a worktree the session moved into, the editor's directories).
    pub fn add_roots(&self, roots: &[PathBuf]) {
        let mut known = match self.roots.write() {
            Ok(known) => known,
            Err(poisoned) => poisoned.into_inner(),
        };
        for form in roots.iter().flat_map(|r| forms(r)) {
            if !known.contains(&form) {
                known.push(form);
            }
        }
    }

    fn roots(&self) -> Vec<PathBuf> {
        match self.roots.read() {
            Ok(roots) => roots.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Call `hook` the first time a formatter or language server is held for trust.
    pub fn on_hold(&self, hook: Hold) {
        *lock(&self.hold) = Some(hook);
    }

    /// Whether programs for `purpose` wait for trust now. The first time one does, the hook is told (once).
    pub fn holds(&self, purpose: Purpose) -> bool {
        if !purpose.waits_for_trust() || self.trusted() {
            return false;
        }
        if !self.held.swap(true, Ordering::SeqCst) {
            let hook = lock(&self.hold).clone();
            if let Some(hook) = hook {
                hook();
            }
        }
        true
    }

    /// `program` for `purpose`, to run in `cwd`: where it comes from and the environment it gets.
    pub fn prepare(&self, purpose: Purpose, program: &str, cwd: &Path) -> Result<Ready, LaunchError> {
        if self.holds(purpose) {
            return Err(LaunchError::WaitsForTrust { program: program.into() });
        }
        let path_var = self.environment.get("PATH");
        if self.trusted() {
            let program = resolve_trusted(program, cwd, path_var)?;
            return Ok(Ready { program, environment: self.environment.as_ref().clone() });
        }
        let roots = self.roots();
        let dirs = outside_dirs(path_var, &roots);
        let program = resolve_outside(program, &dirs, &roots)?;
        // Never an empty PATH: an empty entry would mean the current directory, the project.
        let path = std::env::join_paths(&dirs)
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "/nonexistent".into());
        let toolchain = self.toolchain.get_or_init(|| self.user_toolchain(&roots)).clone();
        let environment = self.environment.with([("PATH", path), ("RUSTUP_TOOLCHAIN", toolchain)]);
        Ok(Ready { program, environment })
    }

    /// The toolchain rustup proxies use in an untrusted project: the user's own `RUSTUP_TOOLCHAIN` unless it names
    /// a path inside the project, else the default in rustup's settings, else `none` (no toolchain: a proxy fails
    /// rather than follow the project's toolchain file).
    fn user_toolchain(&self, roots: &[PathBuf]) -> OsString {
        if let Some(given) = self.environment.get("RUSTUP_TOOLCHAIN").filter(|t| !t.is_empty()) {
            let path = Path::new(given);
            let names_inside = !path.is_absolute() && given.as_encoded_bytes().contains(&b'/')
                || forms(path).iter().any(|f| inside(f, roots));
            if !names_inside {
                return given.to_os_string();
            }
        }
        default_toolchain(&self.environment).map(OsString::from).unwrap_or_else(|| "none".into())
    }
}

#[cfg(test)]
mod tests;

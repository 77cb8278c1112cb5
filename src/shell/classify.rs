//! Classifying a shell command before it runs (seed 000 bash, seed 003 classifier): commands that touch secret
//! files, destructive commands (the seed's list, and code the classifier cannot see, also behind `sudo`, `sh -c`,
//! `eval`, `xargs`, `find -exec` and `ssh host ...`), and read-only commands, decided by an allow-list of
//! (command, subcommand, option) known to be safe. Works on the tokenizer's argv, so quoting cannot hide a flag;
//! whatever it cannot read or tell is not read-only, and a command whose name is only known at run time is
//! destructive.
//!
//! Owns the decision. The data lives beside it: `allow` (the read-only allow-list) applied by `readonly`,
//! `destructive`, `wrap` (wrappers and interpreters), `secret` (names, globs, recursive searches) and `shape`
//! (what a permission rule names). Never runs anything; reads directory listings and git's repository
//! configuration only.

mod allow;
mod destructive;
mod readonly;
mod secret;
mod shape;
mod wrap;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use secret::is_secret_path;
pub use shape::{Shape, shapes};
pub use wrap::may_be_prefix;

use tokenize::{Simple, Word};
use wrap::{Inner, base, is_assignment};

use super::tokenize;

/// Where a command line would run: the session directory, the PATH its commands are looked up in, the home
/// directory `~` stands for.
#[derive(Debug, Clone)]
pub struct Host {
    pub cwd: PathBuf,
    pub path: Option<OsString>,
    pub home: Option<PathBuf>,
}

impl Host {
    /// The session directory, with this process's PATH and HOME (which the command inherits).
    pub fn new(cwd: &Path) -> Self {
        Self {
            cwd: cwd.to_path_buf(),
            path: std::env::var_os("PATH"),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }
}

/// What a command line is, from most to least dangerous.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Names or reads secret files (`.env`, `*.pem`, ...): asks under `secret-shell`.
    Secret(Vec<String>),
    /// Destroys data, changes the host or runs code that cannot be checked: asks under `destructive-shell`.
    Destructive(Vec<String>),
    /// Reads only: runs without asking, in plan mode too.
    ReadOnly,
    /// Anything else: asks under `shell`.
    Normal,
}

/// Shells inside shells are followed this deep.
const MAX_DEPTH: usize = 8;

/// Reading the commands of a line, in order.
struct Walker<'a> {
    host: &'a Host,
    destructive: Vec<String>,
    secrets: Vec<String>,
    read_only: bool,
    /// Every directory a command may run in: the session directory and each literal `cd` target.
    dirs: Vec<PathBuf>,
    after_cd: bool,
}

impl<'a> Walker<'a> {
    fn new(host: &'a Host) -> Self {
        Self {
            host,
            destructive: Vec::new(),
            secrets: Vec::new(),
            read_only: true,
            dirs: vec![host.cwd.clone()],
            after_cd: false,
        }
    }

    fn destructive(&mut self, why: String) {
        if !self.destructive.contains(&why) {
            self.destructive.push(why);
        }
    }

    fn commands(&mut self, commands: &[Simple], depth: usize) {
        for command in commands {
            self.secret_words(command);
            self.redirects(command);
            if !readonly::command(command, self.host, self.after_cd) {
                self.read_only = false;
            }
            let stdin_is_file = command.redirects.iter().any(|r| r.op == "<" && !r.target.dynamic);
            self.argv(&command.argv, stdin_is_file, depth);
            self.track_cd(command);
        }
    }

    fn secret_words(&mut self, command: &Simple) {
        for word in command.argv.iter().chain(command.redirects.iter().map(|r| &r.target)) {
            secret::in_word(word, &self.dirs, self.host, &mut self.secrets);
        }
    }

    fn redirects(&mut self, command: &Simple) {
        for redirect in &command.redirects {
            let target = redirect.target.text.as_str();
            let writes = redirect.op.contains('>') && redirect.op != ">&";
            if writes
                && ["/dev/sd", "/dev/nvme", "/dev/disk", "/dev/hd"].iter().any(|d| target.starts_with(d))
            {
                self.destructive(format!("writes to a disk device (`> {target}`)"));
            }
        }
    }

    /// Later commands may run elsewhere after `cd`: globs and searches are checked there too.
    fn track_cd(&mut self, command: &Simple) {
        let words = command.args();
        let Some((&name, args)) = words.split_first() else { return };
        if !matches!(name, "cd" | "pushd" | "popd" | "chdir") {
            return;
        }
        self.after_cd = true;
        let target = args.iter().find(|a| !a.starts_with('-'));
        let dynamic = command.argv.iter().skip(1).any(|w| w.dynamic);
        let dir = match target {
            None => self.host.home.clone(),
            Some(_) if dynamic => None,
            Some(t) if t.starts_with("~/") => self.host.home.as_ref().map(|h| h.join(&t[2..])),
            Some(t) => self.dirs.last().map(|last| last.join(t)),
        };
        if let Some(dir) = dir
            && !self.dirs.contains(&dir)
        {
            self.dirs.push(dir);
        }
    }

    fn argv(&mut self, argv: &[Word], stdin_is_file: bool, depth: usize) {
        let words: Vec<&str> = argv.iter().map(|w| w.text.as_str()).collect();
        self.assignments(&words);
        let Some(first) = argv.iter().find(|w| !is_assignment(&w.text)) else { return };
        if first.dynamic {
            self.destructive(format!(
                "runs a command whose name is only known at run time (`{}`)",
                first.text
            ));
            self.read_only = false;
            return;
        }
        // A wrapper's own options may name a program too (`ssh -o ProxyCommand=…`).
        let outer: Vec<&str> = words.iter().copied().skip_while(|w| is_assignment(w)).collect();
        if let Some((&name, args)) = outer.split_first()
            && let Some(why) = destructive::runs_program(name, args)
        {
            self.destructive(why);
        }
        match wrap::unwrap(&words) {
            Inner::Script(script) => self.script(&script, depth + 1),
            Inner::Argv(inner) => {
                let Some((&name, args)) = inner.split_first() else { return };
                let found = [
                    destructive::destructive(name, args),
                    destructive::runs_program(name, args),
                    wrap::unseen_code(name, args, stdin_is_file),
                ];
                for why in found.into_iter().flatten() {
                    self.destructive(why);
                }
                secret::in_search(&inner, &self.dirs, self.host, &mut self.secrets);
                for exec in wrap::find_exec(args) {
                    let nested = tokenize::literal(&exec);
                    self.argv(&nested.argv, false, depth + 1);
                }
            }
        }
    }

    /// Assignments that make a command run another program (`PATH=./bin`, `GIT_EXTERNAL_DIFF=…`), in front of a
    /// command or given to `env`, `export` and the like.
    fn assignments(&mut self, words: &[&str]) {
        let mut assigning = true;
        for word in words {
            if is_assignment(word) {
                if assigning && let Some(why) = destructive::assignment(word) {
                    self.destructive(why);
                }
            } else {
                let sets = ["env", "export", "declare", "typeset", "local", "readonly", "sudo", "doas"];
                assigning = sets.contains(&base(word)) || (assigning && word.starts_with('-'));
            }
        }
    }

    fn script(&mut self, script: &str, depth: usize) {
        self.read_only = false;
        if depth > MAX_DEPTH {
            self.destructive("nests shells too deeply to check".into());
            return;
        }
        match tokenize::parse(script) {
            Ok(commands) => {
                let after_cd = self.after_cd;
                self.commands(&commands, depth);
                self.after_cd = after_cd;
            }
            Err(_) => self.destructive("runs a script that cannot be checked".into()),
        }
    }
}

/// Classify a command line that would run on `host`.
pub fn classify(line: &str, host: &Host) -> Class {
    let mut walker = Walker::new(host);
    match tokenize::parse(line) {
        Ok(commands) => walker.commands(&commands, 0),
        Err(_) => {
            walker.read_only = false;
            secret::in_text(line, &mut walker.secrets);
        }
    }
    if let Some(re) = destructive::SQL.as_ref()
        && re.is_match(line)
    {
        walker.destructive("drops or truncates database tables".into());
    }
    if !walker.secrets.is_empty() {
        Class::Secret(walker.secrets)
    } else if !walker.destructive.is_empty() {
        Class::Destructive(walker.destructive)
    } else if walker.read_only {
        Class::ReadOnly
    } else {
        Class::Normal
    }
}

#[cfg(test)]
mod tests;

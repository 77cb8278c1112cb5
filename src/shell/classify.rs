//! Classifying a shell command before it runs (seed 000 bash, seed 003 classifier): destructive commands (the
//! seed's full list, also behind `sudo`, `sh -c`, `eval`, `xargs`, `find -exec` and `ssh host ...`), commands
//! that touch secret files, and a narrow allowlist of read-only commands that may run without asking. Works
//! on the tokenizer's argv, so quoting cannot hide a flag; a command whose name is only known at run time is
//! treated as destructive.
//!
//! Owns the decision tables. Never runs anything.

use std::sync::LazyLock;

use regex::Regex;

use super::tokenize::{self, Simple, Word};

/// What a command line is, from most to least dangerous.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Names a secret file (`.env`, `*.pem`, ...): asks under `secret-shell`.
    Secret(Vec<String>),
    /// Destroys data or changes the host: asks under `destructive-shell`.
    Destructive(Vec<String>),
    /// Reads only: runs without asking in the default mode.
    ReadOnly,
    /// Anything else: asks under `shell`.
    Normal,
}

static SQL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\bdrop\s+(table|database|schema)\b|\btruncate\s+table\b").ok());

fn short_flags(args: &[&str]) -> String {
    args.iter()
        .filter(|a| a.starts_with('-') && !a.starts_with("--"))
        .flat_map(|a| a.chars().skip(1))
        .collect()
}

fn has(args: &[&str], long: &str) -> bool {
    args.iter().any(|a| *a == long || a.starts_with(&format!("{long}=")))
}

fn first_operand<'a>(args: &[&'a str]) -> Option<&'a str> {
    args.iter().copied().find(|a| !a.starts_with('-'))
}

const KUBE_READ_ONLY: &[&str] = &[
    "get",
    "describe",
    "logs",
    "top",
    "explain",
    "version",
    "api-resources",
    "api-versions",
    "cluster-info",
    "diff",
    "auth",
    "whoami",
    "status",
    "projects",
    "project",
    "help",
    "completion",
];

fn kube(args: &[&str]) -> Option<String> {
    let verb = first_operand(args)?;
    match verb {
        "config" => {
            let sub = first_operand(&args[1..]).unwrap_or("");
            (!matches!(sub, "view" | "get-contexts" | "current-context" | "get-clusters" | "get-users" | ""))
                .then(|| format!("changes the cluster configuration (`config {sub}`)"))
        }
        "adm" => {
            let sub = first_operand(&args[1..]).unwrap_or("");
            (sub != "top").then(|| format!("runs a cluster administration command (`adm {sub}`)"))
        }
        v if KUBE_READ_ONLY.contains(&v) => None,
        v => Some(format!("changes cluster state (`{v}`)")),
    }
}

const SYSTEMCTL_MUTATING: &[&str] = &[
    "start",
    "stop",
    "restart",
    "reload",
    "enable",
    "disable",
    "mask",
    "unmask",
    "kill",
    "isolate",
    "try-restart",
    "reload-or-restart",
    "reboot",
    "poweroff",
    "halt",
    "set-default",
];

fn firewall(name: &str, args: &[&str]) -> Option<String> {
    let listing = match name {
        "iptables" | "ip6tables" => {
            args.iter().any(|a| matches!(*a, "-L" | "-S" | "--list" | "--list-rules"))
                || short_flags(args).contains('L')
        }
        "nft" => first_operand(args) == Some("list"),
        "ufw" => matches!(first_operand(args), Some("status" | "app")),
        "firewall-cmd" => args.iter().all(|a| {
            a.starts_with("--list")
                || a.starts_with("--get")
                || *a == "--state"
                || a.starts_with("--query")
                || a.starts_with("--zone")
        }),
        _ => true,
    };
    (!listing).then(|| format!("edits the firewall (`{name}`)"))
}

fn network(name: &str, args: &[&str]) -> Option<String> {
    match name {
        "ip" => {
            let object = first_operand(args)?;
            let action = first_operand(&args[1..]).unwrap_or("");
            let mutates = matches!(
                action,
                "add" | "del" | "delete" | "change" | "replace" | "flush" | "set" | "append"
            );
            (matches!(object, "addr" | "address" | "a" | "route" | "r" | "link" | "l" | "neigh" | "rule")
                && mutates)
                .then(|| format!("changes network addresses or routes (`ip {object} {action}`)"))
        }
        "route" => matches!(first_operand(args), Some("add" | "del" | "delete" | "change" | "flush"))
            .then(|| "changes routes".into()),
        "ifconfig" => (args.len() >= 2).then(|| "changes a network interface".into()),
        _ => None,
    }
}

/// Why one (unwrapped) command is destructive, if it is.
fn destructive(name: &str, args: &[&str]) -> Option<String> {
    let flags = short_flags(args);
    let base = name.rsplit('/').next().unwrap_or(name);
    match base {
        "rm" if flags.contains('r') || flags.contains('R') || has(args, "--recursive") => {
            Some("deletes recursively (`rm -r`)".into())
        }
        "git" => git(args),
        "kill" | "pkill" | "killall"
            if args.iter().any(|a| matches!(*a, "-9" | "-KILL" | "-SIGKILL" | "-s9"))
                || (args.windows(2).any(|w| w[0] == "-s" && matches!(w[1], "9" | "KILL" | "SIGKILL"))) =>
        {
            Some(format!("force-kills processes (`{base} -9`)"))
        }
        b if b == "mkfs" || b.starts_with("mkfs.") => Some("formats a file system (`mkfs`)".into()),
        "dd" => Some("writes raw blocks (`dd`)".into()),
        "reboot" | "shutdown" | "poweroff" | "halt" => {
            Some(format!("stops or restarts the machine (`{base}`)"))
        }
        "init" if matches!(first_operand(args), Some("0" | "6")) => {
            Some("stops or restarts the machine (`init`)".into())
        }
        "kubectl" | "oc" => kube(args).map(|why| format!("{base}: {why}")),
        "helm"
            if matches!(
                first_operand(args),
                Some("install" | "upgrade" | "uninstall" | "rollback" | "delete")
            ) =>
        {
            Some(format!("changes releases (`helm {}`)", first_operand(args).unwrap_or("")))
        }
        "systemctl" if first_operand(args).is_some_and(|v| SYSTEMCTL_MUTATING.contains(&v)) => {
            Some(format!("changes system services (`systemctl {}`)", first_operand(args).unwrap_or("")))
        }
        "useradd" | "userdel" | "usermod" | "passwd" | "visudo" | "groupadd" | "groupdel" | "groupmod"
        | "chpasswd" => Some(format!("changes user accounts (`{base}`)")),
        "setenforce" | "setsebool" => Some(format!("changes SELinux (`{base}`)")),
        "iptables" | "ip6tables" | "nft" | "ufw" | "firewall-cmd" => firewall(base, args),
        "ip" | "route" | "ifconfig" => network(base, args),
        "find" if args.contains(&"-delete") => Some("deletes files (`find -delete`)".into()),
        _ => None,
    }
}

/// Options of `git` itself that take a value (`git -C dir status`).
const GIT_GLOBAL_WITH_VALUE: &[&str] = &["-C", "-c", "--git-dir", "--work-tree", "--namespace"];

fn git(args: &[&str]) -> Option<String> {
    let args = skip_options(args, GIT_GLOBAL_WITH_VALUE);
    let (&sub, rest) = args.split_first()?;
    let flags = short_flags(rest);
    match sub {
        "push"
            if has(rest, "--force")
                || has(rest, "--force-with-lease")
                || flags.contains('f')
                || rest.iter().any(|a| a.starts_with('+')) =>
        {
            Some("force-pushes (`git push --force`)".into())
        }
        "reset" if rest.contains(&"--hard") => Some("discards changes (`git reset --hard`)".into()),
        "clean" if flags.contains('f') || has(rest, "--force") => {
            Some("deletes untracked files (`git clean -f`)".into())
        }
        "branch" if flags.contains('D') || (has(rest, "--delete") && has(rest, "--force")) => {
            Some("deletes a branch (`git branch -D`)".into())
        }
        _ => None,
    }
}

/// Peel wrappers (`sudo`, `env`, `nice`, `timeout`, `xargs`, ...) and leading assignments off a command.
/// Returns the inner argv, or the command lines to parse when the wrapper runs a string (`sh -c`, `eval`,
/// `ssh host cmd`).
enum Inner<'a> {
    Argv(Vec<&'a str>),
    Script(String),
}

fn skip_options<'a>(args: &[&'a str], with_value: &[&str]) -> Vec<&'a str> {
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') && args[i] != "--" {
        if with_value.contains(&args[i]) {
            i += 1;
        }
        i += 1;
    }
    if args.get(i) == Some(&"--") {
        i += 1;
    }
    // An option that takes a value can be the last word (`git -c`): then nothing is left.
    args.get(i..).unwrap_or_default().to_vec()
}

fn unwrap<'a>(argv: &[&'a str]) -> Inner<'a> {
    let mut argv: Vec<&str> = argv.iter().copied().skip_while(|w| is_assignment(w)).collect();
    loop {
        let Some((&name, args)) = argv.split_first() else { return Inner::Argv(argv) };
        let base = name.rsplit('/').next().unwrap_or(name);
        let inner: Vec<&str> = match base {
            "sudo" | "doas" => skip_options(args, &["-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t"]),
            "env" => {
                skip_options(args, &["-u", "-C", "-S"]).into_iter().skip_while(|w| is_assignment(w)).collect()
            }
            "nice" | "ionice" => skip_options(args, &["-n", "-c", "-p"]),
            "timeout" => {
                skip_options(args, &["-s", "-k", "--signal", "--kill-after"]).into_iter().skip(1).collect()
            }
            "nohup" | "time" | "command" | "builtin" | "exec" | "stdbuf" | "unbuffer" => {
                skip_options(args, &[])
            }
            "xargs" => skip_options(args, &["-I", "-L", "-n", "-P", "-d", "-E", "-s", "-a"]),
            "watch" => skip_options(args, &["-n", "-d"]),
            "sh" | "bash" | "zsh" | "dash" | "ksh" | "fish" => {
                let position =
                    args.iter().position(|a| a.starts_with('-') && a.contains('c') && !a.starts_with("--"));
                return match position.and_then(|p| args.get(p + 1)) {
                    Some(script) => Inner::Script(script.to_string()),
                    None => Inner::Argv(argv),
                };
            }
            "eval" => return Inner::Script(args.join(" ")),
            "ssh" => {
                let rest = skip_options(
                    args,
                    &[
                        "-p", "-i", "-l", "-o", "-F", "-J", "-b", "-c", "-D", "-E", "-L", "-R", "-S", "-W",
                        "-w", "-m", "-O", "-Q", "-B", "-e", "-I",
                    ],
                );
                return Inner::Script(rest.get(1..).map(|r| r.join(" ")).unwrap_or_default());
            }
            _ => return Inner::Argv(argv),
        };
        // A wrapper with nothing to run is the command itself (`env` prints the environment).
        if inner.is_empty() {
            return Inner::Argv(argv);
        }
        argv = inner;
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
}

/// The commands `find -exec`/`-execdir`/`-ok` would run.
fn find_exec<'a>(args: &[&'a str]) -> Vec<Vec<&'a str>> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if matches!(args[i], "-exec" | "-execdir" | "-ok" | "-okdir") {
            let end = args[i + 1..]
                .iter()
                .position(|a| *a == ";" || *a == "+")
                .map(|p| i + 1 + p)
                .unwrap_or(args.len());
            found.push(args[i + 1..end].to_vec());
            i = end;
        }
        i += 1;
    }
    found
}

const SECRET_NAMES: &[&str] = &[".env", "credentials"];

fn is_secret(word: &str) -> bool {
    let name = word.trim_end_matches('/').rsplit('/').next().unwrap_or(word);
    SECRET_NAMES.contains(&name)
        || name.starts_with(".env.")
        || name.ends_with(".key")
        || name.ends_with(".pem")
}

const READ_ONLY: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "echo",
    "printf",
    "which",
    "file",
    "stat",
    "du",
    "df",
    "tree",
    "sort",
    "uniq",
    "cut",
    "diff",
    "cmp",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "date",
    "uname",
    "whoami",
    "id",
    "nl",
    "true",
    "false",
    "test",
    "[",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "find",
    "cd",
    "type",
    "hostname",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "column",
    "jq",
    "less",
    "more",
];

const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
    "describe",
    "shortlog",
    "grep",
    "ls-tree",
    "cat-file",
    "rev-list",
    "merge-base",
    "whatchanged",
];

fn read_only(argv: &[&str]) -> bool {
    let Some((&name, args)) = argv.split_first() else { return true };
    let base = name.rsplit('/').next().unwrap_or(name);
    match base {
        "git" => {
            let rest = skip_options(args, GIT_GLOBAL_WITH_VALUE);
            match rest.first() {
                Some(&"branch") => rest[1..].iter().all(|a| {
                    matches!(*a, "-a" | "-r" | "-v" | "-vv" | "--list" | "--all" | "--show-current")
                }),
                Some(&"remote") => rest[1..].iter().all(|a| *a == "-v"),
                Some(&"tag") => rest[1..].iter().all(|a| matches!(*a, "-l" | "--list")),
                Some(sub) => GIT_READ_ONLY.contains(sub),
                None => false,
            }
        }
        "find" => !args.iter().any(|a| {
            a.starts_with("-exec")
                || a.starts_with("-ok")
                || *a == "-delete"
                || a.starts_with("-fprint")
                || *a == "-fls"
        }),
        "rg" => !args.iter().any(|a| a.starts_with("--pre")),
        b => READ_ONLY.contains(&b),
    }
}

/// What reading all the commands of a line found.
#[derive(Default)]
struct Findings {
    destructive: Vec<String>,
    secrets: Vec<String>,
    read_only: bool,
}

const MAX_DEPTH: usize = 8;

fn inspect(commands: &[Simple], findings: &mut Findings, depth: usize) {
    for command in commands {
        for word in command.argv.iter().chain(command.redirects.iter().map(|r| &r.target)) {
            // A word holding a whole script (`sh -c 'cat id.pem'`) is checked piece by piece.
            for piece in word.text.split_whitespace() {
                if is_secret(piece) && !findings.secrets.iter().any(|s| s == piece) {
                    findings.secrets.push(piece.to_string());
                }
            }
        }
        for redirect in &command.redirects {
            let target = redirect.target.text.as_str();
            if redirect.op.contains('>') && redirect.op != ">&" {
                if target.starts_with("/dev/sd")
                    || target.starts_with("/dev/nvme")
                    || target.starts_with("/dev/disk")
                    || target.starts_with("/dev/hd")
                {
                    findings.destructive.push(format!("writes to a disk device (`> {target}`)"));
                }
                if target != "/dev/null" {
                    findings.read_only = false;
                }
            }
        }
        inspect_argv(&command.argv, findings, depth);
    }
}

fn inspect_argv(argv: &[Word], findings: &mut Findings, depth: usize) {
    let Some(first) = argv.iter().find(|w| !is_assignment(&w.text)) else { return };
    if first.dynamic {
        findings
            .destructive
            .push(format!("runs a command whose name is only known at run time (`{}`)", first.text));
        findings.read_only = false;
        return;
    }
    let words: Vec<&str> = argv.iter().map(|w| w.text.as_str()).collect();
    match unwrap(&words) {
        Inner::Script(script) => inspect_script(&script, findings, depth + 1),
        Inner::Argv(inner) => {
            let Some((&name, args)) = inner.split_first() else { return };
            if let Some(why) = destructive(name, args) {
                findings.destructive.push(why);
            }
            if !read_only(&inner) {
                findings.read_only = false;
            }
            for exec in find_exec(args) {
                let nested = tokenize::literal(&exec);
                inspect_argv(&nested.argv, findings, depth + 1);
            }
        }
    }
}

fn inspect_script(script: &str, findings: &mut Findings, depth: usize) {
    findings.read_only = false;
    if depth > MAX_DEPTH {
        findings.destructive.push("nests shells too deeply to check".into());
        return;
    }
    match tokenize::parse(script) {
        Ok(commands) => inspect(&commands, findings, depth),
        Err(_) => findings.destructive.push("runs a script that cannot be checked".into()),
    }
}

/// Classify a command line.
pub fn classify(line: &str) -> Class {
    let mut findings = Findings { read_only: true, ..Findings::default() };
    match tokenize::parse(line) {
        Ok(commands) => inspect(&commands, &mut findings, 0),
        Err(_) => findings.read_only = false,
    }
    if let Some(re) = SQL.as_ref()
        && re.is_match(line)
    {
        findings.destructive.push("drops or truncates database tables".into());
    }
    if !findings.secrets.is_empty() {
        Class::Secret(findings.secrets)
    } else if !findings.destructive.is_empty() {
        Class::Destructive(findings.destructive)
    } else if findings.read_only {
        Class::ReadOnly
    } else {
        Class::Normal
    }
}

const WITH_SUBCOMMANDS: &[&str] = &[
    "git",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "cargo",
    "go",
    "docker",
    "podman",
    "kubectl",
    "oc",
    "helm",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "systemctl",
    "apt",
    "apt-get",
    "brew",
    "dotnet",
    "gh",
    "terraform",
    "mvn",
    "gradle",
    "make",
    "deno",
    "rustup",
    "npx",
    "composer",
    "bundle",
    "rails",
    "mix",
];

/// The command prefixes a permission rule for this line would name: `git commit`, `npm test`, `ls`.
pub fn prefixes(line: &str) -> Vec<String> {
    let Ok(commands) = tokenize::parse(line) else { return vec![line.trim().to_string()] };
    let mut found: Vec<String> = Vec::new();
    for command in &commands {
        let words: Vec<&str> = command.argv.iter().map(|w| w.text.as_str()).collect();
        let Inner::Argv(inner) = unwrap(&words) else {
            found.push(words.join(" "));
            continue;
        };
        let Some((&name, args)) = inner.split_first() else { continue };
        let base = name.rsplit('/').next().unwrap_or(name);
        let prefix = match first_operand(args) {
            Some(sub) if WITH_SUBCOMMANDS.contains(&base) => format!("{base} {sub}"),
            _ => base.to_string(),
        };
        if !found.contains(&prefix) {
            found.push(prefix);
        }
    }
    if found.is_empty() {
        found.push(line.trim().to_string());
    }
    found
}

#[cfg(test)]
mod tests;

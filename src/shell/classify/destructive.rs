//! Destructive commands (seed 000 bash): the seed's full list (recursive deletes, force pushes, hard resets, SQL
//! drops, raw disk writes, machine stops, cluster, service, account, SELinux, firewall and network changes), plus
//! commands that run a program or code the classifier cannot see: interpreters fed from a pipe or given inline
//! code (`… | sh`, `perl -e`), options and environment variables that name a program (`git -c core.pager=…`,
//! `rg --pre`, `sort --compress-program`, `GIT_EXTERNAL_DIFF=…`, `PATH=…`). Destructive asks never offer "always".
//!
//! Owns these tables. Works on one unwrapped argv; `classify` does the unwrapping.

use std::sync::LazyLock;

use regex::Regex;

use super::wrap::{base, skip_options};

pub static SQL: LazyLock<Option<Regex>> =
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
pub fn destructive(name: &str, args: &[&str]) -> Option<String> {
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
pub const GIT_GLOBAL_WITH_VALUE: &[&str] = &["-C", "-c", "--git-dir", "--work-tree", "--namespace"];

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

/// Environment variables that make a command run another program or load code into it.
const RUNS_ENV: &[&str] = &[
    "PATH",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "PAGER",
    "MANPAGER",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EDITOR",
    "EDITOR",
    "VISUAL",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_EXEC_PATH",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_PROXY_COMMAND",
    "GIT_TEMPLATE_DIR",
    "LESSOPEN",
    "LESSCLOSE",
    "LESSKEY",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "BROWSER",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "RIPGREP_CONFIG_PATH",
    "TAR_OPTIONS",
    "IFS",
    "SHELLOPTS",
    "BASHOPTS",
    "MAGIC",
];

/// Why an environment assignment (`NAME=value`) is destructive: it makes commands run another program.
pub fn assignment(word: &str) -> Option<String> {
    let (name, _) = word.split_once('=')?;
    let runs = RUNS_ENV.contains(&name)
        || name.starts_with("GIT_CONFIG")
        || name.starts_with("LD_")
        || name.starts_with("DYLD_");
    runs.then(|| format!("sets `{name}`, which can make commands run another program"))
}

/// Words in git configuration keys whose value is a program to run (or that pull in more configuration).
const GIT_KEYS_THAT_RUN: &[&str] = &[
    "fsmonitor",
    "pager",
    "external",
    "textconv",
    "command",
    "editor",
    "program",
    "askpass",
    "hookspath",
    "filter",
    "proxy",
    "cmd",
    "exec",
    "helper",
    "alias",
    "include",
    "browser",
    "tool",
    "hook",
    "uploadpack",
    "receivepack",
];

fn git_key_runs(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    GIT_KEYS_THAT_RUN.iter().any(|word| key.contains(word))
}

/// Is `arg` the option `name`, alone, with `=value`, (for a short option) with its value attached, or (for a
/// long one) abbreviated as GNU `getopt_long` allows (`--compress-prog=sh`)?
fn is_option(arg: &str, name: &str) -> bool {
    if let Some(long) = name.strip_prefix("--") {
        let given = arg.split_once('=').map(|(n, _)| n).unwrap_or(arg);
        return given.strip_prefix("--").is_some_and(|g| !g.is_empty() && long.starts_with(g));
    }
    arg.strip_prefix(name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('=') || !name.starts_with("--"))
}

fn any_option(args: &[&str], names: &[&str]) -> Option<String> {
    args.iter().find(|a| names.iter().any(|n| is_option(a, n))).map(|a| a.to_string())
}

/// Git's own options that set configuration or where git's programs come from.
fn git_global(args: &[&str]) -> Option<String> {
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        let arg = args[i];
        let (value, width) = match arg {
            "-c" | "--config-env" => (args.get(i + 1).copied().unwrap_or(""), 2),
            _ => match (arg.strip_prefix("-c"), arg.strip_prefix("--config-env=")) {
                (_, Some(v)) => (v, 1),
                (Some(v), _) if !arg.starts_with("--") => (v, 1),
                _ => ("", 1),
            },
        };
        if !value.is_empty() && git_key_runs(value.split('=').next().unwrap_or(value)) {
            return Some(format!("sets git configuration that runs a program (`{arg} {value}`)"));
        }
        if arg.starts_with("--exec-path=") {
            return Some(format!("runs git's commands from another directory (`{arg}`)"));
        }
        i += if GIT_GLOBAL_WITH_VALUE.contains(&arg) || arg == "--config-env" { 2 } else { width };
    }
    None
}

/// Options of git subcommands that name a program to run.
const GIT_SUB_RUNS: &[(&str, &[&str])] = &[
    ("grep", &["-O", "--open-files-in-pager"]),
    ("clone", &["-u", "--upload-pack", "--config", "-c"]),
    ("fetch", &["--upload-pack"]),
    ("pull", &["--upload-pack"]),
    ("ls-remote", &["--upload-pack"]),
    ("archive", &["--exec"]),
    ("push", &["--receive-pack", "--exec"]),
    ("rebase", &["-x", "--exec"]),
    ("difftool", &["-x", "--extcmd", "-t", "--tool"]),
    ("mergetool", &["-t", "--tool"]),
];

fn git_runs(args: &[&str]) -> Option<String> {
    if let Some(why) = git_global(args) {
        return Some(why);
    }
    let rest = skip_options(args, GIT_GLOBAL_WITH_VALUE);
    let (&sub, sub_args) = rest.split_first()?;
    if let Some((_, names)) = GIT_SUB_RUNS.iter().find(|(s, _)| *s == sub)
        && let Some(arg) = any_option(sub_args, names)
    {
        return Some(format!("runs a program named in an option (`git {sub} {arg}`)"));
    }
    match sub {
        "bisect" if sub_args.first() == Some(&"run") => Some("runs a command for every bisect step".into()),
        "submodule" if sub_args.contains(&"foreach") => Some("runs a command in every submodule".into()),
        "filter-branch" => Some("runs shell snippets over the history (`git filter-branch`)".into()),
        "config" if sub_args.iter().any(|a| !a.starts_with('-') && git_key_runs(a) && a.contains('.')) => {
            Some("sets git configuration that runs a program".into())
        }
        _ => None,
    }
}

/// Why this (unwrapped) command runs a program named in one of its options, if it does.
pub fn runs_program(name: &str, args: &[&str]) -> Option<String> {
    let base = base(name);
    let option = |names: &[&str]| any_option(args, names);
    let named = match base {
        "git" => return git_runs(args),
        "rg" => option(&["--pre", "--pre-glob", "--hostname-bin"]),
        "sort" => option(&["--compress-program"]),
        "tar" | "gtar" | "bsdtar" => option(&[
            "--to-command",
            "--use-compress-program",
            "-I",
            "--checkpoint-action",
            "--info-script",
            "--new-volume-script",
            "-F",
            "--rsh-command",
            "--rmt-command",
        ]),
        "rsync" => rsync(args),
        "zip" => option(&["-TT", "--unzip-command"]),
        "man" => option(&["-P", "--pager", "-H", "--html"]),
        "less" | "more" => {
            args.iter().find(|a| a.starts_with('+') && a.contains(['!', '|'])).map(|a| a.to_string())
        }
        "ssh" | "scp" | "sftp" => args
            .iter()
            .find(|a| {
                let lower = a.to_ascii_lowercase();
                lower.contains("proxycommand") || lower.contains("localcommand")
            })
            .map(|a| a.to_string()),
        _ => None,
    }?;
    Some(format!("runs a program named in an option (`{base} {named}`)"))
}

/// `rsync -e CMD` runs CMD as the remote shell; plain `ssh` (with options) is the usual and safe one.
fn rsync(args: &[&str]) -> Option<String> {
    if let Some(arg) = any_option(args, &["--rsync-path"]) {
        return Some(arg);
    }
    let i = args.iter().position(|a| is_option(a, "-e") || is_option(a, "--rsh"))?;
    let arg = args[i];
    let value = match arg.split_once('=') {
        Some((_, v)) => v,
        None if arg == "-e" || arg == "--rsh" => args.get(i + 1).copied().unwrap_or(""),
        None => &arg[2..],
    };
    (value.split_whitespace().next() != Some("ssh")).then(|| arg.to_string())
}

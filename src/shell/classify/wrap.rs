//! Wrappers and interpreters: commands that run another command (`sudo`, `env`, `xargs`, `timeout`, …), a script
//! given as a string (`sh -c`, `eval`, `ssh host …`, `watch`), or code in some language (`python -c`, `perl -e`,
//! `… | sh`). Peels wrappers so the inner command is classified, finds code the classifier cannot see, and names
//! the programs that may never be remembered as a command prefix.
//!
//! Owns these lists. Never runs anything.

/// What a wrapper runs: another argv, or a command line to parse.
pub enum Inner<'a> {
    Argv(Vec<&'a str>),
    Script(String),
}

/// `args` after the options at their front (`with_value` options take the next word too) and a `--`.
pub fn skip_options<'a>(args: &[&'a str], with_value: &[&str]) -> Vec<&'a str> {
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
    args.get(i..).unwrap_or_default().to_vec()
}

pub fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "rbash", "csh", "tcsh"];

const SSH_WITH_VALUE: &[&str] = &[
    "-p", "-i", "-l", "-o", "-F", "-J", "-b", "-c", "-D", "-E", "-L", "-R", "-S", "-W", "-w", "-m", "-O",
    "-Q", "-B", "-e", "-I",
];

/// Peel wrappers and leading assignments off a command: the argv it finally runs, or the command line it runs
/// through a shell.
pub fn unwrap<'a>(argv: &[&'a str]) -> Inner<'a> {
    let mut argv: Vec<&str> = argv.iter().copied().skip_while(|w| is_assignment(w)).collect();
    loop {
        let Some((&name, args)) = argv.split_first() else { return Inner::Argv(argv) };
        let inner: Vec<&str> = match base(name) {
            "sudo" | "doas" => skip_options(args, &["-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-D"]),
            "env" => skip_options(args, &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"])
                .into_iter()
                .skip_while(|w| is_assignment(w))
                .collect(),
            "nice" | "ionice" => skip_options(args, &["-n", "-c", "-p", "--adjustment"]),
            "timeout" => {
                skip_options(args, &["-s", "-k", "--signal", "--kill-after"]).into_iter().skip(1).collect()
            }
            "nohup" | "time" | "command" | "builtin" | "exec" | "stdbuf" | "unbuffer" | "setsid"
            | "busybox" | "firejail" | "nsenter" | "unshare" | "pkexec" => skip_options(args, &[]),
            "chroot" | "flock" | "taskset" | "chrt" => {
                skip_options(args, &["-c", "-w", "-E", "--conflict-exit-code", "--timeout"])
                    .into_iter()
                    .skip(1)
                    .collect()
            }
            "strace" | "ltrace" => skip_options(args, &["-o", "-e", "-p", "-s", "-u", "-E"]),
            "xargs" => skip_options(args, &["-I", "-L", "-n", "-P", "-d", "-E", "-s", "-a", "-i"]),
            "su" | "runuser" | "script" => {
                return match option_value(args, &["-c", "--command"]) {
                    Some(script) => Inner::Script(script.to_string()),
                    None => Inner::Argv(argv),
                };
            }
            "watch" => {
                let rest = skip_options(args, &["-n", "-d", "--interval", "-q", "--equexit"]);
                if args.iter().any(|a| {
                    *a == "-x"
                        || *a == "--exec"
                        || (a.starts_with('-') && !a.starts_with("--") && a.contains('x'))
                }) {
                    rest
                } else {
                    return Inner::Script(rest.join(" "));
                }
            }
            shell if SHELLS.contains(&shell) => {
                let position =
                    args.iter().position(|a| a.starts_with('-') && a.contains('c') && !a.starts_with("--"));
                return match position.and_then(|p| args.get(p + 1)) {
                    Some(script) => Inner::Script(script.to_string()),
                    None => Inner::Argv(argv),
                };
            }
            "eval" => return Inner::Script(args.join(" ")),
            "trap" => return Inner::Script(args.first().map(|a| a.to_string()).unwrap_or_default()),
            "ssh" => {
                let rest = skip_options(args, SSH_WITH_VALUE);
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

/// The value of the first of `options` (`-c VALUE`, `--command=VALUE`).
fn option_value<'a>(args: &[&'a str], options: &[&str]) -> Option<&'a str> {
    for (i, arg) in args.iter().enumerate() {
        for option in options {
            if arg == option {
                return args.get(i + 1).copied();
            }
            if let Some(value) = arg.strip_prefix(option).and_then(|rest| rest.strip_prefix('=')) {
                return Some(value);
            }
        }
    }
    None
}

pub fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The commands `find -exec`/`-execdir`/`-ok`/`-okdir` would run.
pub fn find_exec<'a>(args: &[&'a str]) -> Vec<Vec<&'a str>> {
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

/// Programs that run other programs, scripts or code: never remembered as a bare prefix (one "always" on
/// `echo hi | sh` must not allow every later `sh …`).
const RUNNERS: &[&str] = &[
    // shells
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "ash",
    "rbash",
    "csh",
    "tcsh",
    "busybox",
    // interpreters
    "python",
    "pypy",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "irb",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "expect",
    "Rscript",
    "R",
    "julia",
    "osascript",
    "pwsh",
    "powershell",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "jshell",
    "groovy",
    "scala",
    "ghci",
    "runghc",
    "swift",
    "erl",
    "elixir",
    "iex",
    "java",
    // wrappers
    "env",
    "sudo",
    "doas",
    "su",
    "pkexec",
    "runuser",
    "xargs",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "time",
    "command",
    "builtin",
    "exec",
    "eval",
    "source",
    ".",
    "stdbuf",
    "unbuffer",
    "watch",
    "setsid",
    "chroot",
    "flock",
    "taskset",
    "chrt",
    "strace",
    "ltrace",
    "gdb",
    "valgrind",
    "parallel",
    "ssh",
    "script",
    "find",
    "nsenter",
    "unshare",
    "systemd-run",
    "firejail",
    "npx",
    "pnpx",
    "bunx",
    "uvx",
    "pipx",
    "make",
    // editors and pagers that run commands
    "vi",
    "vim",
    "nvim",
    "emacs",
    "ed",
    "ex",
    "less",
    "more",
    "man",
];

/// Subcommands that run an arbitrary program or script: `npm exec` is as much a runner as `npx`.
const RUNNING_SUBCOMMANDS: &[(&str, &[&str])] = &[
    ("npm", &["exec", "x"]),
    ("pnpm", &["exec", "dlx"]),
    ("yarn", &["exec", "dlx"]),
    ("bun", &["x", "run"]),
    ("uv", &["run", "tool"]),
    ("poetry", &["run"]),
    ("pipenv", &["run"]),
    ("bundle", &["exec"]),
    ("go", &["run"]),
    ("docker", &["run", "exec"]),
    ("podman", &["run", "exec"]),
    ("deno", &["run", "eval"]),
    ("git", &["bisect", "submodule", "filter-branch", "rebase"]),
];

/// Is `program subcommand` a runner (`npm exec`, `docker run`)?
pub fn runs_via_subcommand(program: &str, subcommand: &str) -> bool {
    RUNNING_SUBCOMMANDS.iter().any(|(p, subs)| *p == base(program) && subs.contains(&subcommand))
}

/// Versioned interpreter names (`python3.12`, `perl5.36`, `lua5.4`, `php8.2`).
const VERSIONED: &[&str] = &["python", "pypy", "perl", "ruby", "php", "lua", "node", "tclsh", "wish"];

/// Does `program` run other programs or code (so it may never be a bare remembered prefix)?
pub fn is_runner(program: &str) -> bool {
    let name = base(program);
    RUNNERS.contains(&name)
        || VERSIONED.iter().any(|v| {
            name.strip_prefix(v)
                .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
        })
}

/// May a remembered shell rule be the prefix `pattern`? Not when it starts with a runner, a path, an assignment or
/// an expansion, and never for everything.
pub fn may_be_prefix(pattern: &str) -> bool {
    let mut words = pattern.split_whitespace();
    let Some(first) = words.next() else { return false };
    first != "*"
        && !first.contains(['/', '=', '$', '`', '\'', '"', '\\'])
        && !is_runner(first)
        && !words.next().is_some_and(|sub| runs_via_subcommand(first, sub))
}

/// Flags that give an interpreter its program inline: (interpreter, short letters in a cluster, long options).
const INLINE: &[(&str, &str, &[&str])] = &[
    ("python", "c", &[]),
    ("pypy", "c", &[]),
    ("node", "ep", &["--eval", "--print"]),
    ("nodejs", "ep", &["--eval", "--print"]),
    ("bun", "ep", &["--eval", "--print"]),
    ("perl", "eE", &[]),
    ("ruby", "e", &[]),
    ("php", "r", &[]),
    ("lua", "e", &[]),
    ("luajit", "e", &[]),
    ("Rscript", "e", &[]),
    ("R", "e", &[]),
    ("julia", "e", &["--eval", "--print"]),
    ("osascript", "e", &[]),
    ("pwsh", "cCe", &["-Command", "-EncodedCommand", "-command", "-encodedcommand"]),
    ("powershell", "cCe", &["-Command", "-EncodedCommand", "-command", "-encodedcommand"]),
    ("expect", "c", &[]),
    ("groovy", "e", &[]),
    ("tclsh", "", &[]),
    ("wish", "", &[]),
    ("irb", "", &[]),
];

/// Interpreters that read their program from standard input when given no script.
fn reads_program_from_stdin(name: &str) -> bool {
    SHELLS.contains(&name) || INLINE.iter().any(|(i, _, _)| *i == name)
}

fn interpreter(name: &str) -> &str {
    for v in VERSIONED {
        if name.strip_prefix(v).is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.')) {
            return v;
        }
    }
    name
}

/// Why this (unwrapped) command runs code the classifier cannot see, if it does: inline code (`python -c`,
/// `perl -e`), a program read from a pipe, heredoc or here-string (`… | sh`), or an awk program that can start
/// commands. `stdin_is_file` when standard input is redirected from a file (`sh < script.sh` runs that file).
pub fn unseen_code(name: &str, args: &[&str], stdin_is_file: bool) -> Option<String> {
    let name = interpreter(base(name));
    if matches!(name, "awk" | "gawk" | "mawk" | "nawk") {
        return awk(name, args);
    }
    if name == "deno" && args.first() == Some(&"eval") {
        return Some("runs inline code that cannot be checked (`deno eval`)".into());
    }
    let (_, letters, longs) = INLINE.iter().find(|(i, _, _)| *i == name).copied().unwrap_or(("", "", &[]));
    for arg in args {
        if !arg.starts_with('-') || *arg == "-" {
            break;
        }
        let long = longs.iter().any(|l| arg == l || arg.starts_with(&format!("{l}=")));
        let short = !arg.starts_with("--") && arg.chars().skip(1).any(|c| letters.contains(c));
        if long || short {
            return Some(format!("runs inline code that cannot be checked (`{name} {arg}`)"));
        }
        if name.starts_with("python") && (*arg == "-m" || arg.starts_with("-m")) {
            return None;
        }
    }
    if !reads_program_from_stdin(name) || stdin_is_file {
        return None;
    }
    let script = args.iter().find(|a| !a.starts_with('-') || **a == "-");
    match script {
        Some(&"-") | None => Some(format!("runs code piped into `{name}` that cannot be checked")),
        Some(_) => None,
    }
}

/// awk programs may run commands (`system()`, `| "cmd"`, `"cmd" | getline`).
fn awk(name: &str, args: &[&str]) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let arg = args[i];
        if arg == "-f" || arg.starts_with("--file") {
            return None;
        }
        if matches!(arg, "-v" | "-F") {
            i += 2;
            continue;
        }
        if !arg.starts_with('-') {
            let runs = arg.contains("system") || arg.contains('|') || arg.contains("getline");
            return runs.then(|| format!("runs an {name} program that can start commands"));
        }
        i += 1;
    }
    None
}

//! The classification matrices: destructive commands (with quoting and evasion attempts), secret files, the
//! read-only allow-list, permission shapes, and the big table of `cases.json` run against a fixture project.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::*;

/// A scratch host: `project/` (the session directory), `sysbin/` (the PATH, holding an executable for every
/// command the cases name) and `home/`.
struct Fixture {
    _root: tempfile::TempDir,
    host: Host,
}

const EXTRA_PROGRAMS: &[&str] = &[
    "sh", "bash", "rm", "touch", "mkdir", "python3", "perl", "node", "ruby", "awk", "sed", "less", "more",
    "man", "env", "sudo", "xargs", "tee", "tar", "curl", "base64", "make", "cargo", "npm", "npx", "yes",
    "sleep", "cp", "xxd", "ssh", "nice", "timeout", "nohup", "stdbuf", "watch", "kubectl", "printenv", "zip",
    "rsync",
];

fn executable(path: &Path) {
    std::fs::write(path, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// An empty project with a full PATH.
fn clean() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let sysbin = root.path().join("sysbin");
    std::fs::create_dir_all(&sysbin).unwrap();
    for spec in allow::COMMANDS {
        if !spec.builtin {
            executable(&sysbin.join(spec.name));
        }
    }
    for name in EXTRA_PROGRAMS {
        executable(&sysbin.join(name));
    }
    let project = root.path().join("project");
    write(&project, "src/main.rs", "fn main() {}\n");
    write(&project, "src/lib.rs", "\n");
    write(&project, "notes.txt", "hello\n");
    write(&project, "README.md", "# x\n");
    let home = root.path().join("home");
    write(&home, ".ssh/id_ed25519", "key\n");
    write(&home, ".ssh/config", "Host x\n");
    write(&home, ".aws/credentials", "[default]\n");
    let host = Host { cwd: project, path: Some(sysbin.into_os_string()), home: Some(home) };
    Fixture { _root: root, host }
}

/// The project the table runs in: secrets at its root, a clean subdirectory, a hostile `bin/cat` and a symlink to
/// `.env`.
fn project() -> Fixture {
    let fixture = clean();
    let p = &fixture.host.cwd;
    for (rel, content) in [
        (".env", "TOKEN=1\n"),
        ("id_rsa", "key\n"),
        ("id_rsa.pub", "ssh-rsa\n"),
        ("keys/server.pem", "pem\n"),
        ("config/app.toml", "x = 1\n"),
        ("clean/a.txt", "TOKEN\n"),
        ("clean/b.md", "b\n"),
        ("victim", "precious\n"),
        ("cmds.txt", "rm -rf victim\n"),
        ("data.json", "{\"name\": 1}\n"),
        ("script.sh", "echo hi\n"),
    ] {
        write(p, rel, content);
    }
    std::fs::create_dir_all(p.join("bin")).unwrap();
    executable(&p.join("bin/cat"));
    std::os::unix::fs::symlink(p.join(".env"), p.join("link.txt")).unwrap();
    fixture
}

fn class_name(class: &Class) -> &'static str {
    match class {
        Class::Secret(_) => "secret",
        Class::Destructive(_) => "destructive",
        Class::ReadOnly => "read-only",
        Class::Normal => "ask",
    }
}

#[test]
fn every_case_of_the_table_gets_its_expected_class() {
    let table: serde_json::Value = serde_json::from_str(include_str!("cases.json")).unwrap();
    let fixture = project();
    let mut mismatches = Vec::new();
    let mut count = 0;
    for group in table["groups"].as_array().unwrap() {
        for case in group["cases"].as_array().unwrap() {
            let line = case[0].as_str().unwrap();
            let expected = case[1].as_str().unwrap();
            assert!(["read-only", "ask", "destructive", "secret"].contains(&expected), "{line}: {expected}");
            count += 1;
            let got = classify(line, &fixture.host);
            if class_name(&got) != expected {
                mismatches.push(format!("{line:?} ({}): expected {expected}, got {got:?}", group["name"]));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {count} cases differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(count >= 250, "the table holds {count} cases");
}

fn destructive_reasons(line: &str, host: &Host) -> Vec<String> {
    match classify(line, host) {
        Class::Destructive(reasons) => reasons,
        other => panic!("{line:?} should be destructive, got {other:?}"),
    }
}

#[test]
fn the_seed_list_is_destructive() {
    let fixture = clean();
    for line in [
        "rm -rf /",
        "rm -fr build",
        "rm -r -f node_modules",
        "rm --recursive --force dist",
        "rm -R tmp",
        "git push --force",
        "git push -f origin main",
        "git push origin +main",
        "git push --force-with-lease",
        "git reset --hard HEAD~3",
        "git clean -fd",
        "git clean --force",
        "git branch -D feature",
        "git -C repo branch --delete --force old",
        "psql -c 'DROP TABLE users'",
        "mysql -e \"drop database prod\"",
        "sqlite3 db 'truncate table logs'",
        "kill -9 1234",
        "kill -s KILL 1234",
        "pkill -9 node",
        "mkfs.ext4 /dev/sdb1",
        "mkfs -t ext4 /dev/sdb",
        "dd if=/dev/zero of=/dev/sda",
        "echo x > /dev/sda",
        "cat image > /dev/nvme0n1",
        "reboot",
        "shutdown -h now",
        "poweroff",
        "halt",
        "kubectl apply -f deploy.yaml",
        "kubectl delete pod x",
        "kubectl scale deploy web --replicas=0",
        "kubectl rollout restart deploy/web",
        "kubectl exec -it pod -- sh",
        "kubectl drain node1",
        "kubectl cordon node1",
        "oc create -f x.yaml",
        "oc patch dc/web -p '{}'",
        "oc adm policy add-role-to-user admin bob",
        "helm install web ./chart",
        "helm upgrade web ./chart",
        "helm uninstall web",
        "helm rollback web 1",
        "helm delete web",
        "systemctl restart nginx",
        "systemctl disable sshd",
        "systemctl mask firewalld",
        "useradd mallory",
        "passwd root",
        "visudo",
        "setenforce 0",
        "setsebool -P httpd_can_network_connect 1",
        "iptables -F",
        "ufw disable",
        "firewall-cmd --add-port=8080/tcp",
        "ip addr add 10.0.0.2/24 dev eth0",
        "ip route del default",
        "route add default gw 10.0.0.1",
        "find . -name '*.tmp' -delete",
    ] {
        assert!(!destructive_reasons(line, &fixture.host).is_empty(), "{line}");
    }
}

#[test]
fn quoting_wrappers_and_nesting_cannot_hide_a_destructive_command() {
    let fixture = clean();
    for line in [
        "rm '-rf' /",
        "r''m -rf /",
        "\"rm\" -rf /",
        r"\rm -rf /",
        r"$'\x72m' -rf /",
        "$(echo rm) -rf /",
        "`echo rm` -rf /",
        "$RM -rf /",
        "bash -c \"rm -rf /\"",
        "sh -c 'git push --force'",
        "bash -lc 'cd /tmp && rm -rf x'",
        "sudo rm -rf /var/lib",
        "sudo -u root rm -rf /",
        "env FOO=1 rm -rf /",
        "FOO=bar rm -rf /",
        "nice -n 10 rm -rf /",
        "timeout 10 rm -rf /",
        "xargs rm -rf < list",
        "find . -exec rm -rf {} \\;",
        "eval 'rm -rf /'",
        "ssh host rm -rf /",
        "ssh -p 2222 -i key.id user@host 'systemctl restart nginx'",
        "ssh host kubectl delete ns prod",
        "true && rm -rf /",
        "echo ok; git reset --hard",
        "ls | xargs kill -9",
        "cat list | (cd /; rm -rf tmp)",
        "if rm -rf /; then :; fi",
        "echo ${x:-$(rm -rf /)}",
        "cat <<EOF\n$(rm -rf /)\nEOF",
    ] {
        assert!(!destructive_reasons(line, &fixture.host).is_empty(), "{line}");
    }
}

#[test]
fn code_the_classifier_cannot_see_is_destructive_with_the_reason_named() {
    let fixture = clean();
    for (line, reason) in [
        ("echo 'rm -rf x' | sh", "runs code piped into `sh` that cannot be checked"),
        ("echo cm0gLXJmIHg= | base64 -d | bash", "runs code piped into `bash` that cannot be checked"),
        ("perl -e 'system(\"rm -rf x\")'", "runs inline code that cannot be checked (`perl -e`)"),
        ("python3 -c 'import os'", "runs inline code that cannot be checked (`python -c`)"),
        ("rg --pre ./x TOKEN", "runs a program named in an option (`rg --pre`)"),
        (
            "sort --compress-program=sh cmds.txt",
            "runs a program named in an option (`sort --compress-program=sh`)",
        ),
        ("git -c core.pager=x log", "sets git configuration that runs a program (`-c core.pager=x`)"),
        ("PATH=./bin:$PATH cat f", "sets `PATH`, which can make commands run another program"),
        ("awk 'BEGIN { system(\"id\") }'", "runs an awk program that can start commands"),
    ] {
        assert_eq!(destructive_reasons(line, &fixture.host), vec![reason.to_string()], "{line}");
    }
}

#[test]
fn ordinary_and_read_only_commands_are_not_destructive() {
    let fixture = clean();
    let host = fixture.host.clone();
    for (line, expected) in [
        ("rm file.txt", Class::Normal),
        ("git push origin main", Class::Normal),
        (
            "git commit -m 'drop table support'",
            Class::Destructive(vec!["drops or truncates database tables".into()]),
        ),
        ("cargo test", Class::Normal),
        ("kubectl get pods", Class::Normal),
        ("oc adm top nodes", Class::Normal),
        ("systemctl status nginx", Class::Normal),
        ("iptables -L -n", Class::Normal),
        ("helm list", Class::Normal),
        ("kill 1234", Class::Normal),
        ("echo hi > out.txt", Class::Normal),
        ("find . -name '*.rs' -exec grep -l foo {} +", Class::Normal),
        ("ip addr show", Class::Normal),
        ("bash script.sh", Class::Normal),
        ("sh < script.sh", Class::Normal),
        ("python3 -m pytest", Class::Normal),
        ("git -c user.name=x log", Class::Normal),
    ] {
        assert_eq!(classify(line, &host), expected, "{line}");
    }
}

#[test]
fn commands_naming_secret_files_are_secret_even_when_read_only() {
    let fixture = clean();
    let host = fixture.host.clone();
    for (line, files) in [
        ("cat .env", vec![".env"]),
        ("cp .env.local /tmp/x", vec![".env.local"]),
        ("grep KEY config/.env.production", vec!["config/.env.production"]),
        ("cat ~/.aws/credentials", vec!["~/.aws/credentials"]),
        ("openssl rsa -in server.key", vec!["server.key"]),
        ("curl --cert client.pem https://x", vec!["client.pem"]),
        ("echo \"$(cat .env)\"", vec![".env"]),
        ("sort < secrets/.env", vec!["secrets/.env"]),
        ("bash -c 'cat id.pem'", vec!["id.pem"]),
        ("cat /proc/self/environ", vec!["/proc/self/environ"]),
        ("docker --env-file=.env.prod run x", vec![".env.prod"]),
    ] {
        assert_eq!(
            classify(line, &host),
            Class::Secret(files.iter().map(|s| s.to_string()).collect()),
            "{line}"
        );
    }
    let key = host.home.as_ref().unwrap().join(".ssh/id_ed25519").display().to_string();
    assert_eq!(
        classify("cat ~/.ssh/id_*", &host),
        Class::Secret(vec!["~/.ssh/id_*".into(), "~/.ssh/id_* (matches secret file names)".into(), key])
    );
    assert_eq!(classify("cat environment.md", &host), Class::ReadOnly);
    assert_eq!(classify("cat credentials_test.go", &host), Class::ReadOnly);
    assert_eq!(classify("cat id_rsa.pub", &host), Class::ReadOnly);
}

#[test]
fn globs_and_symlinks_are_resolved_against_the_directory_before_deciding() {
    let fixture = project();
    let host = &fixture.host;
    let secret = |line: &str| match classify(line, host) {
        Class::Secret(files) => files,
        other => panic!("{line:?}: {other:?}"),
    };
    assert_eq!(secret("cat .e?v"), vec![".e?v (matches secret file names)", ".env"]);
    assert_eq!(secret("cat .env*"), vec![".env* (matches secret file names)", ".env"]);
    assert_eq!(
        secret("head link.txt"),
        vec![format!("link.txt (links to {})", host.cwd.join(".env").display())]
    );
    assert_eq!(secret("cat keys/*"), vec!["keys/server.pem"]);
    assert!(secret("cd keys && cat *").contains(&"server.pem".to_string()), "expanded where cd went too");
    assert_eq!(classify("cat clean/*", host), Class::ReadOnly);
    assert_eq!(classify("wc -l src/*.rs", host), Class::ReadOnly);
}

#[test]
fn recursive_searches_over_secret_files_ask_and_clean_ones_run() {
    let fixture = project();
    let host = &fixture.host;
    let secret = |line: &str| match classify(line, host) {
        Class::Secret(files) => files,
        other => panic!("{line:?}: {other:?}"),
    };
    let mut all = secret("grep -r TOKEN .");
    all.sort();
    let link = format!("link.txt (links to {})", host.cwd.join(".env").display());
    assert_eq!(all, vec![".env", "id_rsa", "keys/server.pem", link.as_str()]);
    assert!(!secret("rg TOKEN").contains(&".env".to_string()), "rg skips hidden files by default");
    assert!(secret("rg -uu TOKEN").contains(&".env".to_string()));
    assert!(secret("rg --hidden TOKEN").contains(&".env".to_string()));
    assert!(secret("git grep TOKEN").contains(&".env".to_string()));
    for line in [
        "grep -rn TOKEN clean",
        "rg TOKEN src",
        "rg -uu TOKEN clean",
        "diff -r clean src",
        "grep TOKEN notes.txt",
    ] {
        assert_eq!(classify(line, host), Class::ReadOnly, "{line}");
    }
}

#[test]
fn the_read_only_allow_list_is_narrow() {
    let fixture = clean();
    let host = fixture.host.clone();
    for line in [
        "git status",
        "git log --oneline -5",
        "git diff HEAD~1",
        "git show abc123",
        "git branch -a",
        "ls -la",
        "cat README.md",
        "head -n 20 src/main.rs",
        "rg -n 'fn main' src",
        "grep -rn TODO .",
        "find . -name '*.rs'",
        "wc -l src/*.rs",
        "cd src && ls",
        "git log | head -5",
        "ls 2>/dev/null",
        "pwd",
        "cat <<'EOF'\n$(rm -rf /)\nEOF",
    ] {
        assert_eq!(classify(line, &host), Class::ReadOnly, "{line}");
    }
    for line in [
        "git commit -m x",
        "git branch new-feature",
        "git tag v1",
        "git remote add origin x",
        "git -C sub status",
        "find . -exec cat {} \\;",
        "find . -fprint out.txt",
        "cat a > b",
        "ls && make",
        "sed -i s/a/b/ f",
        "npm test",
        "echo $(make)",
        "env",
        "printenv",
        "cd sub && git status",
    ] {
        assert_ne!(classify(line, &host), Class::ReadOnly, "{line}");
    }
}

#[test]
fn a_command_is_read_only_only_when_found_in_a_system_directory_of_path() {
    let fixture = clean();
    let mut host = fixture.host.clone();
    assert_eq!(classify("cat notes.txt", &host), Class::ReadOnly);
    let sysbin = std::env::split_paths(host.path.as_ref().unwrap()).next().unwrap();
    for path in [
        format!(".:{}", sysbin.display()),
        format!("bin:{}", sysbin.display()),
        format!(":{}", sysbin.display()),
        format!("{}/bin:{}", host.cwd.display(), sysbin.display()),
    ] {
        host.path = Some(path.clone().into());
        assert_eq!(classify("cat notes.txt", &host), Class::Normal, "PATH={path}");
        assert_eq!(classify("echo hi", &host), Class::ReadOnly, "builtins are not looked up: PATH={path}");
    }
    host.path = Some(format!("{}:.", sysbin.display()).into());
    assert_eq!(classify("cat notes.txt", &host), Class::ReadOnly, "found before the relative entry");
    host.path = None;
    assert_eq!(classify("cat notes.txt", &host), Class::Normal);
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn git_is_read_only_only_where_git_itself_reports_no_program_in_the_repository_or_a_submodule() {
    let fixture = clean();
    let host = &fixture.host;
    assert_eq!(classify("git status", host), Class::ReadOnly, "outside any repository");
    git(&host.cwd, &["init", "-q"]);
    let dotgit = host.cwd.join(".git");
    let base = std::fs::read_to_string(dotgit.join("config")).unwrap();
    assert_eq!(classify("git status", host), Class::ReadOnly);
    write(&dotgit, "evil.cfg", "[filter \"x\"]\n\tclean = x\n");
    write(&dotgit, "plain.cfg", "[user]\n\tname = someone\n");
    for (config, what) in [
        ("[core]\n\tfsmonitor = x\n", "a monitor"),
        ("[core]\n\tpager = x\n", "a pager"),
        ("[diff]\n\texternal = x\n", "an external diff"),
        ("[diff \"x\"]\n\ttextconv = x\n", "a textconv"),
        ("[FILTER \"x\"]\n\tCLEAN = x\n", "a filter in capitals"),
        ("[core]\n\thooksPath = hooks2\n", "a hooks path"),
        // A hand-written parser took the comment's backslash for a continuation and skipped the next line.
        ("[core]\n\t# tidy \\\n[core] fsmonitor = x\n", "a monitor after a comment ending in a backslash"),
        ("[core] [filter \"x\"] clean = x\n", "a filter after a second header on one line"),
        ("[include]\n\tpath = evil.cfg\n", "a filter in an included file"),
    ] {
        write(&dotgit, "config", &format!("{base}{config}"));
        assert_eq!(classify("git status", host), Class::Normal, "{what}");
    }
    write(&dotgit, "config", &format!("{base}[include]\n\tpath = plain.cfg\n"));
    assert_eq!(classify("git status", host), Class::ReadOnly, "an include git reads as harmless");
    write(&dotgit, "config", &base);
    write(&dotgit, "hooks/post-index-change", "#!/bin/sh\nrm -rf x\n");
    assert_eq!(classify("git status", host), Class::Normal, "a hook is installed");
    std::fs::remove_file(dotgit.join("hooks/post-index-change")).unwrap();
    assert_eq!(classify("git status", host), Class::ReadOnly);

    let lib = host.cwd.join("lib");
    write(&lib, "b.txt", "b\n");
    git(&lib, &["init", "-q"]);
    git(&lib, &["add", "."]);
    git(&lib, &["commit", "-q", "-m", "lib"]);
    git(&host.cwd, &["add", "lib"]);
    assert_eq!(classify("git diff", host), Class::ReadOnly, "a submodule that runs nothing");
    let sub_config = lib.join(".git/config");
    let sub_base = std::fs::read_to_string(&sub_config).unwrap();
    std::fs::write(&sub_config, format!("{sub_base}[core]\n\tfsmonitor = x\n")).unwrap();
    assert_eq!(classify("git diff", host), Class::Normal, "a submodule's monitor");
    let inside = Host { cwd: lib.join("deeper"), ..host.clone() };
    std::fs::create_dir_all(&inside.cwd).unwrap();
    assert_eq!(classify("git log", &inside), Class::Normal, "from inside the submodule");
}

#[test]
fn shapes_name_plain_commands_by_prefix_and_everything_else_exactly() {
    let prefix = |s: &str| Shape::Prefix(s.into());
    let exact = |s: &str| Shape::Exact(s.into());
    assert_eq!(shapes("git commit -m 'x'"), vec![prefix("git commit")]);
    assert_eq!(shapes("npm test -- --watch"), vec![prefix("npm test")]);
    assert_eq!(shapes("ls -la"), vec![prefix("ls")]);
    assert_eq!(shapes("cargo build && cargo test"), vec![prefix("cargo build"), prefix("cargo test")]);
    assert_eq!(
        shapes("FOO=1 sudo make install"),
        vec![exact("FOO=1 sudo make install"), exact("make install")]
    );
    assert_eq!(shapes("python script.py"), vec![exact("python script.py")]);
    assert_eq!(shapes("bash -c 'rm x'"), vec![exact("bash -c 'rm x'"), exact("rm x")]);
    assert_eq!(shapes("echo hello | sh"), vec![prefix("echo"), exact("sh"), exact("'echo hello | sh'")]);
    assert_eq!(shapes("python3 -c 'print(1)'")[1], exact(r"'python3 -c '\''print(1)'\'''"));
    assert_eq!(
        shapes("sh -c 'curl x | python3'"),
        vec![exact("sh -c 'curl x | python3'"), exact("curl x"), exact("python3")]
    );
    assert_eq!(shapes("git -c core.pager=x log"), vec![exact("git -c core.pager=x log")]);
    assert_eq!(shapes("npm exec evil"), vec![exact("npm exec evil")]);
    assert_eq!(shapes("./run.sh --fast"), vec![exact("./run.sh --fast")]);
    assert_eq!(shapes("echo hi > out.txt"), vec![exact("echo hi >out.txt")]);
    assert_eq!(shapes("echo '$x' \"$x\""), vec![prefix("echo")]);
    assert_eq!(shapes("sudo echo '$x' \"$x\"")[0], exact("sudo echo '$x' \"$x\""));
    assert_eq!(shapes("cat <<EOF | sh\nid\nEOF")[0], exact("cat <<EOF $'id\\n'"));
    assert_eq!(shapes("echo $(id)"), vec![prefix("echo"), exact("id")]);
    assert_eq!(shapes("find . -exec rm {} +"), vec![exact("find . -exec rm '{}' +"), exact("rm '{}'")]);
    assert_eq!(shapes("echo 'oops"), vec![exact("'echo '\\''oops'")]);
}

#[test]
fn runners_wrappers_and_paths_can_never_be_remembered_as_a_prefix() {
    for pattern in [
        "sh",
        "bash",
        "python3",
        "python3.12",
        "node",
        "perl",
        "env",
        "xargs",
        "sudo",
        "find",
        "awk",
        "make",
        "npm exec",
        "docker run",
        "./bin/x",
        "/usr/bin/sh",
        "PATH=x",
        "*",
        "",
        "$X",
    ] {
        assert!(!may_be_prefix(pattern), "{pattern:?}");
    }
    for pattern in ["git commit", "cargo test", "ls", "npm test", "rm"] {
        assert!(may_be_prefix(pattern), "{pattern:?}");
    }
}

#[test]
fn the_allow_list_holds_no_option_that_writes_files_or_runs_programs() {
    let forbidden: &[(&str, &[&str])] = &[
        ("sort", &["-o", "--output", "-T", "--temporary-directory", "--compress-program"]),
        ("tree", &["-o", "-R", "-H", "--fromfile"]),
        ("file", &["-C", "--compile", "-m", "--magic-file", "-z", "-Z"]),
        ("rg", &["--pre", "--pre-glob", "-z", "--search-zip", "--hostname-bin"]),
        (
            "find",
            &["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"],
        ),
        ("date", &["-s", "--set"]),
        ("hostname", &["-F", "--file", "-b", "--boot"]),
        (
            "git",
            &[
                "-c",
                "-C",
                "--config-env",
                "--exec-path",
                "--git-dir",
                "--work-tree",
                "-p",
                "--paginate",
                "--help",
            ],
        ),
        ("diff", &["-l", "--paginate"]),
    ];
    let has = |spec: &allow::Spec, option: &str| {
        spec.options
            .iter()
            .flat_map(|g| g.split_whitespace())
            .any(|o| o.trim_end_matches(['=', '?']) == option)
    };
    for (name, options) in forbidden {
        let spec = allow::lookup(name).unwrap();
        for option in *options {
            assert!(!has(spec, option), "{name} {option}");
        }
    }
    for sub in allow::lookup("git").unwrap().subcommands {
        for option in
            ["--output", "--ext-diff", "--textconv", "--show-signature", "-O", "--open-files-in-pager"]
        {
            assert!(!has(sub, option), "git {} {option}", sub.name);
        }
    }
    for spec in allow::COMMANDS {
        for option in spec.options.iter().flat_map(|g| g.split_whitespace()) {
            assert!(option.starts_with('-'), "{} {option}", spec.name);
        }
    }
}

//! The classification matrices: destructive commands (with quoting and evasion attempts), secret files, the
//! read-only allowlist, and permission prefixes.

use super::*;

fn destructive_reasons(line: &str) -> Vec<String> {
    match classify(line) {
        Class::Destructive(reasons) => reasons,
        other => panic!("{line:?} should be destructive, got {other:?}"),
    }
}

#[test]
fn the_seed_list_is_destructive() {
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
        assert!(!destructive_reasons(line).is_empty(), "{line}");
    }
}

#[test]
fn quoting_wrappers_and_nesting_cannot_hide_a_destructive_command() {
    for line in [
        "rm '-rf' /",
        "r''m -rf /",
        "\"rm\" -rf /",
        r"\rm -rf /",
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
    ] {
        assert!(!destructive_reasons(line).is_empty(), "{line}");
    }
}

#[test]
fn ordinary_and_read_only_commands_are_not_destructive() {
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
    ] {
        assert_eq!(classify(line), expected, "{line}");
    }
}

#[test]
fn commands_naming_secret_files_are_secret_even_when_read_only() {
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
    ] {
        assert_eq!(classify(line), Class::Secret(files.iter().map(|s| s.to_string()).collect()), "{line}");
    }
    assert_eq!(classify("cat environment.md"), Class::ReadOnly);
    assert_eq!(classify("cat credentials_test.go"), Class::ReadOnly);
}

#[test]
fn the_read_only_allowlist_is_narrow() {
    for line in [
        "git status",
        "git log --oneline -5",
        "git diff HEAD~1",
        "git show abc123",
        "git branch -a",
        "git -C sub status",
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
    ] {
        assert_eq!(classify(line), Class::ReadOnly, "{line}");
    }
    for line in [
        "git commit -m x",
        "git branch new-feature",
        "git tag v1",
        "git remote add origin x",
        "find . -exec cat {} \\;",
        "find . -fprint out.txt",
        "rg --pre ./script x",
        "cat a > b",
        "ls && make",
        "sed -i s/a/b/ f",
        "npm test",
        "echo $(make)",
        "env",
        "printenv",
    ] {
        assert_ne!(classify(line), Class::ReadOnly, "{line}");
    }
}

#[test]
fn permission_prefixes_name_the_command_and_its_subcommand() {
    assert_eq!(prefixes("git commit -m 'x'"), vec!["git commit"]);
    assert_eq!(prefixes("npm test -- --watch"), vec!["npm test"]);
    assert_eq!(prefixes("ls -la"), vec!["ls"]);
    assert_eq!(prefixes("cargo build && cargo test"), vec!["cargo build", "cargo test"]);
    assert_eq!(prefixes("FOO=1 sudo make install"), vec!["make install"]);
    assert_eq!(prefixes("python script.py"), vec!["python"]);
    assert_eq!(prefixes("bash -c 'rm x'"), vec!["bash -c rm x"]);
}

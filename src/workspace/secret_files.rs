//! Which files hold secrets, judged by name and place alone: environment files, private keys, credential and
//! token stores. One table serves every reader: the file tools ask before reading such a file, grep and glob
//! leave them out of walks, and the shell classifier asks before a command that names one.
//!
//! Owns the table and the predicate [`is_secret_path`]. Pure: never touches the file system (so a path that
//! does not exist yet, or a word from a shell command, is judged the same way).

use std::path::Path;

/// How a rule recognises a path. Names compare ASCII case-insensitively.
#[derive(Debug, Clone, Copy)]
enum Match {
    /// The file name is exactly this.
    Name(&'static str),
    /// The file name starts with this (and is longer).
    Prefix(&'static str),
    /// The file name ends with this (and is longer).
    Suffix(&'static str),
    /// The file name starts with the first and ends with the second.
    Affix(&'static str, &'static str),
    /// The path ends with these components; `*` stands for any one component.
    Tail(&'static [&'static str]),
    /// Any file anywhere below a directory of this name.
    Under(&'static str),
}

/// A kind of secret file.
struct Rule {
    matches: Match,
    what: &'static str,
}

const fn rule(matches: Match, what: &'static str) -> Rule {
    Rule { matches, what }
}

use Match::{Affix, Name, Prefix, Suffix, Tail, Under};

/// The secret files. Broad on purpose: asking once too often costs a click, reading a key costs the key.
const SECRET_FILES: &[Rule] = &[
    // Environment files: `.env`, `.env.local`, `.env.production`, `prod.env`, direnv's `.envrc`.
    rule(Name(".env"), "environment file"),
    rule(Prefix(".env."), "environment file"),
    rule(Suffix(".env"), "environment file"),
    rule(Name(".envrc"), "environment file"),
    // Private keys and key stores.
    rule(Name("id_rsa"), "SSH private key"),
    rule(Name("id_dsa"), "SSH private key"),
    rule(Name("id_ecdsa"), "SSH private key"),
    rule(Name("id_ed25519"), "SSH private key"),
    rule(Name("id_ecdsa_sk"), "SSH private key"),
    rule(Name("id_ed25519_sk"), "SSH private key"),
    rule(Suffix("_rsa"), "SSH private key"),
    rule(Suffix("_ed25519"), "SSH private key"),
    rule(Suffix("_ecdsa"), "SSH private key"),
    rule(Suffix(".pem"), "key or certificate"),
    rule(Suffix(".key"), "private key"),
    rule(Suffix(".p8"), "private key"),
    rule(Suffix(".ppk"), "PuTTY private key"),
    rule(Suffix(".p12"), "key store"),
    rule(Suffix(".pfx"), "key store"),
    rule(Suffix(".keystore"), "key store"),
    rule(Suffix(".jks"), "key store"),
    rule(Suffix(".keytab"), "Kerberos key table"),
    rule(Suffix(".kdbx"), "password database"),
    rule(Under(".ssh"), "SSH key or configuration"),
    rule(Under(".gnupg"), "GnuPG key ring"),
    // Credential and token files of tools and clouds.
    rule(Name("credentials"), "credentials"),
    rule(Name("credentials.json"), "credentials"),
    rule(Name("credentials.toml"), "credentials"),
    rule(Name("credentials.db"), "credentials"),
    rule(Name("credentials.tfrc.json"), "Terraform credentials"),
    rule(Name("application_default_credentials.json"), "Google Cloud credentials"),
    rule(Name("access_tokens.db"), "Google Cloud tokens"),
    rule(Affix("client_secret", ".json"), "OAuth client secret"),
    rule(Name("accesstokens.json"), "Azure tokens"),
    rule(Prefix("msal_token_cache"), "Azure tokens"),
    rule(Name(".npmrc"), "package registry token"),
    rule(Name(".pypirc"), "package registry token"),
    rule(Tail(&[".composer", "auth.json"]), "package registry token"),
    rule(Name(".netrc"), "login credentials"),
    rule(Name("_netrc"), "login credentials"),
    rule(Name(".git-credentials"), "Git credentials"),
    rule(Tail(&["gh", "hosts.yml"]), "GitHub CLI token"),
    rule(Name(".pgpass"), "database password"),
    rule(Name(".my.cnf"), "database password"),
    rule(Name(".htpasswd"), "password file"),
    rule(Name(".vault-token"), "Vault token"),
    rule(Name(".terraformrc"), "Terraform credentials"),
    rule(Suffix(".tfstate"), "Terraform state (holds secrets in clear)"),
    rule(Suffix(".tfstate.backup"), "Terraform state (holds secrets in clear)"),
    rule(Name(".boto"), "cloud credentials"),
    rule(Name(".s3cfg"), "cloud credentials"),
    rule(Name(".dockercfg"), "registry credentials"),
    rule(Tail(&[".docker", "config.json"]), "registry credentials"),
    rule(Tail(&[".kube", "config"]), "Kubernetes credentials"),
    rule(Name("kubeconfig"), "Kubernetes credentials"),
    rule(Suffix(".kubeconfig"), "Kubernetes credentials"),
    rule(Name("secrets.yaml"), "secrets file"),
    rule(Name("secrets.yml"), "secrets file"),
    rule(Name("secrets.json"), "secrets file"),
    rule(Name("secrets.toml"), "secrets file"),
    rule(Name("secret.yaml"), "secrets file"),
    rule(Name("secret.yml"), "secrets file"),
    // A process's environment holds its keys.
    rule(Tail(&["proc", "*", "environ"]), "process environment"),
    rule(Tail(&["proc", "*", "task", "*", "environ"]), "process environment"),
];

/// Files that match a rule above but are meant to be shared: templates and public halves.
const NOT_SECRET: &[Match] = &[
    Suffix(".example"),
    Suffix(".sample"),
    Suffix(".template"),
    Suffix(".dist"),
    Suffix(".pub"),
    Name("known_hosts"),
    Name("known_hosts.old"),
    Name("authorized_keys"),
];

/// The path's named parts (`.`, `..` and empty ones left out), last first: split on separators byte by byte,
/// as a walk calls this for every file it meets.
fn components(path: &Path) -> impl Iterator<Item = &[u8]> {
    path.as_os_str()
        .as_encoded_bytes()
        .rsplit(|b| std::path::is_separator(char::from(*b)))
        .filter(|part| !matches!(*part, b"" | b"." | b".."))
}

/// Whether a part is `name`, ignoring ASCII case.
fn is(part: &[u8], name: &str) -> bool {
    part.eq_ignore_ascii_case(name.as_bytes())
}

/// The directories of the `Under` rules, found in one pass over a path's parts.
const UNDER: [&str; 2] = [".ssh", ".gnupg"];

/// A path being judged: its file name lower-cased, and which [`UNDER`] directories it lies below.
struct Subject<'a> {
    name: &'a str,
    path: &'a Path,
    under: [bool; UNDER.len()],
}

impl Subject<'_> {
    fn below(&self, dir: &str) -> bool {
        match UNDER.iter().position(|d| *d == dir) {
            Some(i) => self.under[i],
            None => components(self.path).skip(1).any(|part| is(part, dir)),
        }
    }
}

/// Whether `rule` matches the subject.
fn matches(rule: Match, subject: &Subject<'_>) -> bool {
    let name = subject.name;
    match rule {
        Name(n) => name == n,
        Prefix(p) => name.len() > p.len() && name.starts_with(p),
        Suffix(s) => name.len() > s.len() && name.ends_with(s),
        Affix(p, s) => name.len() > p.len() + s.len() && name.starts_with(p) && name.ends_with(s),
        Tail(tail) => {
            let mut parts = components(subject.path);
            tail.iter().rev().all(|want| parts.next().is_some_and(|have| *want == "*" || is(have, want)))
        }
        Under(dir) => subject.below(dir),
    }
}

/// What kind of secret file `path` is, or `None` when it is not one. A walk calls this for every file it
/// meets: a short ASCII name is lower-cased on the stack, and the path's parts are scanned once.
pub fn secret_kind(path: &Path) -> Option<&'static str> {
    let mut parts = components(path);
    let last = parts.next()?;
    let mut under = [false; UNDER.len()];
    for part in parts {
        for (i, dir) in UNDER.iter().enumerate() {
            under[i] |= is(part, dir);
        }
    }
    let mut small = [0u8; 64];
    let owned: String;
    let name = match small.get_mut(..last.len()) {
        Some(buffer) if last.is_ascii() => {
            buffer.copy_from_slice(last);
            buffer.make_ascii_lowercase();
            std::str::from_utf8(buffer).unwrap_or_default()
        }
        _ => {
            owned = String::from_utf8_lossy(last).to_ascii_lowercase();
            &owned
        }
    };
    let subject = Subject { name, path, under };
    if NOT_SECRET.iter().any(|m| matches(*m, &subject)) {
        return None;
    }
    SECRET_FILES.iter().find(|r| matches(r.matches, &subject)).map(|r| r.what)
}

/// Whether `path` names a secret file (see the module docs). Relative paths and shell words (`~/.ssh/id_rsa`)
/// are judged by their components.
pub fn is_secret_path(path: &Path) -> bool {
    secret_kind(path).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_matrix_names_each_kind_of_secret_file() {
        for (path, kind) in [
            (".env", "environment file"),
            ("/p/.env.local", "environment file"),
            ("config/.env.production", "environment file"),
            ("deploy/prod.env", "environment file"),
            (".envrc", "environment file"),
            ("id_rsa", "SSH private key"),
            ("/home/u/.ssh/id_ed25519", "SSH private key"),
            ("~/.ssh/id_rsa", "SSH private key"),
            ("keys/deploy_rsa", "SSH private key"),
            ("server.pem", "key or certificate"),
            ("tls/server.KEY", "private key"),
            ("AuthKey_ABC.p8", "private key"),
            ("cert.p12", "key store"),
            ("cert.pfx", "key store"),
            ("release.keystore", "key store"),
            ("app.jks", "key store"),
            ("~/.ssh/config", "SSH key or configuration"),
            ("/home/u/.gnupg/private-keys-v1.d/ABC", "GnuPG key ring"),
            ("credentials.json", "credentials"),
            ("/home/u/.aws/credentials", "credentials"),
            ("~/.cargo/credentials.toml", "credentials"),
            ("/home/u/.config/gcloud/application_default_credentials.json", "Google Cloud credentials"),
            ("client_secret_1234.apps.googleusercontent.com.json", "OAuth client secret"),
            (".npmrc", "package registry token"),
            ("/home/u/.pypirc", "package registry token"),
            (".netrc", "login credentials"),
            (".git-credentials", "Git credentials"),
            ("/home/u/.config/gh/hosts.yml", "GitHub CLI token"),
            (".pgpass", "database password"),
            ("infra/terraform.tfstate", "Terraform state (holds secrets in clear)"),
            ("/home/u/.docker/config.json", "registry credentials"),
            ("/home/u/.kube/config", "Kubernetes credentials"),
            ("secrets.yaml", "secrets file"),
            ("deploy/secrets.yml", "secrets file"),
            ("/proc/self/environ", "process environment"),
            ("/proc/1234/task/1235/environ", "process environment"),
        ] {
            assert_eq!(secret_kind(Path::new(path)), Some(kind), "{path}");
        }
    }

    #[test]
    fn templates_public_keys_and_ordinary_files_are_not_secret() {
        for path in [
            ".env.example",
            ".env.sample",
            ".env.template",
            ".env.dist",
            "secrets.yaml.example",
            "/home/u/.ssh/id_rsa.pub",
            "/home/u/.ssh/known_hosts",
            "/home/u/.ssh/authorized_keys",
            "/home/u/.ssh",
            "environment.md",
            "credentials_test.go",
            "client_secret_test.go",
            "src/secrets.rs",
            "config.json",
            ".docker/daemon.json",
            "kube/config",
            "/proc/self/status",
            "README.md",
            "",
            "/",
        ] {
            assert_eq!(secret_kind(Path::new(path)), None, "{path}");
        }
    }
}

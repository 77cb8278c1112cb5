use std::ffi::OsString;
use std::sync::atomic::AtomicUsize;

use super::*;
use crate::config::EnvPolicy;

/// A project with programs of its own (`.venv/bin`, `node_modules/.bin`, `bin`), the user's folder with the same
/// names outside it, a symlink from outside into the project, and rustup settings naming the user's default.
struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    user_bin: PathBuf,
}

fn script(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let project = root.join("project");
    let user_bin = root.join("user/bin");
    for tool in ["fmt", "server"] {
        script(&project.join(".venv/bin").join(tool));
        script(&project.join("node_modules/.bin").join(tool));
        script(&project.join("bin").join(tool));
    }
    script(&user_bin.join("fmt"));
    script(&project.join("evil"));
    std::fs::create_dir_all(root.join("user/linked")).unwrap();
    std::os::unix::fs::symlink(project.join("evil"), root.join("user/linked/only-evil")).unwrap();
    std::os::unix::fs::symlink(project.join(".venv/bin"), root.join("user/venv-link")).unwrap();
    std::fs::create_dir_all(root.join("rustup")).unwrap();
    std::fs::write(
        root.join("rustup/settings.toml"),
        "version = \"12\"\ndefault_toolchain = \"stable-user\"\n",
    )
    .unwrap();
    World { _dir: dir, root, project, user_bin }
}

impl World {
    fn path_var(&self) -> String {
        let p = |rel: &str| self.project.join(rel).display().to_string();
        [
            String::new(),
            "bin".into(),
            "./node_modules/.bin".into(),
            p(".venv/bin"),
            p("node_modules/.bin"),
            self.root.join("user/venv-link").display().to_string(),
            self.root.join("user/missing").display().to_string(),
            self.root.join("user/linked").display().to_string(),
            self.user_bin.display().to_string(),
        ]
        .join(":")
    }

    fn environment(&self, extra: &[(&str, &str)]) -> Arc<Environment> {
        let vars: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), self.path_var().into()),
            ("RUSTUP_HOME".into(), self.root.join("rustup").into()),
        ];
        Arc::new(Environment::from_vars(&EnvPolicy::default(), vars).with(extra.iter().copied()))
    }

    fn launcher(&self, extra: &[(&str, &str)]) -> Launcher {
        Launcher::new(std::slice::from_ref(&self.project), self.environment(extra))
    }
}

#[test]
fn path_entries_that_are_empty_relative_missing_or_inside_the_project_are_skipped() {
    let w = world();
    let roots = forms(&w.project);
    let dirs = outside_dirs(Some(OsStr::new(&w.path_var())), &roots);
    assert_eq!(dirs, vec![w.root.join("user/linked"), w.user_bin.clone()]);
}

#[test]
fn an_untrusted_project_gets_the_users_program_a_clean_path_and_the_users_toolchain() {
    let w = world();
    let ready = w.launcher(&[]).prepare(Purpose::McpServer, "fmt", &w.project).unwrap();
    assert_eq!(ready.program, w.user_bin.join("fmt"));
    let path = format!("{}:{}", w.root.join("user/linked").display(), w.user_bin.display());
    assert_eq!(ready.environment.get("PATH"), Some(OsStr::new(&path)));
    assert_eq!(ready.environment.get("RUSTUP_TOOLCHAIN"), Some(OsStr::new("stable-user")));
}

#[test]
fn a_program_that_resolves_into_the_project_or_names_a_file_in_it_is_refused() {
    let w = world();
    let launcher = w.launcher(&[]);
    let evil = w.project.join("evil");
    let refused = |program: &str| launcher.prepare(Purpose::McpServer, program, &w.project).unwrap_err();
    assert_eq!(
        refused("only-evil"),
        LaunchError::InsideProject { program: "only-evil".into(), path: evil.clone() },
        "a symlink outside the project that points into it"
    );
    assert_eq!(
        refused(&evil.display().to_string()),
        LaunchError::InsideProject { program: evil.display().to_string(), path: evil.clone() }
    );
    assert_eq!(refused("./bin/fmt"), LaunchError::Relative { program: "./bin/fmt".into() });
    assert_eq!(refused("server"), LaunchError::NotFoundOutside { program: "server".into() });
}

#[test]
fn formatters_and_language_servers_wait_for_trust_and_say_so_once_then_run_as_configured() {
    let w = world();
    let launcher = w.launcher(&[]);
    let told = Arc::new(AtomicUsize::new(0));
    let counter = told.clone();
    launcher.on_hold(Arc::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    }));
    for purpose in [Purpose::Formatter, Purpose::LanguageServer, Purpose::Formatter] {
        assert_eq!(
            launcher.prepare(purpose, "fmt", &w.project),
            Err(LaunchError::WaitsForTrust { program: "fmt".into() })
        );
    }
    assert_eq!(told.load(Ordering::SeqCst), 1, "one notice for the session");
    assert!(!launcher.holds(Purpose::McpServer) && !launcher.holds(Purpose::Git));
    launcher.set_trusted(true);
    let ready = launcher.prepare(Purpose::Formatter, "fmt", &w.project).unwrap();
    assert_eq!(ready.program, w.project.join(".venv/bin/fmt"), "a trusted project's PATH applies as it is");
    assert_eq!(ready.environment, *w.environment(&[]));
    assert_eq!(
        launcher.prepare(Purpose::Formatter, "./bin/fmt", &w.project).unwrap().program,
        w.project.join("./bin/fmt")
    );
}

#[test]
fn the_users_own_toolchain_choice_stays_unless_it_names_a_path_in_the_project() {
    let w = world();
    let given = w.launcher(&[("RUSTUP_TOOLCHAIN", "nightly")]).prepare(Purpose::Probe, "fmt", &w.project);
    assert_eq!(given.unwrap().environment.get("RUSTUP_TOOLCHAIN"), Some(OsStr::new("nightly")));
    let inside = w.project.join("toolchain").display().to_string();
    let pinned = w.launcher(&[("RUSTUP_TOOLCHAIN", &inside)]).prepare(Purpose::Probe, "fmt", &w.project);
    assert_eq!(pinned.unwrap().environment.get("RUSTUP_TOOLCHAIN"), Some(OsStr::new("stable-user")));
    let relative = w.launcher(&[("RUSTUP_TOOLCHAIN", "tc/x"), ("RUSTUP_HOME", "/nonexistent")]);
    let none = relative.prepare(Purpose::Probe, "fmt", &w.project).unwrap();
    assert_eq!(none.environment.get("RUSTUP_TOOLCHAIN"), Some(OsStr::new("none")), "no default: fail closed");
}

#[test]
fn git_is_never_taken_from_the_work_tree_it_runs_in() {
    let w = world();
    std::fs::create_dir_all(w.project.join(".git")).unwrap();
    let sub = w.project.join("src");
    std::fs::create_dir_all(&sub).unwrap();
    let roots = work_tree_roots(&sub);
    assert!(roots.contains(&w.project) && roots.contains(&sub), "{roots:?}");
    let dirs = outside_dirs(Some(OsStr::new(&w.path_var())), &roots);
    assert_eq!(dirs, vec![w.root.join("user/linked"), w.user_bin.clone()]);
}

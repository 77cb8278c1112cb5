//! The ignore stack's layers and precedence, and the ripgrep `.gitignore` vectors
//! (`tests/fixtures/gitignore_cases.json`).

use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

/// `./a/./b` → `a/b`; `.` and `./` → empty.
fn normalise(path: &str) -> PathBuf {
    Path::new(path).components().filter(|c| *c != std::path::Component::CurDir).collect()
}

#[test]
fn every_ripgrep_gitignore_vector_gives_the_expected_answer() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/gitignore_cases.json");
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(cases.len(), 63);
    for case in cases {
        let base = tempfile::tempdir().unwrap();
        let root = case["root"].as_str().unwrap();
        let root_dir = base.path().join(normalise(root.trim_start_matches('/')));
        std::fs::create_dir_all(&root_dir).unwrap();
        write(&root_dir.join(".gitignore"), case["gitignore"].as_str().unwrap());
        // Relative roots and paths are both relative to the process's directory; absolute roots hold the path.
        let rel = normalise(case["path"].as_str().unwrap());
        let full = if root.starts_with('/') { root_dir.join(&rel) } else { base.path().join(&rel) };
        let level = Stack::plain(base.path()).level(&root_dir);
        assert_eq!(
            level.ignores(&full, case["is_dir"].as_bool().unwrap()),
            case["expect_ignored"].as_bool().unwrap(),
            "{}: {:?} against {:?}",
            case["name"],
            case["path"],
            case["gitignore"]
        );
    }
}

#[test]
fn kinds_rank_before_depth_and_the_nearest_directory_wins_within_a_kind() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(&root.join(".gitignore"), "*.log\nbuild/\n");
    write(&root.join("keep/.gitignore"), "!important.log\n");
    write(&root.join(".ignore"), "!build/\n");
    write(&root.join(".git/info/exclude"), "secret-notes.txt\n");
    write(&root.join(".tinycodeignore"), "!*.trace\n");
    write(&root.join("deep/.gitignore"), "*.trace\n");
    let top = Stack::plain(root).level(root);
    assert!(top.ignores(&root.join("a.log"), false));
    assert!(!top.ignores(&root.join("build"), true), ".ignore outranks .gitignore");
    assert!(top.ignores(&root.join("secret-notes.txt"), false));
    let keep = top.enter(&root.join("keep"), Present::unknown());
    assert!(!keep.ignores(&root.join("keep/important.log"), false));
    assert!(keep.ignores(&root.join("keep/other.log"), false));
    let deep = top.enter(&root.join("deep"), Present::unknown());
    assert!(
        !deep.ignores(&root.join("deep/x.trace"), false),
        "the user's .tinycodeignore outranks a deeper .gitignore"
    );
}

#[test]
fn defaults_hide_dependency_folders_anywhere_and_source_like_names_only_at_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let level = Stack::plain(root).level(root);
    for (rel, is_dir, hidden) in [
        ("node_modules", true, true),
        ("web/node_modules", true, true),
        ("pkg/__pycache__", true, true),
        ("bin", true, true),
        ("src/bin", true, false),
        ("target", true, true),
        ("crates/x/target", true, false),
        ("vendor", true, true),
        ("third_party/vendor", true, false),
        ("build", true, true),
        ("tools/build", true, false),
        ("bin", false, false),
        ("myvendor", true, false),
        ("a.pyc", false, true),
        (".tinycode", true, true),
        (".github", true, false),
    ] {
        assert_eq!(level.ignores(&root.join(rel), is_dir), hidden, "{rel} (dir: {is_dir})");
    }
}

#[test]
fn defaults_are_anchored_at_the_project_root_even_when_a_subdirectory_is_searched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let stack = Stack::plain(root);
    let src = stack.level(&root.join("src"));
    assert!(!src.ignores(&root.join("src/bin"), true), "src/bin is a source folder, not the root's bin");
    let outside = tempfile::tempdir().unwrap();
    let other = stack.level(outside.path());
    assert!(
        other.ignores(&outside.path().join("bin"), true),
        "outside the project, the searched root anchors"
    );
}

#[test]
fn a_tinycodeignore_re_includes_what_the_defaults_and_gitignore_leave_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(&root.join(".gitignore"), "generated/\n");
    write(&root.join(".tinycodeignore"), "!vendor/\n!generated/\n");
    let level = Stack::plain(root).level(root);
    assert!(!level.ignores(&root.join("vendor"), true));
    assert!(!level.ignores(&root.join("generated"), true));
    assert!(level.ignores(&root.join("node_modules"), true));
}

#[test]
fn version_control_directories_are_hidden_whatever_the_ignore_files_say() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(&root.join(".tinycodeignore"), "!.git/\n!.hg/\n");
    let level = Stack::plain(root).level(root);
    for vcs in VCS_DIRS {
        assert!(level.ignores(&root.join(vcs), true), "{vcs}");
        assert!(level.ignores(&root.join("sub").join(vcs), true), "sub/{vcs}");
    }
    assert!(!level.ignores(&root.join(".gitignore"), false));
    assert!(!level.ignores(&root.join(".git"), false), "a file named .git (a worktree link) is a file");
}

#[test]
fn the_global_excludes_file_applies_below_every_project_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    write(&dir.path().join("global-ignore"), "*.orig\n*.bak\n");
    write(&root.join(".gitignore"), "!keep.bak\n");
    let level = Stack::new(&root, Some(&dir.path().join("global-ignore"))).level(&root);
    assert!(level.ignores(&root.join("a.orig"), false));
    assert!(level.ignores(&root.join("sub/a.bak"), false));
    assert!(!level.ignores(&root.join("keep.bak"), false), "the project re-includes over the global file");
    let missing = Stack::new(&root, Some(&dir.path().join("nope"))).level(&root);
    assert!(!missing.ignores(&root.join("a.orig"), false));
}

#[test]
fn ignore_files_that_are_fifos_or_devices_count_as_absent_and_never_block() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    mkfifo(&root.join(".gitignore"));
    mkfifo(&root.join(".tinycodeignore"));
    std::os::unix::fs::symlink("/dev/zero", root.join(".ignore")).unwrap();
    let level = Stack::plain(root).level(root);
    assert!(level.node.rules.iter().all(Option::is_none));
    assert!(!level.ignores(&root.join("a.log"), false));
    mkfifo(&dir.path().join("global"));
    let global = Stack::new(root, Some(&dir.path().join("global")));
    assert!(global.global.is_none());
}

#[test]
fn a_single_path_is_ignored_when_any_directory_above_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(&root.join("lib/.gitignore"), "gen/\n");
    let stack = Stack::plain(root);
    assert!(ignored_below(&stack, root, &root.join("node_modules/pkg/index.js"), false));
    assert!(ignored_below(&stack, root, &root.join("lib/gen/a.rs"), false));
    assert!(!ignored_below(&stack, root, &root.join("lib/src/a.rs"), false));
    assert!(!ignored_below(&stack, root, &root.join("src/bin/main.rs"), false));
}

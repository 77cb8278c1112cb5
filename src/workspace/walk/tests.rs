//! The walk: what it visits, what it leaves out, and how it stops.

use super::*;

fn touch(root: &Path, rel: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "x").unwrap();
}

fn names(root: &Path) -> Vec<String> {
    let mut all: Vec<String> = files(root, None, &|_| true, &CancellationToken::new())
        .files
        .into_iter()
        .map(|f| f.path.strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .collect();
    all.sort();
    all
}

#[test]
fn skip_dirs_match_whole_components_and_gitignore_applies_without_a_repository() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for rel in [
        ".git/x",
        "node_modules/x",
        "vendor/x",
        "a/node_modules/x",
        ".tinycode/x",
        "myvendor/x",
        "src/bin/x",
        ".hidden/x",
        "ignored.txt",
        "kept.txt",
    ] {
        touch(root, rel);
    }
    std::fs::write(root.join(".gitignore"), "ignored.txt\n").unwrap();
    assert_eq!(names(root), vec![".gitignore", ".hidden/x", "kept.txt", "myvendor/x", "src/bin/x"]);
}

#[test]
fn a_cancelled_walk_returns_without_visiting_everything() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..50 {
        touch(dir.path(), &format!("d{i}/f"));
    }
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert!(files(dir.path(), None, &|_| true, &cancel).files.is_empty());
}

#[test]
fn secret_files_and_fifos_are_left_out_and_secrets_counted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for rel in ["src/main.rs", ".env", "config/.env.production", ".env.example", "keys/server.pem"] {
        touch(root, rel);
    }
    let pipe = std::ffi::CString::new(root.join("pipe").into_os_string().into_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(pipe.as_ptr(), 0o600) }, 0);
    let walked = files(root, None, &|_| true, &CancellationToken::new());
    assert_eq!(walked.secret_files, 3);
    assert_eq!(names(root), vec![".env.example", "src/main.rs"]);
}

#[test]
fn a_fifo_named_like_an_ignore_file_neither_blocks_the_walk_nor_hides_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    touch(root, "src/a.rs");
    touch(root, "sub/b.rs");
    for name in [".gitignore", ".ignore", "sub/.gitignore"] {
        let path = std::ffi::CString::new(root.join(name).into_os_string().into_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    }
    assert_eq!(names(root), vec!["src/a.rs", "sub/b.rs"]);
}

#[test]
fn max_depth_counts_levels_below_the_root() {
    let dir = tempfile::tempdir().unwrap();
    for rel in ["a.rs", "src/b.rs", "src/deep/c.rs"] {
        touch(dir.path(), rel);
    }
    let at = |depth| {
        let mut all: Vec<String> = files(dir.path(), Some(depth), &|_| true, &CancellationToken::new())
            .files
            .into_iter()
            .map(|f| f.path.strip_prefix(dir.path()).unwrap().to_string_lossy().into_owned())
            .collect();
        all.sort();
        all
    };
    assert_eq!(at(1), vec!["a.rs"]);
    assert_eq!(at(2), vec!["a.rs", "src/b.rs"]);
    assert_eq!(at(3), vec!["a.rs", "src/b.rs", "src/deep/c.rs"]);
}

#[test]
fn the_virtual_file_systems_are_never_entered() {
    let walked = files(Path::new("/proc/self"), Some(1), &|_| true, &CancellationToken::new());
    assert!(walked.files.is_empty());
    let dev = files(Path::new("/"), Some(2), &|rel| rel.starts_with("dev"), &CancellationToken::new());
    assert!(dev.files.is_empty(), "{:?}", dev.files);
}

#[test]
fn the_walker_applies_the_session_stack_and_the_deadline_stops_it_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for rel in ["src/a.rs", "vendor/v.rs", "bin/tool", "src/bin/main.rs", "x.orig"] {
        touch(root, rel);
    }
    std::fs::write(root.join("global"), "*.orig\n").unwrap();
    std::fs::write(root.join(".tinycodeignore"), "!vendor/\n").unwrap();
    let stack = Stack::new(root, Some(&root.join("global")));
    let mut seen: Vec<String> = Walker::new(root, &stack)
        .files()
        .files
        .into_iter()
        .map(|f| f.path.strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .collect();
    seen.sort();
    assert_eq!(seen, vec![".tinycodeignore", "global", "src/a.rs", "src/bin/main.rs", "vendor/v.rs"]);
    let past = Walker::new(root, &stack).deadline(Some(Instant::now())).files();
    assert!(past.timed_out);
    assert!(past.files.is_empty());
}

#[test]
fn paths_are_handed_over_without_being_inspected_and_keep_sees_relative_paths() {
    let dir = tempfile::tempdir().unwrap();
    for rel in ["a.rs", "src/b.rs", "src/c.txt"] {
        touch(dir.path(), rel);
    }
    let stack = Stack::plain(dir.path());
    let seen = Mutex::new(Vec::new());
    let summary = Walker::new(dir.path(), &stack)
        .keep(&|rel| rel.extension().is_some_and(|e| e == "rs"))
        .paths(&|path| seen.lock().unwrap().push(path));
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    assert_eq!(seen, vec![dir.path().join("a.rs"), dir.path().join("src/b.rs")]);
    assert_eq!(summary, Summary { secret_files: 0, timed_out: false });
}

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

#[test]
fn every_file_of_a_wide_and_deep_tree_is_visited_exactly_once_with_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = Vec::new();
    for a in 0..12 {
        for b in 0..4 {
            for (n, rel) in [format!("d{a}/f{a}"), format!("d{a}/e{b}/g{b}/f{a}_{b}")].into_iter().enumerate()
            {
                if n == 0 && b > 0 {
                    continue;
                }
                touch(dir.path(), &rel);
                expected.push(rel);
            }
        }
    }
    expected.sort();
    let stack = Stack::plain(dir.path());
    let walked = Walker::new(dir.path(), &stack).files();
    let mut seen: Vec<String> = walked
        .files
        .iter()
        .inspect(|f| assert_eq!(f.len, 1, "{}", f.path.display()))
        .map(|f| f.path.strip_prefix(dir.path()).unwrap().to_string_lossy().into_owned())
        .collect();
    seen.sort();
    assert_eq!(seen, expected);
}

#[test]
fn a_visitor_that_panics_ends_the_walk_with_its_panic_instead_of_leaving_threads_waiting() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..20 {
        touch(dir.path(), &format!("d{i}/f"));
    }
    let stack = Stack::plain(dir.path());
    let walk =
        std::panic::AssertUnwindSafe(|| Walker::new(dir.path(), &stack).paths(&|_| panic!("visitor failed")));
    let outcome = std::panic::catch_unwind(walk);
    assert!(outcome.is_err());
}

#[test]
fn relative_paths_are_the_bytes_after_the_root_and_its_separator() {
    assert_eq!(relative(Path::new("/a/b/c/d.rs"), Path::new("/a/b")), Path::new("c/d.rs"));
    assert_eq!(relative(Path::new("/a/b/c"), Path::new("/a/b/")), Path::new("c"));
    assert_eq!(relative(Path::new("/x"), Path::new("/")), Path::new("x"));
    // Not built from the root by a join: the component-wise answer, or the path itself.
    assert_eq!(relative(Path::new("/a/bc/d"), Path::new("/a/b")), Path::new("/a/bc/d"));
    assert_eq!(relative(Path::new("/a/./b/c"), Path::new("/a/b")), Path::new("c"));
}

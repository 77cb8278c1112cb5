//! Binary detection and the did-you-mean of `read`.

use super::*;

#[test]
fn binary_detection_weighs_nul_bytes_heavily() {
    assert!(!is_binary(b"plain text\n\twith tabs\r\n"));
    assert!(!is_binary(b""));
    let mut some_nul = vec![b'a'; 100];
    some_nul[..3].fill(0); // 30 weighted of 100
    assert!(!is_binary(&some_nul));
    some_nul[3] = 0; // 40 weighted
    assert!(is_binary(&some_nul));
    assert!(is_binary(&[1u8, 2, 3, 4, 5]));
}

#[test]
fn missing_files_suggest_siblings_sharing_a_three_character_prefix_but_not_ignored_ones() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["config.toml", "confirm.rs", "main.rs", "conf.log"] {
        std::fs::write(dir.path().join(name), "").unwrap();
    }
    std::fs::create_dir_all(dir.path().join("node_modules")).unwrap();
    std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
    let stack = Stack::plain(dir.path());
    let found = suggest_similar(&dir.path().join("conf.toml"), &stack);
    assert_eq!(found, vec![dir.path().join("config.toml"), dir.path().join("confirm.rs")]);
    assert!(suggest_similar(&dir.path().join("zz.rs"), &stack).is_empty());
    assert!(
        suggest_similar(&dir.path().join("node_mod.js"), &stack).is_empty(),
        "an ignored folder is not suggested"
    );
}

#[test]
fn the_largest_offset_and_limit_are_presented_without_overflowing() {
    let shown = present(&json!({"file_path": "a", "offset": u64::MAX, "limit": u64::MAX}), Path::new("/w"));
    assert_eq!(shown.title, format!("Read a (lines {}-{})", u64::MAX, u64::MAX));
    let shown = present(&json!({"file_path": "a", "offset": u64::MAX}), Path::new("/w"));
    assert_eq!(shown.title, format!("Read a (from line {})", u64::MAX));
}

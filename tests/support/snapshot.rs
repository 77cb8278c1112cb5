//! JSON snapshots under `tests/snapshots/`. `UPDATE_SNAPSHOTS=1` rewrites them; a missing snapshot is written on
//! a developer machine but fails under CI (`CI` set), so CI never passes on an unrecorded snapshot.

use std::path::PathBuf;

use serde_json::Value;

pub fn assert_snapshot(name: &str, actual: &Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(format!("{name}.json"));
    let pretty = serde_json::to_string_pretty(actual).unwrap() + "\n";
    let update = std::env::var_os("UPDATE_SNAPSHOTS").is_some();
    match std::fs::read_to_string(&path) {
        Ok(expected) if !update => {
            let expected: Value = serde_json::from_str(&expected).unwrap();
            assert_eq!(
                actual, &expected,
                "snapshot {name} differs; run with UPDATE_SNAPSHOTS=1 to accept.\nactual:\n{pretty}"
            );
        }
        Err(_) if std::env::var_os("CI").is_some() && !update => {
            panic!("snapshot {name} is missing:\n{pretty}")
        }
        _ => std::fs::write(&path, pretty).unwrap(),
    }
}

//! Build script: links the `tinycode` binary as a fixed-address (non-PIE) executable on Linux, and turns two
//! compiled-in JSON texts into Rust tables, so nothing on the way to the first answer parses them at run time.
//!
//! A position-independent executable makes the dynamic loader patch ~47,000 addresses in the binary's tables at
//! every start (each a write to a copy-on-write page): 0.5–2 ms before `main`, the largest single part of
//! `spawn → initialize` (benches/README.md). Linked at a fixed address, those are resolved once, at link time.
//! The shared libraries, heap and stacks stay randomised; only the agent's own code has a fixed address.
//!
//! Generated into `OUT_DIR`: the model catalogue (`src/llm/catalogue/models.json`) as a static array of entries,
//! and each stored params schema (`src/acp/schemas/*.json`) split into its root and its `$defs`, one text each.
//! Touches nothing else: the JSON files stay the source of truth and the tests check them.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

fn main() {
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let gnu = std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|env| env == "gnu");
    if linux && gnu {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
    order_hot_code();
    let out = std::env::var("OUT_DIR").map(std::path::PathBuf::from);
    let Ok(out) = out else { panic!("cargo sets OUT_DIR for build scripts") };
    write(&out.join("catalogue.rs"), &catalogue(Path::new("src/llm/catalogue/models.json")));
    write(&out.join("schemas.rs"), &schemas(Path::new("src/acp/schemas")));
}

/// Have the linker lay out the functions a session runs first and together (`packaging/link-order.txt`, written by
/// `benches/link_order.py`): the kernel maps code 64 KB at a time around each page first touched, so spread out,
/// the code that runs drags most of the binary into memory. Release builds of the one target whose default linker
/// is LLD (the option is LLD's); names the binary no longer has are skipped.
fn order_hot_code() {
    println!("cargo:rerun-if-changed=packaging/link-order.txt");
    // For a linker set up by hand that is not LLD (GNU ld does not know the option).
    println!("cargo:rerun-if-env-changed=TINYCODE_NO_LINK_ORDER");
    if std::env::var_os("TINYCODE_NO_LINK_ORDER").is_some() {
        return;
    }
    let release = std::env::var("PROFILE").is_ok_and(|profile| profile == "release");
    let lld = std::env::var("TARGET").is_ok_and(|target| target == "x86_64-unknown-linux-gnu");
    let Ok(root) = std::env::var("CARGO_MANIFEST_DIR") else { return };
    let order = Path::new(&root).join("packaging/link-order.txt");
    // `-Wl,` splits its argument at commas: a checkout whose path has one links without the order.
    if release && lld && order.is_file() && !order.to_string_lossy().contains(',') {
        println!("cargo:rustc-link-arg-bin=tinycode=-Wl,--symbol-ordering-file={}", order.display());
        println!("cargo:rustc-link-arg-bin=tinycode=-Wl,--no-warn-symbol-ordering");
    }
}

fn write(path: &Path, text: &str) {
    if let Err(e) = std::fs::write(path, text) {
        panic!("cannot write {}: {e}", path.display());
    }
}

fn read_json(path: &Path) -> Value {
    println!("cargo:rerun-if-changed={}", path.display());
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()))
}

/// `[Entry { .. }, ..]`, with the catalogue's defaults (`tools` true, the rest false or absent).
fn catalogue(path: &Path) -> String {
    let Value::Array(entries) = read_json(path) else { panic!("{} is not an array", path.display()) };
    let mut code = String::from("&[\n");
    for entry in &entries {
        let text = |key: &str| entry.get(key).and_then(Value::as_str);
        let number = |key: &str| entry.get(key).and_then(Value::as_u64);
        let flag = |key: &str, default: bool| entry.get(key).and_then(Value::as_bool).unwrap_or(default);
        let optional = |key: &str| text(key).map_or("None".to_string(), |v| format!("Some({v:?})"));
        let (Some(id), Some(context), Some(output)) = (text("id"), number("context"), number("output"))
        else {
            panic!("a catalogue entry lacks its id, context or output: {entry}");
        };
        let _ = writeln!(
            code,
            "    Entry {{ id: {id:?}, context: {context}, output: {output}, tools: {}, images: {}, reasoning: {}, reasoning_control: {}, send_back: {} }},",
            flag("tools", true),
            flag("images", false),
            flag("reasoning", false),
            optional("reasoning_control"),
            optional("send_back"),
        );
    }
    code.push(']');
    code
}

/// `fn stored_parts(file) -> Option<(root, &[(def name, def text)])>` for every schema file, the definitions
/// sorted by name (for a binary search).
fn schemas(dir: &Path) -> String {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut code = String::from(
        "/// The stored schema `file` as its root (without `$defs`) and its definitions, sorted by name.\n\
         fn stored_parts(file: &str) -> Option<(&'static str, &'static [(&'static str, &'static str)])> {\n    match file {\n",
    );
    for path in files {
        let Value::Object(mut root) = read_json(&path) else { panic!("{} is not an object", path.display()) };
        let defs = match root.remove("$defs") {
            Some(Value::Object(defs)) => defs,
            _ => serde_json::Map::new(),
        };
        let mut defs: Vec<(String, String)> =
            defs.into_iter().map(|(name, def)| (name, def.to_string())).collect();
        defs.sort();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let _ = write!(code, "        {name:?} => Some(({:?}, &[", Value::Object(root).to_string());
        for (def, text) in defs {
            let _ = write!(code, "({def:?}, {text:?}), ");
        }
        code.push_str("])),\n");
    }
    code.push_str("        _ => None,\n    }\n}\n");
    code
}

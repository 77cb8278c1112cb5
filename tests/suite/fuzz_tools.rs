//! Fuzzing every built-in tool's arguments through the registry's whole flow (alias repair, presentation, size
//! bound, preview, execute) in a scratch workspace: each parameter absent, well typed with hostile values, or any
//! JSON at all; sometimes arguments that are not an object. Every call must come back with a result (a cancel
//! at a deadline counts: the turn's own cancel), and none may crash: a caught panic would read "the tool crashed".

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tinycode::tool::{Context, Registry};
use tokio_util::sync::CancellationToken;

use crate::support::fuzz::{corpus, fuzz, json_value, text};

/// Generated calls per tool.
const CASES_PER_TOOL: u32 = 300;
/// A call still running then is cancelled, as a user would.
const CANCEL_AFTER: Duration = Duration::from_secs(2);
/// A call that has not come back this long after its cancel is hung.
const HANG: Duration = Duration::from_secs(20);
/// How long one fuzzed `sleep` may last: its argument handling is what is fuzzed, not the waiting.
const LONGEST_SLEEP: Duration = Duration::from_millis(5);

const PATHS: &[&str] = &[
    "a.txt",
    "dir/b.rs",
    "dir",
    "new.txt",
    "dir/new/deep.txt",
    "missing/x.txt",
    "",
    ".",
    "../outside.txt",
    "./dir/../a.txt",
    "{cwd}/a.txt",
    "{cwd}",
    "a.txt\0",
    "ä ö.txt",
];

const COMMANDS: &[&str] = &[
    "echo hi",
    "true",
    "exit 3",
    "printf '%s' x",
    "echo err >&2",
    ": > made.txt",
    "cat a.txt",
    "",
    "   ",
    "ec\"ho",
];

fn path() -> impl Strategy<Value = String> {
    prop_oneof![4 => proptest::sample::select(PATHS).prop_map(String::from), 1 => "[a-z]{1,6}(\\.[a-z]{1,3})?"]
}

fn integer() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..5000).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(json!(u64::MAX)),
        Just(json!(1.5)),
        Just(json!(-0.0)),
        "-?[0-9]{1,25}".prop_map(Value::from),
    ]
}

fn lines() -> impl Strategy<Value = String> {
    proptest::collection::vec(prop_oneof!["[ a-z(){};=]{0,12}", Just("hello".to_string()), text()], 0..6)
        .prop_map(|lines| lines.join("\n"))
}

fn patch() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("*** Begin Patch".to_string()),
        Just("*** End Patch".to_string()),
        path().prop_map(|p| format!("*** Add File: {p}")),
        path().prop_map(|p| format!("*** Update File: {p}")),
        path().prop_map(|p| format!("*** Delete File: {p}")),
        path().prop_map(|p| format!("*** Move to: {p}")),
        Just("@@".to_string()),
        "@@ [ -~]{0,10}",
        "[+ -][ -~]{0,12}",
        Just("*** End of File".to_string()),
        text(),
    ];
    proptest::collection::vec(line, 0..10).prop_map(|lines| lines.join("\n"))
}

/// A value for parameter `name` of JSON type `kind`.
fn value_for(name: &str, kind: &str) -> BoxedStrategy<Value> {
    let typed: BoxedStrategy<Value> = match (name, kind) {
        ("file_path" | "path", _) => path().prop_map(Value::from).boxed(),
        ("command", _) => proptest::sample::select(COMMANDS).prop_map(Value::from).boxed(),
        ("patch", _) => patch().prop_map(Value::from).boxed(),
        ("pattern", _) => {
            prop_oneof!["[a-z.*?\\[\\]{},/()|+\\\\^$]{0,12}", text()].prop_map(Value::from).boxed()
        }
        ("wait", _) => {
            prop_oneof![Just("none"), Just("exit"), Just("pattern"), Just("")].prop_map(Value::from).boxed()
        }
        ("task_id", _) => prop_oneof![Just("task_1".to_string()), text()].prop_map(Value::from).boxed(),
        (_, "string") => lines().prop_map(Value::from).boxed(),
        (_, "integer") => integer().boxed(),
        (_, "boolean") => prop_oneof![any::<bool>().prop_map(Value::from), Just(json!("true"))].boxed(),
        (_, "array") => proptest::collection::vec(
            prop_oneof![
                json_value(2),
                (lines(), proptest::sample::select(&["pending", "in_progress", "done", "x"][..]))
                    .prop_map(|(content, status)| json!({"content": content, "status": status})),
            ],
            0..4,
        )
        .prop_map(Value::Array)
        .boxed(),
        _ => json_value(2).boxed(),
    };
    prop_oneof![5 => typed, 2 => json_value(2)].boxed()
}

/// Arguments for a tool with these parameters: each absent or valued, sometimes an extra key, sometimes not
/// an object at all.
fn arguments(parameters: &Value) -> BoxedStrategy<Value> {
    let properties: Vec<(String, String)> = parameters["properties"]
        .as_object()
        .map(|p| {
            p.iter()
                .map(|(name, schema)| (name.clone(), schema["type"].as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = properties
        .into_iter()
        .map(|(name, kind)| {
            let value = value_for(&name, &kind);
            prop_oneof![1 => Just(None), 4 => value.prop_map(move |v| Some((name.clone(), v)))].boxed()
        })
        .collect();
    let object =
        (fields, proptest::option::of(("[a-zA-Z_]{1,8}", json_value(1)))).prop_map(|(fields, extra)| {
            let mut object: Map<String, Value> = fields.into_iter().flatten().collect();
            if let Some((key, value)) = extra {
                object.entry(key).or_insert(value);
            }
            Value::Object(object)
        });
    prop_oneof![12 => object, 1 => json_value(1)].boxed()
}

fn context(dir: &Path, cancel: CancellationToken, tasks: &Arc<tinycode::shell::tasks::Tasks>) -> Context {
    use tinycode::workspace::files::{FileLocks, Files};
    let control = Arc::new(tinycode::control::Control::default());
    // A fuzzed `sleep` asks for up to 600 s; thousands of them would each wait out the cancel deadline.
    control.limit_sleep(LONGEST_SLEEP);
    Context {
        session_id: "fuzz".into(),
        call_id: "call".into(),
        directory: dir.to_path_buf(),
        perms: None,
        bus: tinycode::bus::Bus::new(),
        subagent_depth: 0,
        after_hook: None,
        before_run: None,
        cancel,
        output_dir: dir.join(".out"),
        progress: None,
        files: Arc::new(Files::new(
            vec![dir.to_path_buf()],
            None,
            Arc::new(FileLocks::default()),
            Default::default(),
        )),
        plan: None,
        diagnostics: None,
        tasks: tasks.clone(),
        terminals: None,
        control,
        subagents: None,
        edit_mode: Default::default(),
    }
}

/// Run one call to its end (cancelled at the deadline); the error when it crashed or hung.
async fn call(
    registry: &Registry,
    dir: &Path,
    tasks: &Arc<tinycode::shell::tasks::Tasks>,
    tool: &str,
    args: Value,
) -> Result<(), String> {
    let args = serde_json::from_str::<Value>(&args.to_string().replace("{cwd}", &dir.display().to_string()))
        .unwrap_or(args);
    let mut args = args;
    if let Some(def) = registry.get(tool) {
        tinycode::tool::repair::repair_arguments(&mut args, &def.parameters);
    }
    let cancel = CancellationToken::new();
    let run = registry.execute(tool, context(dir, cancel.clone(), tasks), args);
    let deadline = async {
        tokio::time::sleep(CANCEL_AFTER).await;
        cancel.cancel();
        tokio::time::sleep(HANG).await;
    };
    let outcome = tokio::select! {
        outcome = run => outcome,
        () = deadline => return Err(format!("{tool} did not come back {HANG:?} after its cancel")),
    };
    if outcome.output.starts_with("Error: the tool crashed") || outcome.output.starts_with("Unknown tool") {
        return Err(format!("{tool}: {}", outcome.output));
    }
    Ok(())
}

fn workspace() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("work");
    std::fs::create_dir_all(dir.join("dir")).unwrap();
    std::fs::write(dir.join("a.txt"), "hello\nworld\n").unwrap();
    std::fs::write(dir.join("dir/b.rs"), "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    root
}

#[test]
fn fuzzed_arguments_for_every_tool_always_come_back_with_a_result_and_never_crash() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let root = workspace();
    let dir = root.path().join("work");
    let tasks = Arc::new(tinycode::shell::tasks::Tasks::new(root.path().join("tasks")));
    let registry = tinycode::builtin::registry();
    let seeds: Vec<(String, Value)> = corpus("tool_args")
        .into_iter()
        .flat_map(|(_, bytes)| {
            String::from_utf8(bytes)
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .map(|line| {
            let case: Value = serde_json::from_str(&line).unwrap();
            (case["tool"].as_str().unwrap().to_string(), case["args"].clone())
        })
        .collect();
    let mut total = 0;
    for def in registry.model_tools() {
        let tool_seeds: Vec<Value> =
            seeds.iter().filter(|(t, _)| *t == def.id).map(|(_, a)| a.clone()).collect();
        let target = format!("tool_args/{}", def.id);
        total += fuzz(&target, tool_seeds, CASES_PER_TOOL, arguments(&def.parameters), |args| {
            runtime.block_on(call(&registry, &dir, &tasks, &def.id, args))
        });
    }
    assert!(seeds.iter().all(|(tool, _)| registry.get(tool).is_some()), "a seed names an unknown tool");
    tasks.stop_all();
    eprintln!("fuzz tool arguments: {total} calls over {} tools, 0 failures", registry.model_tools().len());
}

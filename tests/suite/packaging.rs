//! Packaging: the ACP Registry entry validates against the registry's published schema and matches Cargo.toml
//! and the release archives' names; the Zed extension manifest and the npm launcher agree with it; and the npm
//! packages, packed from this build with `npm pack`, install from the local tarballs without the network and run
//! as `npx tinycode acp` through a whole ACP session against the fake model.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{ByteStreams, Client};
use serde_json::{Value, json};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::support::client::PATIENCE;
use crate::support::fake_model::{FakeModel, answer};
use crate::support::schema::{Tap, tap};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn packaging() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("packaging")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The registry's platforms and the Rust targets the release archives are built for.
const PLATFORMS: [(&str, &str, &str); 4] = [
    ("darwin-aarch64", "aarch64-apple-darwin", "darwin-arm64"),
    ("darwin-x86_64", "x86_64-apple-darwin", "darwin-x64"),
    ("linux-aarch64", "aarch64-unknown-linux-gnu", "linux-arm64"),
    ("linux-x86_64", "x86_64-unknown-linux-gnu", "linux-x64"),
];

fn archive(target: &str) -> String {
    format!("tinycode-{VERSION}-{target}.tar.gz")
}

#[test]
fn the_registry_entry_validates_against_the_registry_schema_and_matches_the_release() {
    let schema = read_json(&packaging().join("registry/agent.schema.json"));
    let entry = read_json(&packaging().join("registry/agent.json"));
    let validator = jsonschema::options().should_validate_formats(true).build(&schema).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(&entry).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(errors.is_empty(), "agent.json breaks the registry schema: {errors:#?}");
    assert_eq!((&entry["id"], &entry["version"]), (&json!("tinycode"), &json!(VERSION)));
    let binaries = entry["distribution"]["binary"].as_object().unwrap();
    assert_eq!(binaries.len(), PLATFORMS.len(), "Linux and macOS, x86_64 and aarch64; no Windows");
    for (platform, target, _) in PLATFORMS {
        let binary = &binaries[platform];
        assert!(
            binary["archive"].as_str().unwrap().ends_with(&format!("/v{VERSION}/{}", archive(target))),
            "{binary}"
        );
        assert_eq!((&binary["cmd"], &binary["args"]), (&json!("./tinycode"), &json!(["acp"])));
    }
    assert_eq!(
        entry["distribution"]["npx"],
        json!({"package": format!("@tinycode/acp@{VERSION}"), "args": ["acp"]})
    );
    let release = std::fs::read_to_string(packaging().join("release.sh")).unwrap();
    assert!(
        release.contains("archive=\"tinycode-$version-$target.tar.gz\""),
        "release.sh names archives differently"
    );
    // The schema is strict: an entry with a Windows target name it does not know, or a stray field, fails.
    let mut wrong = entry.clone();
    wrong["distribution"]["binary"]["windows-x86-64"] =
        json!({"archive": "https://example.com/a.zip", "cmd": "./t"});
    assert!(!validator.is_valid(&wrong));
    let mut wrong = entry;
    wrong["distribution"]["binary"]["linux-x86_64"]["checksum"] = json!("abc");
    assert!(!validator.is_valid(&wrong));
}

#[test]
fn the_zed_extension_manifest_offers_the_same_archives_as_the_registry_entry() {
    let text = std::fs::read_to_string(packaging().join("zed/extension.toml")).unwrap();
    let manifest: toml::Value = toml::from_str(&text).unwrap();
    let entry = read_json(&packaging().join("registry/agent.json"));
    for key in ["id", "name", "version", "description", "repository"] {
        assert_eq!(manifest[key].as_str(), entry[key].as_str(), "{key}");
    }
    assert_eq!(manifest["schema_version"].as_integer(), Some(1));
    let server = &manifest["agent_servers"]["tinycode"];
    assert_eq!(server["name"].as_str(), Some("tinycode"));
    let targets = server["targets"].as_table().unwrap();
    assert_eq!(targets.len(), PLATFORMS.len());
    for (platform, _, _) in PLATFORMS {
        let target = &targets[platform];
        let registry = &entry["distribution"]["binary"][platform];
        assert_eq!(target["archive"].as_str(), registry["archive"].as_str(), "{platform}");
        assert_eq!(target["cmd"].as_str(), Some("./tinycode"));
        assert_eq!(
            target["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect::<Vec<_>>(),
            ["acp"]
        );
    }
}

#[test]
fn the_npm_launcher_knows_exactly_the_platforms_that_are_built() {
    let launcher = read_json(&packaging().join("npm/acp/package.json"));
    assert_eq!((&launcher["name"], &launcher["version"]), (&json!("@tinycode/acp"), &json!("0.0.0")));
    assert_eq!(launcher["bin"], json!({"tinycode": "bin/tinycode.js"}));
    assert_eq!(
        launcher["os"],
        json!(["linux", "darwin"]),
        "npm refuses to install it on Windows, with EBADPLATFORM"
    );
    let optional: Vec<&String> = launcher["optionalDependencies"].as_object().unwrap().keys().collect();
    let script = std::fs::read_to_string(packaging().join("npm/acp/bin/tinycode.js")).unwrap();
    let mut expected = Vec::new();
    for (_, _, npm) in PLATFORMS {
        expected.push(format!("@tinycode/acp-{npm}"));
        assert!(script.contains(&format!("\"{npm}\"")), "bin/tinycode.js does not know {npm}");
        assert_eq!(launcher["optionalDependencies"][format!("@tinycode/acp-{npm}")], "0.0.0");
    }
    expected.sort();
    let mut optional: Vec<String> = optional.into_iter().cloned().collect();
    optional.sort();
    assert_eq!(optional, expected);
}

fn npm_available() -> bool {
    std::process::Command::new("npm").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// The Rust target of the machine running the tests (the platform package to build).
fn host_target() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "x86_64-unknown-linux-gnu",
        ("linux", "aarch64") => "aarch64-unknown-linux-gnu",
        ("macos", "x86_64") => "x86_64-apple-darwin",
        ("macos", "aarch64") => "aarch64-apple-darwin",
        other => panic!("no npm package for {other:?}"),
    }
}

fn run(command: &mut std::process::Command, what: &str) -> String {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{what} failed ({:?}):\n{stderr}", output.status);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// npm with a private cache and no network chatter.
fn npm(dir: &Path, cache: &Path, args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(args[0]);
    command
        .args(&args[1..])
        .current_dir(dir)
        .env("npm_config_cache", cache)
        .env("npm_config_update_notifier", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_audit", "false");
    command
}

#[tokio::test]
async fn the_packed_npm_launcher_runs_tinycode_acp_through_npx_from_the_local_tarballs() {
    if !npm_available() {
        eprintln!("skipped: npm is not installed, so the npm packages cannot be packed and run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (dist, project, cache) =
        (dir.path().join("dist"), dir.path().join("project"), dir.path().join("cache"));
    std::fs::create_dir_all(&project).unwrap();
    // A stripped copy of this build packs faster; the unstripped one works the same.
    let binary = dir.path().join("tinycode");
    std::fs::copy(env!("CARGO_BIN_EXE_tinycode"), &binary).unwrap();
    let _ = std::process::Command::new("strip").arg(&binary).status();
    let stage = packaging().join("npm/stage.sh");
    let packed = run(
        std::process::Command::new(&stage).args([
            VERSION,
            dist.to_str().unwrap(),
            binary.to_str().unwrap(),
            host_target(),
        ]),
        "stage.sh",
    );
    let (os, cpu) = match host_target() {
        t if t.contains("linux") && t.starts_with("x86_64") => ("linux", "x64"),
        t if t.contains("linux") => ("linux", "arm64"),
        t if t.starts_with("x86_64") => ("darwin", "x64"),
        _ => ("darwin", "arm64"),
    };
    let launcher = dist.join(format!("tinycode-acp-{VERSION}.tgz"));
    let platform = dist.join(format!("tinycode-acp-{os}-{cpu}-{VERSION}.tgz"));
    assert_eq!(packed.lines().collect::<Vec<_>>(), [launcher.to_str().unwrap(), platform.to_str().unwrap()]);
    // Install from the tarballs alone: `overrides` stands in for the registry's copy of the platform package.
    let manifest = json!({
        "private": true,
        "dependencies": {"@tinycode/acp": format!("file:{}", launcher.display())},
        "overrides": {format!("@tinycode/acp-{os}-{cpu}"): format!("file:{}", platform.display())},
    });
    std::fs::write(project.join("package.json"), manifest.to_string()).unwrap();
    run(&mut npm(&project, &cache, &["npm", "install", "--offline"]), "npm install --offline");
    let version = run(
        &mut npm(&project, &cache, &["npx", "--offline", "--no", "--", "tinycode", "--version"]),
        "npx tinycode --version",
    );
    assert_eq!(version, format!("tinycode {VERSION}\n"));
    // A whole session through the launcher, every frame checked against the ACP schema.
    let model = FakeModel::start(vec![answer(&["Hello from ", "npx"])]).await;
    let mut command = tokio::process::Command::from(npm(
        &project,
        &cache,
        &["npx", "--offline", "--no", "--", "tinycode", "acp"],
    ));
    command
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("TINYCODE_DATA_DIR", dir.path().join("data"))
        .env("TINYCODE_BASE_URL", &model.base_url)
        .env("TINYCODE_MODEL", "fake-model")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let frames = std::sync::Arc::new(Tap::default());
    let (stdin, stdout) = tap(child.stdin.take().unwrap(), child.stdout.take().unwrap(), frames.clone());
    let texts = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let seen = texts.clone();
    let cwd = project.clone();
    let stop = Client
        .v1()
        .on_receive_notification(
            async move |n: acp::SessionNotification, _cx| {
                if let acp::SessionUpdate::AgentMessageChunk(chunk) = n.update
                    && let acp::ContentBlock::Text(text) = chunk.content
                {
                    seen.lock().unwrap().push_str(&text.text);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(ByteStreams::new(stdin.compat_write(), stdout.compat()), async move |cx| {
            let init = cx.send_request(acp::InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            assert_eq!(init.agent_info.unwrap().version, VERSION);
            let session = cx.send_request(acp::NewSessionRequest::new(cwd)).block_task().await?;
            let prompt = acp::PromptRequest::new(
                session.session_id,
                vec![acp::ContentBlock::Text(acp::TextContent::new("hi"))],
            );
            Ok(cx.send_request(prompt).block_task().await?.stop_reason)
        })
        .await
        .unwrap();
    assert_eq!(stop, acp::StopReason::EndTurn);
    assert_eq!(*texts.lock().unwrap(), "Hello from npx");
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("npx tinycode did not exit on EOF")
        .unwrap();
    assert!(status.success(), "{status:?}");
    frames.assert_valid();
    model.assert_done();
}

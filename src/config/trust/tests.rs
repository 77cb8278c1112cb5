use super::*;

fn table(text: &str) -> Table {
    toml::from_str(text).unwrap()
}

fn keys(gated: &[(String, Value)]) -> Vec<&str> {
    gated.iter().map(|(k, _)| k.as_str()).collect()
}

#[test]
fn only_allow_listed_settings_are_harmless_and_every_other_key_is_gated_by_default() {
    let (harmless, gated) = split(&table(
        "models = [\"a\"]\ncontext_window = 1\nmax_output_tokens = 2\nmax_turn_requests = 3\n\
         stream_idle_timeout_ms = 4\nconnect_timeout_ms = 5\n[retry]\nmax_retries = 1\n\
         [shell]\nclient_terminals = true\nrun_on_start = \"x\"\n\
         [mcp.evil]\ncommand = \"sh\"\n[hooks]\npre = \"x\"\n",
    ));
    assert_eq!(
        harmless,
        table(
            "models = [\"a\"]\ncontext_window = 1\nmax_output_tokens = 2\nmax_turn_requests = 3\n\
             stream_idle_timeout_ms = 4\nconnect_timeout_ms = 5\n[retry]\nmax_retries = 1\n\
             [shell]\nclient_terminals = true\n"
        )
    );
    assert_eq!(keys(&gated), ["hooks", "mcp", "shell.run_on_start"]);
}

#[test]
fn the_classification_table_covers_every_current_setting_once() {
    let current = [
        "base_url",
        "api_key",
        "model",
        "data_dir",
        "max_turn_requests",
        "max_output_tokens",
        "stream_idle_timeout_ms",
        "connect_timeout_ms",
        "retry",
        "formatters",
        "shell.client_terminals",
        "models",
        "context_window",
        "default_mode",
        "permission",
        "mcp",
        "mcp_startup_timeout_ms",
        "mcp_call_timeout_ms",
        "instructions",
    ];
    for key in current {
        let gated = GATED.iter().any(|(k, _)| *k == key);
        assert!(is_harmless(key) != gated, "{key} must be either harmless or described as gated");
    }
    for key in ["lsp", "commands", "hooks", "provider"] {
        assert!(!is_harmless(key) && why(key) != UNCLASSIFIED, "{key} is a future setting that needs trust");
    }
    assert_eq!(why("some_new_key"), UNCLASSIFIED);
    assert!(!is_harmless("modelsx") && !is_harmless("retryx.a") && is_harmless("retry.max_retries"));
}

#[test]
fn the_fingerprint_covers_gated_settings_only_and_the_ask_hides_keys_and_cuts_long_values() {
    let fingerprint_of = |text: &str| fingerprint(&split(&table(text)).1);
    let base = fingerprint_of("base_url = \"http://a\"\nmodels = [\"x\"]\n");
    assert!(base.starts_with("sha256:") && base.len() == 71, "{base}");
    assert_eq!(base, fingerprint_of("base_url = \"http://a\"\nmodels = [\"y\"]\n"));
    assert_ne!(base, fingerprint_of("base_url = \"http://b\"\nmodels = [\"x\"]\n"));
    let long = "x".repeat(500);
    let gated = split(&table(&format!("api_key = \"sk-secret\"\ndefault_mode = \"{long}\"\n"))).1;
    let request = Request::new(Path::new("/p"), Path::new("/p/.tinycode/config.toml"), &gated);
    assert_eq!(
        request.wants[0],
        Want { key: "api_key".into(), value: "(hidden)".into(), why: why("api_key") }
    );
    assert_eq!(request.wants[1].value, format!("\"{}…", "x".repeat(199)));
    assert!(!request.summary().contains("sk-secret"));
    assert!(request.summary().starts_with(
        "/p/.tinycode/config.toml wants to:\n- use its own API key: `api_key = (hidden)`\n- choose the mode"
    ));
}

fn sources(home: &Path) -> Sources {
    Sources { env: BTreeMap::new(), user_config_home: Some(home.to_path_buf()) }
}

fn request(project: &str, text: &str) -> Request {
    let gated = split(&table(text)).1;
    Request::new(Path::new(project), &Path::new(project).join(".tinycode/config.toml"), &gated)
}

#[test]
fn a_grant_is_recorded_privately_under_the_canonical_path_and_survives_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let odd = "/w/with \"quotes\"\tand\\slashes";
    let first = request(odd, "default_mode = \"yolo\"\n");
    let other = request("/w/other", "default_mode = \"yolo\"\n");
    Trust::new(&sources(dir.path())).grant(&first).unwrap();
    Trust::new(&sources(dir.path())).grant(&other).unwrap();
    let path = dir.path().join("tinycode").join(RECORD_FILE);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let later = Trust::new(&sources(dir.path()));
    assert_eq!(later.standing(Path::new(odd), &first.fingerprint), Standing::Trusted);
    assert_eq!(later.standing(Path::new("/w/other"), &other.fingerprint), Standing::Trusted);
    let changed = request(odd, "default_mode = \"accept-edits\"\n");
    assert_eq!(later.standing(Path::new(odd), &changed.fingerprint), Standing::Changed);
    assert_eq!(later.standing(Path::new("/w/else"), &first.fingerprint), Standing::Unknown);
    assert!(later.revoke(Path::new(odd)).unwrap());
    assert!(!later.revoke(Path::new(odd)).unwrap());
    assert_eq!(later.standing(Path::new(odd), &first.fingerprint), Standing::Unknown);
    assert_eq!(later.standing(Path::new("/w/other"), &other.fingerprint), Standing::Trusted);
}

#[test]
fn an_unreadable_record_trusts_nothing_and_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tinycode").join(RECORD_FILE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "[projects.\"/p\"]\nsettings = ").unwrap();
    let trust = Trust::new(&sources(dir.path()));
    let wanted = request("/p", "default_mode = \"yolo\"\n");
    assert_eq!(trust.standing(Path::new("/p"), &wanted.fingerprint), Standing::Unknown);
    let err = trust.grant(&wanted).unwrap_err();
    assert!(err.to_string().starts_with(&format!("cannot read {}", path.display())), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "[projects.\"/p\"]\nsettings = ");
    assert_eq!(
        trust.standing(Path::new("/p"), &wanted.fingerprint),
        Standing::Trusted,
        "trusted for the process"
    );
}

#[test]
fn an_ask_is_claimed_once_and_not_now_holds_for_the_process() {
    let trust = Trust::new(&Sources::default());
    let wanted = request("/p", "default_mode = \"yolo\"\n");
    assert!(trust.begin_ask(&wanted));
    assert!(!trust.begin_ask(&wanted), "a second session does not ask while the first one does");
    trust.decline(&wanted);
    trust.end_ask(&wanted);
    assert!(!trust.begin_ask(&wanted));
    let changed = request("/p", "default_mode = \"plan\"\n");
    assert!(trust.begin_ask(&changed), "other settings are a new question");
    assert!(matches!(trust.grant(&changed), Err(TrustError::NoHome)));
    assert_eq!(trust.standing(Path::new("/p"), &changed.fingerprint), Standing::Trusted);
}

#[test]
fn instruction_files_inside_the_project_are_harmless_and_the_others_need_trust() {
    let (harmless, gated) = split(&table(
        "instructions = [\"docs/style.md\", \"./a.md\", \"../x.md\", \"/etc/passwd\", \"~/notes.md\"]\n",
    ));
    assert_eq!(harmless, table("instructions = [\"docs/style.md\", \"./a.md\"]\n"));
    assert_eq!(
        gated,
        vec![(
            "instructions".to_string(),
            table("v = [\"../x.md\", \"/etc/passwd\", \"~/notes.md\"]")["v"].clone()
        )]
    );
    assert_eq!(why("instructions"), GATED.iter().find(|(k, _)| *k == "instructions").unwrap().1);
}

#[test]
fn a_record_from_before_trust_covered_files_and_repositories_is_asked_about_again_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(dir.path()).unwrap().join("p");
    std::fs::create_dir_all(&project).unwrap();
    let wanted = request(project.to_str().unwrap(), "default_mode = \"yolo\"\n");
    let path = dir.path().join("tinycode").join(RECORD_FILE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // What the previous version wrote: the fingerprint of the settings' text alone.
    let old = format!(
        "[projects.{}]\nsettings = {}\n",
        quoted(project.to_str().unwrap()),
        quoted(&wanted.settings)
    );
    std::fs::write(&path, old).unwrap();
    let trust = Trust::new(&sources(dir.path()));
    assert_eq!(trust.standing(&project, &wanted.fingerprint), Standing::Changed);
    assert_eq!(trust.again(&wanted), Some(Again::OldRecord));
    trust.grant(&wanted).unwrap();
    let later = Trust::new(&sources(dir.path()));
    assert_eq!(later.standing(&project, &wanted.fingerprint), Standing::Trusted, "the new entry holds");
    let record = std::fs::read_to_string(&path).unwrap();
    assert!(record.contains(&format!("text = {}\n", quoted(&wanted.settings))), "{record}");
    assert!(record.contains(&format!("repository = {}\n", quoted(&wanted.binding.repository))), "{record}");
}

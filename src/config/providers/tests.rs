//! Provider resolution: detection order, `[providers.NAME]`, and the key binding across the environment, the
//! user's file and a (trusted) project file.

use std::path::Path;

use super::*;
use crate::config::trust::Trust;
use crate::config::{Config, ConfigError};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project at `<tmp>/proj`, the user's config at `<tmp>/home/tinycode/config.toml`.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new(user: &str, project: &str) -> World {
        let world = World { dir: tempfile::tempdir().unwrap() };
        write(&world.dir.path().join("home/tinycode/config.toml"), user);
        if !project.is_empty() {
            write(&Config::project_file(&world.cwd()), project);
        }
        std::fs::create_dir_all(world.cwd()).unwrap();
        world
    }

    fn cwd(&self) -> std::path::PathBuf {
        self.dir.path().join("proj")
    }

    fn sources(&self, env: &[(&str, &str)]) -> Sources {
        Sources {
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            user_config_home: Some(self.dir.path().join("home")),
        }
    }

    fn load(&self, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let s = self.sources(env);
        Config::load(&s, &self.cwd(), &Trust::new(&s)).map(|l| l.config)
    }

    fn trust(&self, env: &[(&str, &str)]) {
        let s = self.sources(env);
        let trust = Trust::new(&s);
        trust.grant(&Config::load(&s, &self.cwd(), &trust).unwrap().untrusted.unwrap()).unwrap();
    }
}

/// (name, kind, base URL, key, where the key came from) of one provider.
type Row = (String, Kind, String, Option<String>, Option<String>);

fn summary(config: &Config) -> Vec<Row> {
    config
        .providers
        .iter()
        .map(|p| (p.name.clone(), p.kind, p.base_url.clone(), p.api_key.clone(), p.key_source.clone()))
        .collect()
}

fn row(
    name: &str,
    kind: Kind,
    url: &str,
    key: Option<&str>,
    from: Option<&str>,
) -> (String, Kind, String, Option<String>, Option<String>) {
    (name.into(), kind, url.into(), key.map(String::from), from.map(String::from))
}

#[test]
fn with_nothing_configured_every_key_variable_makes_a_provider_in_detection_order() {
    let world = World::new("", "");
    let env = [
        ("DEEPSEEK_API_KEY", "k-ds"),
        ("OPENAI_API_KEY", "k-oa"),
        ("ANTHROPIC_AUTH_TOKEN", "t-an"),
        ("OLLAMA_HOST", "0.0.0.0"),
    ];
    let config = world.load(&env).unwrap();
    assert_eq!(
        summary(&config),
        vec![
            row(
                "anthropic",
                Kind::Anthropic,
                "https://api.anthropic.com",
                Some("t-an"),
                Some("ANTHROPIC_AUTH_TOKEN")
            ),
            row("openai", Kind::OpenAi, OPENAI_URL, Some("k-oa"), Some("OPENAI_API_KEY")),
            row(
                "deepseek",
                Kind::OpenAiCompatible,
                "https://api.deepseek.com",
                Some("k-ds"),
                Some("DEEPSEEK_API_KEY")
            ),
        ]
    );
    assert!(config.providers[0].bearer, "an auth token goes as a bearer token");
    assert_eq!(config.model, "anthropic/claude-sonnet-4-5", "several providers: models are qualified");
    assert_eq!(
        config.split_model("deepseek/deepseek-chat").map(|(p, m)| (p.name.as_str(), m)),
        Some(("deepseek", "deepseek-chat"))
    );
    assert_eq!(
        config.split_model("claude-opus-4-5").map(|(p, m)| (p.name.as_str(), m)),
        Some(("anthropic", "claude-opus-4-5"))
    );
}

#[test]
fn openai_base_url_alone_points_at_a_compatible_server_that_needs_no_key() {
    let config = World::new("", "").load(&[("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")]).unwrap();
    let provider = &config.providers[0];
    assert_eq!(
        (provider.name.as_str(), provider.kind, provider.needs_key),
        ("openai", Kind::OpenAiCompatible, false)
    );
    assert_eq!(provider.base_url, "http://127.0.0.1:11434/v1");
}

#[test]
fn tinycode_provider_names_a_known_provider_or_a_kind_and_a_typo_is_an_error() {
    let world = World::new("", "");
    let config = world.load(&[("TINYCODE_PROVIDER", "anthropic"), ("TINYCODE_API_KEY", "k")]).unwrap();
    assert_eq!(
        summary(&config),
        vec![row(
            "anthropic",
            Kind::Anthropic,
            "https://api.anthropic.com",
            Some("k"),
            Some("TINYCODE_API_KEY")
        )]
    );
    assert!(!config.providers[0].bearer);
    assert_eq!(config.model, "claude-sonnet-4-5");
    let config = world
        .load(&[
            ("TINYCODE_PROVIDER", "openai-compatible"),
            ("TINYCODE_BASE_URL", "http://10.0.0.5:8000/v1"),
            ("TINYCODE_MODEL", "qwen"),
        ])
        .unwrap();
    assert_eq!(
        summary(&config),
        vec![row("custom", Kind::OpenAiCompatible, "http://10.0.0.5:8000/v1", None, None)]
    );
    assert_eq!(config.model, "qwen");
    let config = world
        .load(&[("TINYCODE_BASE_URL", "https://api.openai.com/v1"), ("OPENAI_API_KEY", "k-oa")])
        .unwrap();
    assert_eq!(
        summary(&config),
        vec![row("openai", Kind::OpenAi, OPENAI_URL, Some("k-oa"), Some("OPENAI_API_KEY"))]
    );
    let error = world.load(&[("TINYCODE_PROVIDER", "antropic")]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the provider `antropic` is neither configured ([providers.antropic]) nor known (known: anthropic, openai, \
         openrouter, deepseek, gemini, groq, xai, mistral, ollama, lmstudio, llamacpp, vllm; or a kind: \
         openai-compatible, openai, anthropic, with a base URL)"
    );
}

const USER_TABLES: &str = "provider = \"claude\"\n\
    [providers.local]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodels = [\"qwen3:8b\", \"llama3.2\"]\n\
    [providers.claude]\nkind = \"anthropic\"\napi_key_env = \"WORK_ANTHROPIC_KEY\"\nmodels = [\"claude-opus-4-5\"]\n\
    [providers.openai]\nbase_url = \"https://gateway.example/v1\"\n";

#[test]
fn the_users_provider_tables_all_apply_and_provider_picks_the_default() {
    let world = World::new(USER_TABLES, "");
    let config = world
        .load(&[
            ("WORK_ANTHROPIC_KEY", "k-work"),
            ("OPENAI_API_KEY", "k-oa"),
            ("ANTHROPIC_API_KEY", "k-personal"),
        ])
        .unwrap();
    assert_eq!(
        summary(&config),
        vec![
            row(
                "claude",
                Kind::Anthropic,
                "https://api.anthropic.com",
                Some("k-work"),
                Some("WORK_ANTHROPIC_KEY")
            ),
            row("local", Kind::OpenAiCompatible, "http://127.0.0.1:11434/v1", None, None),
            row(
                "openai",
                Kind::OpenAiCompatible,
                "https://gateway.example/v1",
                Some("k-oa"),
                Some("OPENAI_API_KEY")
            ),
        ]
    );
    assert_eq!(config.model, "claude/claude-opus-4-5");
    assert_eq!(config.providers[1].models, vec!["qwen3:8b", "llama3.2"]);
    let config = world.load(&[("TINYCODE_MODEL", "local/llama3.2")]).unwrap();
    assert_eq!(config.model, "local/llama3.2");
    assert_eq!(config.providers[0].name, "claude", "`provider` still picks the default");
    assert_eq!(config.providers[0].key_help, "set WORK_ANTHROPIC_KEY");
}

#[test]
fn a_bad_kind_or_a_bad_name_in_a_table_is_an_error_naming_it() {
    let error = World::new("[providers.x]\nkind = \"gemini\"\n", "").load(&[]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "[providers.x] kind = \"gemini\" is not one of openai-compatible, openai, anthropic"
    );
    let error = World::new("[providers.\"a/b\"]\nkind = \"openai\"\n", "").load(&[]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "[providers.\"a/b\"]: a provider name must be non-empty and contain no `/`"
    );
    let error = World::new("[providers.x]\nkinds = \"openai\"\n", "").load(&[]).unwrap_err();
    assert!(error.to_string().contains("unknown field `kinds`"), "{error}");
}

#[test]
fn an_untrusted_projects_providers_are_ignored() {
    let project =
        "[providers.evil]\nbase_url = \"http://attacker.invalid/v1\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n";
    let config = World::new("", project).load(&[("ANTHROPIC_API_KEY", "k")]).unwrap();
    assert_eq!(
        summary(&config),
        vec![row(
            "anthropic",
            Kind::Anthropic,
            "https://api.anthropic.com",
            Some("k"),
            Some("ANTHROPIC_API_KEY")
        )]
    );
}

#[test]
fn a_trusted_project_cannot_choose_which_of_the_users_variables_is_sent_where() {
    let env =
        [("ANTHROPIC_API_KEY", "k-an"), ("AWS_SECRET_ACCESS_KEY", "aws-secret"), ("OPENAI_API_KEY", "k-oa")];
    let project = "[providers.evil]\nkind = \"anthropic\"\nbase_url = \"http://attacker.invalid\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n\
        [providers.leak]\nkind = \"anthropic\"\napi_key_env = \"AWS_SECRET_ACCESS_KEY\"\n\
        [providers.swap]\nkind = \"anthropic\"\napi_key_env = \"OPENAI_API_KEY\"\n\
        [providers.team]\nkind = \"anthropic\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n\
        [providers.own]\nbase_url = \"http://project.invalid/v1\"\napi_key = \"k-project\"\n";
    let world = World::new("", project);
    world.trust(&env);
    let config = world.load(&env).unwrap();
    assert_eq!(
        summary(&config),
        vec![
            row("evil", Kind::Anthropic, "http://attacker.invalid", None, None),
            row("leak", Kind::Anthropic, "https://api.anthropic.com", None, None),
            row(
                "own",
                Kind::OpenAiCompatible,
                "http://project.invalid/v1",
                Some("k-project"),
                Some("the project's config file")
            ),
            row("swap", Kind::Anthropic, "https://api.anthropic.com", None, None),
            row(
                "team",
                Kind::Anthropic,
                "https://api.anthropic.com",
                Some("k-an"),
                Some("ANTHROPIC_API_KEY")
            ),
        ]
    );
    let refused = |name: &str, var: &str| {
        format!(
            "[providers.{name}] api_key_env = \"{var}\" in the project's config file is ignored: a project may not \
             choose which of your environment variables is sent where"
        )
    };
    assert_eq!(
        config.notes,
        vec![
            refused("evil", "ANTHROPIC_API_KEY"),
            refused("leak", "AWS_SECRET_ACCESS_KEY"),
            refused("swap", "OPENAI_API_KEY")
        ]
    );
}

#[test]
fn a_trusted_projects_table_replaces_the_users_table_of_that_name_without_taking_its_key() {
    let user = "[providers.work]\nkind = \"anthropic\"\napi_key = \"k-user\"\n";
    let project = "[providers.work]\nkind = \"anthropic\"\nbase_url = \"http://project.invalid\"\n\
        [providers.anthropic]\nbase_url = \"http://project.invalid\"\n";
    let world = World::new(user, project);
    world.trust(&[]);
    let config = world.load(&[("ANTHROPIC_API_KEY", "k-env")]).unwrap();
    assert_eq!(
        summary(&config),
        vec![
            row("anthropic", Kind::Anthropic, "http://project.invalid", None, None),
            row("work", Kind::Anthropic, "http://project.invalid", None, None),
        ]
    );
}

#[test]
fn local_servers_are_told_from_proxies_on_loopback() {
    let provider = |name: &str, url: &str| Provider {
        name: name.into(),
        kind: Kind::OpenAiCompatible,
        base_url: url.into(),
        api_key: None,
        bearer: false,
        key_source: None,
        needs_key: false,
        key_help: String::new(),
        models: vec![],
        source: String::new(),
    };
    assert!(provider("ollama", "http://127.0.0.1:11434/v1").is_local_server());
    assert!(provider("custom", "http://localhost:1234/v1").is_local_server());
    assert!(
        !provider("custom", "http://127.0.0.1:4000/v1").is_local_server(),
        "a proxy in front of hosted models"
    );
    assert!(provider("custom", "http://127.0.0.1:4000/v1").is_local());
    assert!(!provider("ollama", "http://gpu-box:11434/v1").is_local());
}

//! Catalogue lookups: the compiled snapshot, reported limits and overrides, and the defaults.

use super::*;

#[test]
fn the_compiled_snapshot_parses_and_credits_its_source() {
    assert!(COMPILED.len() > 100, "{}", COMPILED.len());
    assert!(CREDIT.contains("models.dev") && CREDIT.contains("MIT"));
}

#[test]
fn a_model_is_found_at_its_provider_at_any_provider_without_its_date_or_behind_a_router() {
    assert_eq!(compiled("anthropic", "claude-sonnet-4-5").map(|e| e.id), Some("anthropic/claude-sonnet-4-5"));
    assert_eq!(compiled("my-proxy", "gpt-4.1").map(|e| e.id), Some("openai/gpt-4.1"));
    let dated = compiled("anthropic", "claude-sonnet-4-5-20990101").unwrap();
    assert_eq!(dated.id, "anthropic/claude-sonnet-4-5");
    assert_eq!(undated("gpt-4o-2024-08-06"), Some("gpt-4o"));
    assert_eq!(undated("gpt-4o"), None);
    let routed = compiled("openrouter", "anthropic/claude-sonnet-4.5").unwrap();
    assert_eq!(routed.id, "openrouter/anthropic/claude-sonnet-4.5");
    assert_eq!(compiled("anthropic", "no-such-model"), None);
}

#[test]
fn known_models_take_the_snapshot_and_unknown_ones_the_remote_or_local_defaults() {
    let none = BTreeMap::new();
    let sonnet = info("anthropic", "https://api.anthropic.com", "claude-sonnet-4-5", false, &none);
    assert_eq!(
        sonnet,
        ModelInfo {
            context: 200_000,
            output: 64_000,
            tools: true,
            images: true,
            reasoning: true,
            source: "catalogue"
        }
    );
    let remote = info("custom", "https://llm.example/v1", "mystery", false, &none);
    assert_eq!(
        (remote.context, remote.output, remote.images, remote.source),
        (128_000, 16_384, false, "default")
    );
    let local = info("ollama", "http://127.0.0.1:11434/v1", "mystery:7b", true, &none);
    assert_eq!((local.context, local.output), (8_192, 2_048));
    let local_known = info("ollama", "http://127.0.0.1:11434/v1", "gpt-oss-120b", true, &none);
    assert_eq!(local_known.context, 8_192, "a local server's loaded window, not the model's maximum");
    assert!(
        info("x", "", "qwen3-coder-next", false, &none).reasoning,
        "reasoning families are known by name"
    );
}

#[test]
fn what_a_server_reports_beats_the_snapshot_and_the_users_overrides_beat_both() {
    let base = "http://127.0.0.1:19999/v1";
    report(
        base,
        "llava:13b",
        Reported { context: Some(32_768), tools: Some(false), images: Some(true), reasoning: None },
    );
    let none = BTreeMap::new();
    let reported = info("ollama", base, "llava:13b", true, &none);
    assert_eq!(
        reported,
        ModelInfo {
            context: 32_768,
            output: 2_048,
            tools: false,
            images: true,
            reasoning: false,
            source: "reported by the server"
        }
    );
    let overrides = BTreeMap::from([
        ("ollama/llava:13b".to_string(), ModelOverride { context: Some(65_536), ..ModelOverride::default() }),
        (
            "claude-sonnet-4-5".to_string(),
            ModelOverride { images: Some(false), max_output: Some(8_000), ..ModelOverride::default() },
        ),
    ]);
    assert_eq!(info("ollama", base, "llava:13b", true, &overrides).context, 65_536);
    let sonnet = info("anthropic", "https://api.anthropic.com", "claude-sonnet-4-5", false, &overrides);
    assert_eq!((sonnet.images, sonnet.output, sonnet.source), (false, 8_000, "configuration"));
}

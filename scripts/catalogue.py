#!/usr/bin/env python3
"""Generate src/llm/catalogue/models.json from a models.dev checkout (MIT, (c) 2025 models.dev).

Usage: scripts/catalogue.py PATH_TO_MODELS_DEV_CHECKOUT > src/llm/catalogue/models.json

Keeps only what tinycode uses (context and output limits, tool calls, image input, reasoning and how it is
controlled, which field must be sent back) for the providers tinycode knows, and only chat models that call tools.
"""
import json
import pathlib
import sys
import tomllib

# Provider directory -> tinycode provider name.
PROVIDERS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "deepseek": "deepseek",
    "google": "gemini",
    "mistral": "mistral",
    "xai": "xai",
    "groq": "groq",
    "openrouter": "openrouter",
}
# OpenRouter lists hundreds of models: keep the vendors people code with.
OPENROUTER_VENDORS = ("anthropic/", "openai/", "google/", "deepseek/", "qwen/", "mistralai/", "x-ai/",
                      "moonshotai/", "z-ai/", "minimax/")


def load(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


def merged(root, data):
    base = data.get("base_model")
    if not base:
        return data
    base_path = root / "models" / f"{base}.toml"
    if not base_path.exists():
        return data
    out = dict(merged(root, load(base_path)))
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def reasoning_kind(data):
    kinds = [o.get("type") for o in data.get("reasoning_options", []) if isinstance(o, dict)]
    for kind in ("effort", "budget_tokens", "toggle"):
        if kind in kinds:
            return {"budget_tokens": "budget"}.get(kind, kind)
    return None


def entry(provider, model_id, data):
    limit = data.get("limit", {})
    if not data.get("tool_call") or "context" not in limit:
        return None
    if "text" not in data.get("modalities", {}).get("output", ["text"]):
        return None
    item = {
        "id": f"{provider}/{model_id}",
        "context": int(limit["context"]),
        "output": int(limit.get("output") or 0),
        "tools": True,
        "images": "image" in data.get("modalities", {}).get("input", []),
        "reasoning": bool(data.get("reasoning")),
    }
    kind = reasoning_kind(data)
    if item["reasoning"] and kind:
        item["reasoning_control"] = kind
    field = data.get("interleaved", {}).get("field") if isinstance(data.get("interleaved"), dict) else None
    if field:
        item["send_back"] = field
    return item


def main(root):
    root = pathlib.Path(root)
    out = []
    for directory, name in PROVIDERS.items():
        models = root / "providers" / directory / "models"
        for path in sorted(models.rglob("*.toml")):
            model_id = str(path.relative_to(models))[: -len(".toml")]
            if directory == "openrouter" and not model_id.startswith(OPENROUTER_VENDORS):
                continue
            data = merged(root, load(path))
            if data.get("status") == "deprecated":
                continue
            item = entry(name, model_id, data)
            if item:
                out.append(item)
    lines = ",\n".join(json.dumps(item, separators=(",", ":")) for item in out)
    sys.stdout.write(f"[\n{lines}\n]\n")


if __name__ == "__main__":
    main(sys.argv[1])

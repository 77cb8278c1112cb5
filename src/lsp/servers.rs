//! Which language server handles which file: the languages of `[lsp]`, their file extensions and LSP language
//! ids, the servers tried in order (found on `PATH` only: nothing is ever downloaded), and where a project's
//! root is (the nearest folder with one of the language's markers; for Rust, the enclosing `[workspace]`).
//!
//! Owns that table; the programs are found by the session's launcher (`shell::launch`). Reads only marker files (capped, regular files only).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::workspace::regular;

/// One language of `[lsp]`.
#[derive(Debug)]
pub struct Language {
    /// The `[lsp]` key.
    pub name: &'static str,
    pub extensions: &'static [&'static str],
    /// Commands tried in order; the first whose program is on `PATH` runs.
    pub servers: &'static [&'static [&'static str]],
    /// Files that mark a project root.
    pub markers: &'static [&'static str],
}

pub const LANGUAGES: [Language; 5] = [
    Language { name: "rust", extensions: &["rs"], servers: &[&["rust-analyzer"]], markers: &["Cargo.toml"] },
    Language {
        name: "python",
        extensions: &["py", "pyi"],
        servers: &[
            &["basedpyright-langserver", "--stdio"],
            &["pyright-langserver", "--stdio"],
            &["ruff", "server"],
        ],
        markers: &[
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
            "Pipfile",
            "pyrightconfig.json",
        ],
    },
    Language {
        name: "typescript",
        extensions: &["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"],
        servers: &[&["typescript-language-server", "--stdio"]],
        markers: &["tsconfig.json", "jsconfig.json", "package.json"],
    },
    Language { name: "go", extensions: &["go"], servers: &[&["gopls"]], markers: &["go.work", "go.mod"] },
    Language {
        name: "c",
        extensions: &["c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx"],
        servers: &[&["clangd"]],
        markers: &["compile_commands.json", "compile_flags.txt", ".clangd"],
    },
];

fn extension(path: &Path) -> Option<String> {
    path.extension().and_then(OsStr::to_str).map(str::to_ascii_lowercase)
}

/// The language of `path`, by extension.
pub fn language_of(path: &Path) -> Option<&'static Language> {
    let ext = extension(path)?;
    LANGUAGES.iter().find(|l| l.extensions.contains(&ext.as_str()))
}

/// The LSP `languageId` of `path`.
pub fn language_id(path: &Path) -> &'static str {
    match extension(path).as_deref() {
        Some("rs") => "rust",
        Some("py" | "pyi") => "python",
        Some("ts" | "mts" | "cts") => "typescript",
        Some("tsx") => "typescriptreact",
        Some("js" | "mjs" | "cjs") => "javascript",
        Some("jsx") => "javascriptreact",
        Some("go") => "go",
        Some("c" | "h") => "c",
        Some(_) | None => "cpp",
    }
}

fn has_marker(dir: &Path, markers: &[&str]) -> bool {
    markers.iter().any(|m| dir.join(m).exists())
}

fn declares_workspace(dir: &Path) -> bool {
    regular::read(&dir.join("Cargo.toml"), 256 * 1024)
        .is_ok_and(|read| String::from_utf8_lossy(&read.bytes).lines().any(|l| l.trim() == "[workspace]"))
}

/// The project root of `file` for `language`: the nearest folder (the file's own upwards) holding a marker;
/// for Rust, a higher folder whose `Cargo.toml` declares the `[workspace]` wins. Without a marker, `fallback`
/// when the file is inside it, else the file's folder.
pub fn root_for(language: &Language, file: &Path, fallback: &Path) -> PathBuf {
    let start = file.parent().unwrap_or(file);
    let Some(nearest) = start.ancestors().find(|dir| has_marker(dir, language.markers)) else {
        return if file.starts_with(fallback) { fallback.to_path_buf() } else { start.to_path_buf() };
    };
    if language.name == "rust"
        && let Some(workspace) = nearest.ancestors().skip(1).find(|dir| declares_workspace(dir))
    {
        return workspace.to_path_buf();
    }
    nearest.to_path_buf()
}

/// `file://` URI of an absolute path, every byte outside the unreserved set and `/` percent-encoded.
pub fn uri_of(path: &Path) -> String {
    let mut uri = String::from("file://");
    for &byte in path.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The path of a `file://` URI (percent-decoded), or `None` for another scheme.
pub fn path_of(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = rest.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    // Unix paths are arbitrary bytes.
    Some(PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_percent_encode_and_decode_paths() {
        let path = Path::new("/home/me/my project/ä#.rs");
        let uri = uri_of(path);
        assert_eq!(uri, "file:///home/me/my%20project/%C3%A4%23.rs");
        assert_eq!(path_of(&uri).unwrap(), path);
        assert_eq!(path_of("https://x/y"), None);
    }

    #[test]
    fn languages_and_ids_follow_the_extension() {
        assert_eq!(language_of(Path::new("/a/b.tsx")).map(|l| l.name), Some("typescript"));
        assert_eq!(language_id(Path::new("/a/b.tsx")), "typescriptreact");
        assert_eq!(language_of(Path::new("/a/b.hpp")).map(|l| l.name), Some("c"));
        assert_eq!(language_id(Path::new("/a/b.hpp")), "cpp");
        assert!(language_of(Path::new("/a/b.md")).is_none());
    }

    #[test]
    fn the_rust_root_climbs_to_the_workspace_and_others_stop_at_the_nearest_marker() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("crates/a/src")).unwrap();
        std::fs::write(root.join("Cargo.toml"), "[workspace]\nmembers = [\"crates/a\"]\n").unwrap();
        std::fs::write(root.join("crates/a/Cargo.toml"), "[package]\nname = \"a\"\n").unwrap();
        let file = root.join("crates/a/src/lib.rs");
        assert_eq!(root_for(&LANGUAGES[0], &file, root), root);
        std::fs::write(root.join("crates/a/pyproject.toml"), "").unwrap();
        assert_eq!(root_for(&LANGUAGES[1], &root.join("crates/a/src/x.py"), root), root.join("crates/a"));
        assert_eq!(root_for(&LANGUAGES[3], &root.join("crates/a/src/x.go"), root), root);
    }
}

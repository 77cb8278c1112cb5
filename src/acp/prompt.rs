//! Prompt content: turns ACP content blocks (`text`, `resource_link` with `file://` and `#L10-L20` fragments,
//! embedded `resource`, `image`) into the model's user message.
//!
//! A file the user mentions is read without a permission ask, even outside the session's directories or when
//! it is a secret file: the user picked it and put it in the prompt, which is the consent an ask would get.
//! (The model naming a path is what asks; see `builtin::access`.) Mentions still get the file-type check and
//! the byte cap: only regular files are read, and never more than [`MAX_MENTION_READ_BYTES`].
//!
//! Owns the reading of mentioned files. Must not touch the session.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema as acp;

use crate::llm::UserPart;

/// Files attached by mention are cut beyond this size.
const MAX_ATTACHMENT_BYTES: usize = 256 * 1024;
/// Bytes read from a mentioned file (more than the attachment, so a line range deep in a file still works).
pub const MAX_MENTION_READ_BYTES: u64 = crate::workspace::files::MAX_TEXT_BYTES;

/// A prompt the agent cannot accept. Handled by the ACP layer as `-32602 invalid params`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PromptError(pub String);

/// Decode `%XX` escapes.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((high * 16 + low) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A `file://` URI split into its path and an optional 1-based inclusive line range.
pub fn parse_file_uri(uri: &str) -> Option<(PathBuf, Option<(usize, usize)>)> {
    let rest = uri.strip_prefix("file://")?;
    // `file://host/path` is not supported; `file:///path` and `file:/path` forms are.
    let rest = if rest.starts_with('/') { rest } else { return None };
    let (path, fragment) = match rest.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (rest, None),
    };
    let path = PathBuf::from(percent_decode(path.split('?').next().unwrap_or(path)));
    Some((path, fragment.and_then(parse_lines)))
}

/// `L10-L20`, `L10-20`, `L5:15` (Zed's selection form) or `L7`.
fn parse_lines(fragment: &str) -> Option<(usize, usize)> {
    let body = fragment.strip_prefix('L')?;
    let (start, end) = match body.split_once(['-', ':']) {
        Some((s, e)) => (s, e.strip_prefix('L').unwrap_or(e)),
        None => (body, body),
    };
    let start: usize = start.parse().ok()?;
    let end: usize = end.parse().ok()?;
    (start >= 1 && end >= start).then_some((start, end))
}

fn attachment(path: &str, lines: Option<(usize, usize)>, text: &str) -> String {
    let range = lines.map(|(s, e)| format!(" lines=\"{s}-{e}\"")).unwrap_or_default();
    let cut = crate::tool::truncate::floor_char_boundary(text, MAX_ATTACHMENT_BYTES);
    let note = if cut.len() < text.len() { "\n[... attachment cut at 256 KB ...]" } else { "" };
    format!("<file path=\"{path}\"{range}>\n{cut}{note}\n</file>")
}

async fn read_link(path: &Path, lines: Option<(usize, usize)>) -> String {
    use crate::workspace::regular;
    let owned = path.to_path_buf();
    let read = tokio::task::spawn_blocking(move || regular::read(&owned, MAX_MENTION_READ_BYTES)).await;
    let bytes = match read {
        Ok(Ok(read)) => read.bytes,
        Ok(Err(regular::OpenError::NotFound)) => {
            return format!("[The attached file {} could not be read: it does not exist]", path.display());
        }
        Ok(Err(e)) => return format!("[The attached file {} could not be read: {e}]", path.display()),
        Err(e) => return format!("[The attached file {} could not be read: {e}]", path.display()),
    };
    if crate::builtin::read::is_binary(&bytes) {
        return format!(
            "[The attached file {} is binary ({} bytes) and was not included]",
            path.display(),
            bytes.len()
        );
    }
    let text = String::from_utf8_lossy(&bytes);
    let selected = match lines {
        Some((start, end)) => {
            text.lines().skip(start - 1).take(end - start + 1).collect::<Vec<_>>().join("\n")
        }
        None => text.into_owned(),
    };
    attachment(&path.display().to_string(), lines, &selected)
}

async fn part(block: &acp::ContentBlock) -> Result<UserPart, PromptError> {
    Ok(match block {
        acp::ContentBlock::Text(text) => UserPart::Text(text.text.clone()),
        acp::ContentBlock::Image(image) => {
            UserPart::Image { mime: image.mime_type.clone(), data: image.data.clone() }
        }
        acp::ContentBlock::ResourceLink(link) => match parse_file_uri(&link.uri) {
            Some((path, lines)) => UserPart::Text(read_link(&path, lines).await),
            None => UserPart::Text(format!("[Referenced resource: {} ({})]", link.name, link.uri)),
        },
        acp::ContentBlock::Resource(resource) => match &resource.resource {
            acp::EmbeddedResourceResource::TextResourceContents(text) => {
                let (name, lines) = match parse_file_uri(&text.uri) {
                    Some((path, lines)) => (path.display().to_string(), lines),
                    None => (text.uri.clone(), None),
                };
                UserPart::Text(attachment(&name, lines, &text.text))
            }
            acp::EmbeddedResourceResource::BlobResourceContents(blob) => match &blob.mime_type {
                Some(mime) if mime.starts_with("image/") => {
                    UserPart::Image { mime: mime.clone(), data: blob.blob.clone() }
                }
                _ => UserPart::Text(format!("[Binary resource {} omitted]", blob.uri)),
            },
            _ => return Err(PromptError("unsupported embedded resource".into())),
        },
        acp::ContentBlock::Audio(_) => return Err(PromptError("audio prompts are not supported".into())),
        _ => return Err(PromptError("unsupported content block".into())),
    })
}

/// The user message for a prompt. An empty prompt is an error.
pub async fn user_parts(blocks: &[acp::ContentBlock]) -> Result<Vec<UserPart>, PromptError> {
    let mut parts = Vec::with_capacity(blocks.len());
    for block in blocks {
        parts.push(part(block).await?);
    }
    if parts.is_empty() {
        return Err(PromptError("the prompt is empty".into()));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_decoded_with_their_line_fragments() {
        assert_eq!(parse_file_uri("file:///a/b%20c.rs"), Some(("/a/b c.rs".into(), None)));
        assert_eq!(parse_file_uri("file:///a.rs#L10-L20"), Some(("/a.rs".into(), Some((10, 20)))));
        assert_eq!(parse_file_uri("file:///a.rs#L10-20"), Some(("/a.rs".into(), Some((10, 20)))));
        assert_eq!(parse_file_uri("file:///a.rs#L5:15"), Some(("/a.rs".into(), Some((5, 15)))));
        assert_eq!(parse_file_uri("file:///a.rs#L7"), Some(("/a.rs".into(), Some((7, 7)))));
        assert_eq!(parse_file_uri("file:///a.rs#L9-L3"), Some(("/a.rs".into(), None)));
        assert_eq!(parse_file_uri("https://x/a.rs"), None);
        assert_eq!(parse_file_uri("file://host/a.rs"), None);
    }

    #[tokio::test]
    async fn a_resource_link_with_a_range_attaches_only_those_lines() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "one\ntwo\nthree\nfour\n").unwrap();
        let link = acp::ContentBlock::ResourceLink(acp::ResourceLink::new(
            "a.txt",
            format!("file://{}#L2-L3", file.display()),
        ));
        let parts = user_parts(&[link]).await.unwrap();
        assert_eq!(
            parts,
            vec![UserPart::Text(format!(
                "<file path=\"{}\" lines=\"2-3\">\ntwo\nthree\n</file>",
                file.display()
            ))]
        );
    }

    #[tokio::test]
    async fn a_missing_linked_file_is_reported_in_the_prompt_not_dropped() {
        let link =
            acp::ContentBlock::ResourceLink(acp::ResourceLink::new("gone", "file:///nonexistent/gone.rs"));
        let parts = user_parts(&[link]).await.unwrap();
        let UserPart::Text(text) = &parts[0] else { panic!() };
        assert_eq!(text, "[The attached file /nonexistent/gone.rs could not be read: it does not exist]");
    }

    #[tokio::test]
    async fn a_mentioned_fifo_or_endless_procfs_file_is_answered_promptly_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("pipe");
        let name = std::ffi::CString::new(pipe.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let link = |path: &Path| {
            acp::ContentBlock::ResourceLink(acp::ResourceLink::new("f", format!("file://{}", path.display())))
        };
        let parts = user_parts(&[link(&pipe), link(Path::new("/proc/self/pagemap"))]).await.unwrap();
        assert_eq!(
            parts[0],
            UserPart::Text(format!(
                "[The attached file {} could not be read: it is a FIFO (named pipe), not a regular file]",
                pipe.display()
            ))
        );
        assert_eq!(
            parts[1],
            UserPart::Text(format!(
                "[The attached file /proc/self/pagemap is binary ({MAX_MENTION_READ_BYTES} bytes) and was not included]"
            ))
        );
    }

    #[tokio::test]
    async fn empty_and_audio_prompts_are_refused() {
        assert_eq!(user_parts(&[]).await.unwrap_err(), PromptError("the prompt is empty".into()));
        let audio = acp::ContentBlock::Audio(acp::AudioContent::new("AAAA", "audio/wav"));
        assert_eq!(
            user_parts(&[audio]).await.unwrap_err(),
            PromptError("audio prompts are not supported".into())
        );
    }
}

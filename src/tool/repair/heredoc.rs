//! A patch body wrapped in a shell heredoc, as models used to a shell-only harness send it:
//! `cat <<'EOF'` / `apply_patch <<EOF` / `<<"PATCH"` on the first line, the tag alone on the last. Codex
//! accepts the bare `<<EOF` form; this also takes the command in front and any tag. The quotes around the tag
//! must match.
//!
//! Owns recognising and removing that wrapper. Must not parse the patch itself.

/// Commands that may stand before `<<` on the first line.
const COMMANDS: [&str; 3] = ["cat", "apply_patch", "applypatch"];

/// The heredoc tag of a first line such as `apply_patch <<'EOF'`.
fn opener_tag(line: &str) -> Option<&str> {
    let line = line.trim();
    let rest = COMMANDS.iter().find_map(|c| line.strip_prefix(c)).unwrap_or(line).trim_start();
    let tag = rest.strip_prefix("<<")?.trim_start_matches('-').trim();
    let tag = match tag.chars().next()? {
        quote @ ('\'' | '"') => tag.strip_prefix(quote)?.strip_suffix(quote)?,
        _ => tag,
    };
    let word = tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (word && !tag.is_empty()).then_some(tag)
}

/// The body inside a heredoc wrapper, or `None` when `text` is not wrapped (or holds nothing inside).
pub fn unwrap(text: &str) -> Option<String> {
    let trimmed = text.trim();
    let (first, rest) = trimmed.split_once('\n')?;
    let tag = opener_tag(first)?;
    let (body, last) = rest.rsplit_once('\n')?;
    if last.trim() != tag || body.trim().is_empty() {
        return None;
    }
    Some(body.strip_suffix('\r').unwrap_or(body).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch";

    #[test]
    fn the_usual_wrappers_are_removed() {
        for opener in ["cat <<'EOF'", "apply_patch <<EOF", "applypatch << \"PATCH\"", "<<EOF", "cat <<-EOF"] {
            let tag = if opener.contains("PATCH") { "PATCH" } else { "EOF" };
            let wrapped = format!("{opener}\n{PATCH}\n{tag}\n");
            assert_eq!(unwrap(&wrapped).as_deref(), Some(PATCH), "{opener}");
        }
        let crlf = PATCH.replace('\n', "\r\n");
        assert_eq!(unwrap(&format!("apply_patch <<'EOF'\r\n{crlf}\r\nEOF")), Some(crlf));
    }

    #[test]
    fn anything_else_is_left_alone() {
        assert_eq!(unwrap(PATCH), None);
        assert_eq!(unwrap(&format!("cat <<'EOF\"\n{PATCH}\nEOF")), None, "mismatched quotes");
        assert_eq!(unwrap(&format!("cat <<EOF\n{PATCH}\nEND")), None, "wrong closing tag");
        assert_eq!(unwrap(&format!("python <<EOF\n{PATCH}\nEOF")), None, "another command");
        assert_eq!(unwrap("cat <<EOF\nEOF"), None, "nothing inside");
    }
}

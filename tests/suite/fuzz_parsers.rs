//! Fuzzing the parsers that read what the model writes and what the provider streams: the shell tokenizer and
//! classifier, the apply_patch parser, the edit cascade and the SSE decoder. None may panic or hang; each keeps
//! the invariant its callers rely on (an unparsable command is never read-only, an edit's reported span is a
//! real slice of the result, SSE events do not depend on how the bytes were chunked).

use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::Value;
use tinycode::builtin::apply_patch::parser::{self, Mode};
use tinycode::builtin::edit::cascade;
use tinycode::llm::transport::sse::Decoder;
use tinycode::shell::classify::{self, Class};
use tinycode::shell::tokenize;

use crate::support::fuzz::{corpus, fuzz, text};

const SHELL_CASES: u32 = 10_000;
const PATCH_CASES: u32 = 5_000;
const EDIT_CASES: u32 = 3_000;
const SSE_CASES: u32 = 5_000;
/// One input taking this long is a hang, not a slow case.
const HANG: Duration = Duration::from_secs(5);

fn timed<T>(what: &str, work: impl FnOnce() -> T) -> Result<T, String> {
    let start = Instant::now();
    let out = work();
    let took = start.elapsed();
    if took > HANG { Err(format!("{what} took {took:?}")) } else { Ok(out) }
}

fn lines_of(target: &str) -> Vec<String> {
    corpus(target)
        .into_iter()
        .flat_map(|(_, bytes)| {
            String::from_utf8(bytes).unwrap().lines().map(String::from).collect::<Vec<_>>()
        })
        .collect()
}

fn shell_line() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z]{1,6}",
        2 => proptest::sample::select(&[
            "rm", "-rf", "git", "push", "--force", "sudo", "cat", ".env", "echo", "sh", "-c", "bash", "eval", "xargs",
            "find", "-delete", "-exec", "dd", "of=/dev/sda", "curl", "|", "||", "&&", ";", "&", ">", ">>", "<", "2>&1",
            "<<EOF", "$(", ")", "`", "'", "\"", "\\", "${", "}", "$((", "))", "(", "{", "#", "\n", "~", "*", "?", "!",
            "=", "$HOME", "<(", ">(", "|&", ";;", "EOF",
        ][..])
        .prop_map(String::from),
        1 => text(),
    ];
    proptest::collection::vec(piece, 0..14).prop_map(|pieces| pieces.join(" "))
}

#[test]
fn the_shell_tokenizer_and_classifier_survive_any_line_and_never_trust_what_they_cannot_parse() {
    fuzz("shell", lines_of("shell"), SHELL_CASES, shell_line(), |line| {
        let (parsed, class, _) = timed("classifying", || {
            let host = classify::Host::new(std::path::Path::new("/nonexistent-fuzz-dir"));
            (tokenize::parse(&line), classify::classify(&line, &host), classify::shapes(&line))
        })?;
        if parsed.is_err() && class == Class::ReadOnly {
            return Err(format!("an unparsable line was classified read-only: {line:?}"));
        }
        Ok(())
    });
}

fn patch_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("*** Begin Patch".to_string()),
        Just("*** End Patch".to_string()),
        "\\*\\*\\* (Add|Update|Delete) File: [a-z/.]{0,8}",
        "\\*\\*\\* Move to: [a-z/.]{0,8}",
        Just("*** End of File".to_string()),
        Just("*** Environment ID: x".to_string()),
        "@@[ a-z]{0,6}",
        "[+ -][ -~]{0,10}",
        Just("<<'EOF'".to_string()),
        Just("EOF".to_string()),
        Just(String::new()),
        text(),
    ];
    (proptest::collection::vec(line, 0..14), any::<bool>())
        .prop_map(|(lines, crlf)| lines.join(if crlf { "\r\n" } else { "\n" }))
}

#[test]
fn the_apply_patch_parser_survives_any_text_in_every_mode() {
    let seeds: Vec<String> =
        corpus("apply_patch").into_iter().map(|(_, bytes)| String::from_utf8(bytes).unwrap()).collect();
    fuzz("apply_patch", seeds, PATCH_CASES, patch_text(), |text| {
        for mode in [Mode::Strict, Mode::Lenient, Mode::Streaming] {
            let parsed = timed("parsing", || parser::parse(&text, mode))?;
            if let Ok(patch) = parsed
                && mode == Mode::Strict
                && parser::parse(&text, Mode::Lenient) != Ok(patch)
            {
                return Err("a strict patch reads differently in lenient mode".into());
            }
        }
        Ok(())
    });
}

fn edit_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => "[ \\t]{0,4}[a-z(){};=]{0,10}",
        1 => Just(String::new()),
        1 => Just("\u{feff}x".to_string()),
        1 => Just("\\n\\t\\\"".to_string()),
        1 => text(),
    ];
    (proptest::collection::vec(line, 0..12), any::<bool>())
        .prop_map(|(lines, crlf)| lines.join(if crlf { "\r\n" } else { "\n" }))
}

/// (content, old, new, replace_all); `old` is often a real piece of `content`, changed a little.
fn edit_case() -> impl Strategy<Value = (String, String, String, bool)> {
    (
        edit_text(),
        edit_text(),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        0..3u8,
        any::<bool>(),
    )
        .prop_map(|(content, new, a, b, how, all)| {
            let chars: Vec<char> = content.chars().collect();
            let (mut from, mut to) = (a.index(chars.len() + 1), b.index(chars.len() + 1));
            if from > to {
                std::mem::swap(&mut from, &mut to);
            }
            let piece: String = chars[from..to].iter().collect();
            let old = match how {
                0 => piece,
                1 => piece.replace("  ", " ").trim().to_string(),
                _ => format!("{piece}x"),
            };
            (content, old, new, all)
        })
}

#[test]
fn the_edit_cascade_survives_any_text_and_reports_a_real_span_of_its_result() {
    let seeds: Vec<(String, String, String, bool)> = lines_of("edit")
        .iter()
        .map(|line| {
            let case: Value = serde_json::from_str(line).unwrap();
            let field = |name: &str| case[name].as_str().unwrap().to_string();
            (field("content"), field("old"), field("new"), case["replace_all"].as_bool().unwrap_or(false))
        })
        .collect();
    fuzz("edit", seeds, EDIT_CASES, edit_case(), |(content, old, new, all)| {
        let edited = timed("editing", || cascade::edit(&content, &old, &new, all))?;
        timed("suggesting", || cascade::did_you_mean(&content, &old))?;
        let Ok(edited) = edited else { return Ok(()) };
        let (text, start) = (&edited.content, edited.offset);
        let end = start + edited.inserted_len;
        if end > text.len() || !text.is_char_boundary(start) || !text.is_char_boundary(end) {
            return Err(format!("span {start}..{end} is not a slice of the {}-byte result", text.len()));
        }
        let lines = text.split('\n').count();
        timed("excerpting", || cascade::numbered_excerpt(text, 1, lines + 3))?;
        Ok(())
    });
}

/// A server-sent byte stream and the points to cut it at.
fn sse_stream() -> impl Strategy<Value = (Vec<u8>, Vec<prop::sample::Index>)> {
    let line = prop_oneof![
        "data: [ -~]{0,16}",
        "data:[ -~]{0,8}",
        "event: [a-z_.]{0,10}",
        ": [ -~]{0,8}",
        "id: [0-9]{0,3}",
        "retry: [0-9]{0,3}",
        Just("data: [DONE]".to_string()),
        Just(String::new()),
        text(),
    ];
    let ending = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
    let bytes = proptest::collection::vec((line, ending), 0..16).prop_map(|lines| {
        lines.into_iter().flat_map(|(line, end)| format!("{line}{end}").into_bytes()).collect::<Vec<u8>>()
    });
    let noise = proptest::collection::vec(any::<u8>(), 0..64);
    (prop_oneof![4 => bytes, 1 => noise], proptest::collection::vec(any::<prop::sample::Index>(), 0..6))
}

fn decode(chunks: &[&[u8]]) -> Result<Vec<tinycode::llm::transport::sse::Event>, String> {
    let mut decoder = Decoder::new(1 << 20);
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(decoder.push(chunk).map_err(|e| e.to_string())?);
    }
    events.extend(decoder.finish());
    Ok(events)
}

#[test]
fn the_sse_decoder_survives_any_bytes_and_decodes_the_same_however_they_are_chunked() {
    let seeds: Vec<(Vec<u8>, Vec<prop::sample::Index>)> =
        corpus("sse").into_iter().map(|(_, bytes)| (bytes, Vec::new())).collect();
    fuzz("sse", seeds, SSE_CASES, sse_stream(), |(bytes, cuts)| {
        let whole = timed("decoding", || decode(&[&bytes]))?;
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks: Vec<&[u8]> = Vec::new();
        let mut from = 0;
        for point in points {
            chunks.push(&bytes[from..point]);
            from = point;
        }
        chunks.push(&bytes[from..]);
        let chunked = timed("decoding in chunks", || decode(&chunks))?;
        let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
        let one_by_one = timed("decoding byte by byte", || decode(&bytewise))?;
        if whole != chunked || whole != one_by_one {
            return Err(format!("chunking changed the events: {whole:?} / {chunked:?} / {one_by_one:?}"));
        }
        Ok(())
    });
}

#[test]
fn a_last_option_that_takes_a_value_is_classified_without_a_crash() {
    for (line, name) in
        [("git -c", "git"), ("sudo -u", "sudo"), ("xargs -I", "xargs"), ("timeout -s", "timeout")]
    {
        let host = classify::Host::new(std::path::Path::new("/nonexistent-fuzz-dir"));
        let class = std::panic::catch_unwind(|| classify::classify(line, &host));
        let class = class.unwrap_or_else(|_| panic!("classifying {line:?} panicked"));
        assert_ne!(class, Class::ReadOnly, "{line}");
        let shapes = std::panic::catch_unwind(|| classify::shapes(line));
        assert!(shapes.is_ok_and(|s| !s.is_empty()), "{line} ({name})");
    }
}

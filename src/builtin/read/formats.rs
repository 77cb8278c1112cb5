//! Files `read` shows other than as lines (seed 003): Jupyter notebooks as their cells with outputs, and PDF
//! documents described with a hint to extract their text.
//!
//! Owns those renderings. Pure.

use serde_json::Value;

/// Characters of one cell output shown at most.
const MAX_OUTPUT_CHARS: usize = 2_000;

/// A notebook field that is a string or a list of strings (Jupyter writes both).
fn joined(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// Terminal colour codes (in tracebacks) removed.
fn without_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

fn clamp(text: &str) -> String {
    let count = text.chars().count();
    if count <= MAX_OUTPUT_CHARS {
        return text.trim_end().to_string();
    }
    let cut: String = text.chars().take(MAX_OUTPUT_CHARS).collect();
    format!("{}\n... ({} more characters)", cut.trim_end(), count - MAX_OUTPUT_CHARS)
}

/// One output of a code cell.
fn output(out: &Value) -> String {
    let kind = out.get("output_type").and_then(Value::as_str).unwrap_or("output");
    let body = match kind {
        "stream" => joined(out.get("text")),
        "error" => {
            let name = out.get("ename").and_then(Value::as_str).unwrap_or("Error");
            let value = out.get("evalue").and_then(Value::as_str).unwrap_or("");
            let trace = out
                .get("traceback")
                .and_then(Value::as_array)
                .map(|lines| lines.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"))
                .unwrap_or_default();
            without_escapes(&format!("{name}: {value}\n{trace}"))
        }
        _ => {
            let data = out.get("data");
            match data.and_then(|d| d.get("text/plain")) {
                Some(text) => joined(Some(text)),
                None => {
                    let kinds: Vec<&str> = data
                        .and_then(Value::as_object)
                        .map(|d| d.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    format!("[{} output not shown]", kinds.join(", "))
                }
            }
        }
    };
    format!("<output {kind}>\n{}\n</output>", clamp(&body))
}

/// A notebook as its cells: `<cell N: kind>` blocks with the source and, for code cells, the outputs. `None`
/// when the text is not a notebook.
pub fn notebook(text: &str) -> Option<String> {
    let doc: Value = serde_json::from_str(text).ok()?;
    let cells = doc.get("cells")?.as_array()?;
    let language = doc
        .pointer("/metadata/kernelspec/language")
        .or_else(|| doc.pointer("/metadata/language_info/name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = Vec::with_capacity(cells.len());
    for (i, cell) in cells.iter().enumerate() {
        let kind = cell.get("cell_type").and_then(Value::as_str).unwrap_or("unknown");
        let mut head = format!("<cell {}: {kind}", i + 1);
        if kind == "code" {
            if !language.is_empty() {
                head.push_str(&format!(", {language}"));
            }
            if let Some(n) = cell.get("execution_count").and_then(Value::as_u64) {
                head.push_str(&format!(", execution {n}"));
            }
        }
        let mut block = vec![format!("{head}>"), joined(cell.get("source")).trim_end().to_string()];
        for out in cell.get("outputs").and_then(Value::as_array).into_iter().flatten() {
            block.push(output(out));
        }
        block.push("</cell>".into());
        out.push(block.join("\n"));
    }
    Some(out.join("\n\n"))
}

/// What `read` says about a PDF instead of its bytes.
pub fn pdf(path: &std::path::Path, bytes: u64) -> String {
    format!(
        "{} is a PDF document ({bytes} bytes); its text cannot be read directly. Extract it with a shell command, for example `pdftotext -layout '{}' -` (poppler-utils), then read or grep the output.",
        path.display(),
        path.display()
    )
}

/// Whether `head` (a file's first bytes) or the name says PDF.
pub fn is_pdf(path: &std::path::Path, head: &[u8]) -> bool {
    head.starts_with(b"%PDF-") || path.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_notebook_renders_as_cells_with_their_outputs() {
        let doc = json!({
            "metadata": {"kernelspec": {"language": "python"}},
            "cells": [
                {"cell_type": "markdown", "source": ["# Title\n", "Some text"]},
                {"cell_type": "code", "execution_count": 3, "source": "print(1)\n1 / 0", "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["1\n"]},
                    {"output_type": "execute_result", "data": {"text/plain": "42", "text/html": "<b>42</b>"}},
                    {"output_type": "display_data", "data": {"image/png": "iVBOR"}},
                    {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                     "traceback": ["\u{1b}[0;31mZeroDivisionError\u{1b}[0m: division by zero"]}
                ]}
            ]
        });
        assert_eq!(
            notebook(&doc.to_string()).unwrap(),
            "<cell 1: markdown>\n# Title\nSome text\n</cell>\n\n\
             <cell 2: code, python, execution 3>\nprint(1)\n1 / 0\n\
             <output stream>\n1\n</output>\n\
             <output execute_result>\n42\n</output>\n\
             <output display_data>\n[image/png output not shown]\n</output>\n\
             <output error>\nZeroDivisionError: division by zero\nZeroDivisionError: division by zero\n</output>\n</cell>"
        );
        assert_eq!(notebook("{\"not\": \"a notebook\"}"), None);
        assert_eq!(notebook("not json"), None);
    }

    #[test]
    fn long_outputs_are_cut_with_a_count() {
        let doc = json!({"cells": [{"cell_type": "code", "source": "x", "outputs": [
            {"output_type": "stream", "text": "y".repeat(2_010)}
        ]}]});
        let out = notebook(&doc.to_string()).unwrap();
        assert!(
            out.contains(&format!("{}\n... (10 more characters)\n</output>", "y".repeat(2_000))),
            "{out}"
        );
    }

    #[test]
    fn pdfs_are_recognised_by_name_or_magic_and_described_with_a_hint() {
        let path = std::path::Path::new("/w/report.PDF");
        assert!(is_pdf(path, b""));
        assert!(is_pdf(std::path::Path::new("/w/x.bin"), b"%PDF-1.7"));
        assert!(!is_pdf(std::path::Path::new("/w/x.txt"), b"hello"));
        assert_eq!(
            pdf(path, 1234),
            "/w/report.PDF is a PDF document (1234 bytes); its text cannot be read directly. Extract it with a shell command, for example `pdftotext -layout '/w/report.PDF' -` (poppler-utils), then read or grep the output."
        );
    }
}

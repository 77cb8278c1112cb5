//! Reading and finding through ACP: many files in one `read` (errors inline, the aggregate cap naming what it
//! skipped), globs, notebooks, PDFs, UTF-16 round trips through `write` and `edit`, `list_dir`, grep context
//! lines, and the ignore stack (`.tinycodeignore` re-including what the defaults hide, `src/bin` never hidden).

use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use serde_json::{Value, json};
use tinycode::workspace::encoding::{Encoding, encode};

use super::turn::tool_result;
use crate::support::client::{Answer, Harness};
use crate::support::fake_model::{Reply, answer, calls};

fn call(id: &str, tool: &str, args: Value) -> (String, String, String) {
    (id.into(), tool.into(), args.to_string())
}

fn steps(steps: Vec<Vec<(String, String, String)>>) -> Vec<Reply> {
    let mut replies: Vec<Reply> = steps
        .iter()
        .map(|step| {
            calls(&step.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect::<Vec<_>>())
        })
        .collect();
    replies.push(answer(&["done"]));
    replies
}

/// Run one round of calls and return the model's view of each result, by call id.
async fn run(h: &Harness, round: Vec<(String, String, String)>) -> Vec<Value> {
    h.model.script(steps(vec![round]));
    let session = h.session().await;
    h.client.prompt(&session, "go").await.unwrap();
    h.model.messages(1)
}

#[tokio::test]
async fn many_files_come_back_under_headers_with_errors_inline_and_the_cap_naming_what_was_skipped() {
    let h = Harness::start(vec![]).await;
    h.write("a.rs", "fn a() {}\n");
    h.write("b.rs", "fn b() {}\n");
    h.write(".env", "KEY=1\n");
    let big: String = (0..700).map(|i| format!("{i:0>40}\n")).collect();
    h.write("big1.txt", &big);
    h.write("big2.txt", &big);
    let messages = run(
        &h,
        vec![call("m", "read", json!({"paths": ["a.rs", "missing.rs", ".env", "b.rs", "big*.txt"]}))],
    )
    .await;
    let out = tool_result(&messages, "m");
    assert!(
        out.starts_with(
            "Read 3/5 files\n\n// File: a.rs (text, 1 lines)\n1\tfn a() {}\n\n(End of file: 1 lines)\n\n// File: missing.rs (error)\nFile not found: "
        ),
        "{out}"
    );
    assert!(
        out.contains("// File: .env (error)\na secret file: not read with other files. Read it on its own; the user will be asked."),
        "{out}"
    );
    assert!(out.contains("// File: b.rs (text, 1 lines)\n1\tfn b() {}\n"), "{out}");
    assert!(out.contains("// File: big1.txt (text, 700 lines)\n1\t"), "{out}");
    assert!(
        out.ends_with(
            "(Skipped to stay within 50 KB: big2.txt. Read them separately, or narrow the paths or glob.)"
        ),
        "{out}"
    );
    assert!(!out.contains("KEY=1"));
}

#[tokio::test]
async fn a_glob_in_file_path_reads_every_match_outside_ignored_folders() {
    let h = Harness::start(vec![]).await;
    h.write("src/a.rs", "a\n");
    h.write("src/bin/main.rs", "main\n");
    h.write("node_modules/x/index.rs", "dep\n");
    let messages = run(&h, vec![call("g", "read", json!({"file_path": "**/*.rs"}))]).await;
    assert_eq!(
        tool_result(&messages, "g"),
        "Read 2/2 files\n\n// File: src/a.rs (text, 1 lines)\n1\ta\n\n(End of file: 1 lines)\n\n// File: src/bin/main.rs (text, 1 lines)\n1\tmain\n\n(End of file: 1 lines)"
    );
}

#[tokio::test]
async fn notebooks_render_as_cells_and_pdfs_get_a_hint() {
    let h = Harness::start(vec![]).await;
    let notebook = json!({"cells": [
        {"cell_type": "markdown", "source": ["# Analysis"]},
        {"cell_type": "code", "execution_count": 1, "source": ["print(2 + 2)"], "outputs": [{"output_type": "stream", "text": ["4\n"]}]}
    ]});
    let nb = h.write("a.ipynb", &notebook.to_string());
    let pdf = h.cwd.join("paper.pdf");
    std::fs::write(&pdf, b"%PDF-1.7\n\x00\x01binary").unwrap();
    let messages = run(
        &h,
        vec![call("n", "read", json!({"file_path": nb})), call("p", "read", json!({"file_path": pdf}))],
    )
    .await;
    assert_eq!(
        tool_result(&messages, "n"),
        "<cell 1: markdown>\n# Analysis\n</cell>\n\n<cell 2: code, execution 1>\nprint(2 + 2)\n<output stream>\n4\n</output>\n</cell>\n\n(A notebook, shown as its cells. It is stored as JSON: to edit it, read its raw lines with offset/limit and edit those.)"
    );
    assert_eq!(
        tool_result(&messages, "p"),
        format!(
            "{} is a PDF document (17 bytes); its text cannot be read directly. Extract it with a shell command, for example `pdftotext -layout '{}' -` (poppler-utils), then read or grep the output.",
            pdf.display(),
            pdf.display()
        )
    );
}

#[tokio::test]
async fn a_utf16_file_reads_as_text_and_write_and_edit_keep_its_encoding() {
    let h = Harness::start(vec![]).await;
    let be = h.cwd.join("be.txt");
    std::fs::write(&be, encode("alpha\nbeta\n", Encoding::Utf16Be)).unwrap();
    let le = h.cwd.join("le.txt");
    std::fs::write(&le, encode("one\r\ntwo\r\n", Encoding::Utf16Le)).unwrap();
    h.model.script(steps(vec![
        vec![call("r1", "read", json!({"file_path": be})), call("r2", "read", json!({"file_path": le}))],
        vec![
            call("e", "edit", json!({"file_path": be, "old_string": "beta", "new_string": "gamma"})),
            call("w", "write", json!({"file_path": le, "content": "uno\ndos\n"})),
        ],
    ]));
    h.client.answer_permissions(&[Answer::Pick(K::AllowAlways)]);
    let session = h.session().await;
    h.client.prompt(&session, "edit").await.unwrap();
    assert_eq!(
        tool_result(&h.model.messages(1), "r1"),
        "1\t\u{feff}alpha\n2\tbeta\n\n(End of file: 2 lines)"
    );
    assert_eq!(std::fs::read(&be).unwrap(), encode("alpha\ngamma\n", Encoding::Utf16Be));
    assert_eq!(std::fs::read(&le).unwrap(), encode("uno\r\ndos\r\n", Encoding::Utf16Le));
}

#[tokio::test]
async fn list_dir_shows_a_tree_and_names_what_the_ignore_stack_left_out() {
    let h = Harness::start(vec![]).await;
    h.write("src/main.rs", "fn main() {}\n");
    h.write("src/bin/tool.rs", "x\n");
    h.write("target/debug/app", "x\n");
    h.write("vendor/lib/a.go", "x\n");
    h.write(".tinycodeignore", "!vendor/\n");
    let messages = run(&h, vec![call("l", "list_dir", json!({"depth": 3}))]).await;
    assert_eq!(
        tool_result(&messages, "l"),
        format!(
            "{}/\n  src/\n    bin/\n      tool.rs (2 B)\n    main.rs (13 B)\n  vendor/\n    lib/\n      a.go (2 B)\n  .tinycodeignore (9 B)\n\n\
             (4 directories and 4 other entries shown. Left out by ignore rules (VCS, defaults, .gitignore, .ignore, .tinycodeignore): target/.)",
            h.cwd.display()
        )
    );
}

#[tokio::test]
async fn grep_shows_context_lines_and_honours_the_ignore_stack() {
    let h = Harness::start(vec![]).await;
    h.write("src/lib.rs", "one\ntwo\nneedle\nfour\nfive\n");
    h.write("node_modules/dep/index.js", "needle\n");
    h.write("build/out.txt", "needle\n");
    h.write("src/build/gen.rs", "needle\n");
    let messages =
        run(&h, vec![call("g", "grep", json!({"pattern": "needle", "context": 1, "include": "*.rs"}))]).await;
    let out = tool_result(&messages, "g");
    let mut groups: Vec<&str> = out.split("\n--\n").collect();
    groups.sort();
    assert_eq!(
        groups,
        vec!["src/build/gen.rs:1:needle", "src/lib.rs-2-two\nsrc/lib.rs:3:needle\nsrc/lib.rs-4-four"]
    );
}

//! A patch whose writes fail part-way changes nothing: on disk (a file the file system cannot create) and through
//! the editor (`fs/write_text_file` refused for one file). What was already written is put back, files it created
//! are removed, and the model is told that nothing changed and which file failed, and why.

use agent_client_protocol::v1::schema::PermissionOptionKind as K;
use agent_client_protocol::{Error, ErrorCode};
use serde_json::json;

use super::turn::{finished, tool_result};
use crate::support::client::{Answer, Harness, Setup, editor_fs};
use crate::support::fake_model::{Reply, answer, calls};

fn script(b: &std::path::Path, patch: &str) -> Vec<Reply> {
    let read = json!({"file_path": b}).to_string();
    let apply = json!({"patch": patch}).to_string();
    vec![calls(&[("r", "read", &read)]), calls(&[("p", "apply_patch", &apply)]), answer(&["ok"])]
}

/// Every entry of `dir`, sorted (a temporary or kept file left behind would show here).
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_patch_whose_second_file_cannot_be_created_on_disk_leaves_the_first_byte_identical() {
    let h = Harness::start(vec![]).await;
    let b = h.write("b.txt", "one\r\ntwo\n");
    // A legal name (254 bytes) whose temporary sibling is too long for the file system: the second write fails
    // after the first file's update was planned.
    let long = format!("{}.txt", "n".repeat(250));
    let patch = format!(
        "*** Begin Patch\n*** Update File: b.txt\n@@\n one\n-two\n+TWO\n*** Add File: sub/{long}\n+new\n*** End Patch"
    );
    h.model.script(script(&b, &patch));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "patch").await.unwrap();

    assert_eq!(std::fs::read(&b).unwrap(), b"one\r\ntwo\n");
    assert_eq!(entries(&h.cwd), vec!["b.txt".to_string()], "no file, folder or temporary file is left");
    let failed = h.cwd.join("sub").join(&long);
    assert_eq!(
        tool_result(&h.model.messages(2), "p"),
        format!(
            "Error: apply_patch could not write {}: File name too long (os error 36)\nNo files were changed.",
            failed.display()
        )
    );
    assert_eq!(finished(&h.client.updates(&session), "p")["status"], "failed");
}

#[tokio::test]
async fn a_patch_the_editor_refuses_to_save_in_part_is_undone_through_the_editor() {
    let h = Setup::new(vec![]).capabilities(editor_fs()).start().await;
    let b = h.write("b.txt", "one\ntwo\n");
    let c = h.cwd.join("locked/c.txt");
    h.client
        .log
        .fs_write_errors
        .lock()
        .unwrap()
        .insert(c.clone(), Error::new(ErrorCode::INTERNAL_ERROR, "the folder is read-only"));
    let patch = "*** Begin Patch\n*** Update File: b.txt\n@@\n one\n-two\n+TWO\n*** Add File: locked/c.txt\n+new\n*** End Patch";
    h.model.script(script(&b, patch));
    h.client.answer_permissions(&[Answer::Pick(K::AllowOnce)]);
    let session = h.session().await;
    h.client.prompt(&session, "patch").await.unwrap();

    assert_eq!(std::fs::read(&b).unwrap(), b"one\ntwo\n");
    assert!(!c.exists() && !h.cwd.join("locked").exists());
    assert_eq!(
        *h.client.log.fs_writes.lock().unwrap(),
        vec![
            (b.clone(), "one\nTWO\n".to_string()),
            (c.clone(), "new\n".to_string()),
            (b.clone(), "one\ntwo\n".to_string())
        ],
        "the editor saved b.txt, refused c.txt, and was given b.txt's text back"
    );
    assert_eq!(
        tool_result(&h.model.messages(2), "p"),
        format!(
            "Error: apply_patch could not write {}: the editor could not save it: the folder is read-only\nNo files were changed.",
            c.display()
        )
    );
    assert_eq!(finished(&h.client.updates(&session), "p")["status"], "failed");
}

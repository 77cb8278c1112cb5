//! The data folder holds every prompt, every file the agent read and checkpoint copies: it is the user's alone
//! (0700, its database and other files 0600), also when an older version left it open.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agent_client_protocol::v1::schema as acp;

use crate::support::client::Harness;
use crate::support::fake_model::answer;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test]
async fn the_data_folder_and_its_database_are_private_and_an_open_folder_is_closed_at_start() {
    let mut h = Harness::start(vec![answer(&["hi"])]).await;
    let session = h.session().await;
    h.client.prompt(&session, "hi").await.unwrap();
    let db = h.data.join("tinycode.db");
    let modes = |h: &Harness| {
        ["", "tinycode.db", "tinycode.db-wal", "tinycode.db-shm"]
            .map(|name| (name, mode(&if name.is_empty() { h.data.clone() } else { h.data.join(name) })))
    };
    let private =
        [("", 0o700), ("tinycode.db", 0o600), ("tinycode.db-wal", 0o600), ("tinycode.db-shm", 0o600)];
    assert_eq!(modes(&h), private);

    // As an older version left them.
    set_mode(&h.data, 0o755);
    set_mode(&db, 0o644);
    let output = h.data.join("tool-output");
    std::fs::create_dir_all(&output).unwrap();
    set_mode(&output, 0o755);
    h.restart().await;
    h.client.call(acp::ListSessionsRequest::new()).await.unwrap();
    assert_eq!(modes(&h)[..2], private[..2]);
    assert_eq!(mode(&output), 0o700);
}

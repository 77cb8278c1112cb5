//! Process trees that try to outlive the agent: a `setsid` child, a double-forked daemon, a Python daemon that
//! forks, calls `os.setsid()` and forks again, and a tree that ignores SIGTERM. Each member writes its pid to a
//! file, so a test can check, with a bounded wait on the process table, that none of them survived.

use std::path::Path;
use std::time::Duration;

use super::client::PATIENCE;

/// How many pids [`script`] writes.
pub const MEMBERS: usize = 5;

/// A command that starts every kind of tree, writes each member's pid to `pidfile`, prints `started` once all are
/// written, and waits.
pub fn script(pidfile: &Path) -> String {
    let p = pidfile.display();
    format!(
        r#"setsid sh -c 'echo $$ >> {p}; exec sleep 1000' &
(sleep 1000 & echo $! >> {p}) &
python3 -c 'import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open("{p}", "a").write("%d\n" % os.getpid())
        time.sleep(1000)
'
sh -c 'trap "" TERM; sleep 1000 & echo $! >> {p}; echo $$ >> {p}; wait' &
until [ "$(cat {p} 2>/dev/null | wc -l)" -ge {MEMBERS} ]; do sleep 0.01; done
echo started
wait"#
    )
}

/// The pids [`script`] wrote, once all of them are there.
pub async fn pids(pidfile: &Path) -> Vec<i32> {
    let read = async {
        loop {
            let text = std::fs::read_to_string(pidfile).unwrap_or_default();
            let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.len() == MEMBERS {
                return pids;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(PATIENCE, read).await.expect("every member of the tree wrote its pid")
}

/// The members of `pids` still running (zombies do not count) once they all died or `limit` passed.
pub async fn survivors(pids: &[i32], limit: Duration) -> Vec<i32> {
    let alive = || pids.iter().copied().filter(|p| tinycode::shell::process::running(*p)).collect::<Vec<_>>();
    let gone = async {
        while !alive().is_empty() {
            tokio::task::yield_now().await;
        }
    };
    let _ = tokio::time::timeout(limit, gone).await;
    alive()
}

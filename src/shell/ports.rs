//! Which processes listen on a TCP port, for `kill_shell` by port: on Linux from `/proc/net/tcp` and
//! `/proc/net/tcp6` (listening sockets) and each process's open descriptors; elsewhere from `lsof`. Only what
//! this user may see is found.
//!
//! Owns finding listeners. Signals nothing.

use std::collections::HashSet;

/// The socket inodes listening on `port` in one `/proc/net/tcp*` table.
fn listening_inodes(table: &str, port: u16) -> HashSet<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit_once(':')?.1;
            let listening = *fields.get(3)? == "0A";
            (listening && u16::from_str_radix(local_port, 16).ok()? == port)
                .then(|| fields.get(9)?.parse().ok())?
        })
        .filter(|inode| *inode != 0)
        .collect()
}

/// Processes holding one of `inodes` open.
fn holders(inodes: &HashSet<u64>) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for pid in entries.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok())) {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .ok()
                .and_then(|target| {
                    let text = target.to_string_lossy().into_owned();
                    text.strip_prefix("socket:[")?.strip_suffix(']')?.parse::<u64>().ok()
                })
                .is_some_and(|inode| inodes.contains(&inode))
        });
        if holds {
            found.push(pid);
        }
    }
    found.sort_unstable();
    found
}

/// The pids listening on TCP `port` (IPv4 or IPv6).
pub fn listeners(port: u16) -> Vec<i32> {
    let tables: Vec<String> =
        ["/proc/net/tcp", "/proc/net/tcp6"].iter().filter_map(|t| std::fs::read_to_string(t).ok()).collect();
    if tables.is_empty() {
        return lsof(port);
    }
    let inodes: HashSet<u64> = tables.iter().flat_map(|t| listening_inodes(t, port)).collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    holders(&inodes)
}

/// `lsof`'s answer, where there is no `/proc`.
fn lsof(port: u16) -> Vec<i32> {
    let Ok(mut lsof) = super::launch::probe("lsof") else { return Vec::new() };
    let output = lsof
        .args(["-nP", &format!("-iTCP:{port}"), "-sTCP:LISTEN", "-t"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(output) = output else { return Vec::new() };
    let mut pids: Vec<i32> =
        String::from_utf8_lossy(&output.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// A process's command line, for messages (empty when it cannot be read).
pub fn command_line(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|part| !part.is_empty())
                .map(|part| String::from_utf8_lossy(part).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_sockets_are_found_by_port_and_state() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
            0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0\n\
            1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 4343 1 0\n\
            2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0\n";
        assert_eq!(listening_inodes(table, 8080), HashSet::from([4242]));
        assert_eq!(listening_inodes(table, 22), HashSet::from([17]));
        assert!(listening_inodes(table, 9999).is_empty());
    }

    #[test]
    fn a_loopback_listener_of_this_process_is_found() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(listeners(port), vec![std::process::id() as i32]);
        drop(listener);
        assert!(listeners(port).is_empty());
        assert!(command_line(std::process::id() as i32).contains("tinycode"));
    }
}

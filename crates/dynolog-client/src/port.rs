//! Who listens on a TCP port of this host: whether a port is free for a
//! daemon of our own, and, when it is not (or when what answers there is not
//! dynolog), which process holds it, as Linux's `/proc` tells.

use std::{
    fs,
    net::{Ipv4Addr, Ipv6Addr, TcpListener},
};

use serde::Serialize;

use crate::ProcFs;
use crate::registry::Processes;

/// A process listening on a port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Holder {
    /// Its pid.
    pub pid: u32,
    /// Its command line (lossily decoded), empty when unreadable.
    pub command: String,
}

impl std::fmt::Display for Holder {
    /// `pid 1234 (dynolog --enable_ipc_monitor)`, or `pid 1234`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.command.is_empty() {
            true => write!(f, "pid {}", self.pid),
            false => write!(f, "pid {} ({})", self.pid, self.command),
        }
    }
}

/// Whether a daemon could listen on `port` as dynolog does (on every
/// address, IPv6 and IPv4): nothing listens there now.
pub fn port_is_free(port: u16) -> bool {
    // dynolog binds [::]:PORT (which takes IPv4 too); where IPv6 is off, it
    // cannot listen at all, but a v4 bind still tells whether the port is taken.
    let v6 = TcpListener::bind((Ipv6Addr::UNSPECIFIED, port));
    let v4 = TcpListener::bind((Ipv4Addr::UNSPECIFIED, port));
    match (v6, v4) {
        (Ok(_), _) => true,
        (Err(e), Ok(_)) => e.kind() != std::io::ErrorKind::AddrInUse,
        (Err(_), Err(_)) => false,
    }
}

/// The process that listens on TCP `port` of this host (on any address),
/// from `/proc/net/tcp{,6}` and the processes' open sockets; `None` when
/// none does, or it cannot be told (no `/proc`, another user's process and
/// not root, another network namespace).
pub fn listener_of(port: u16) -> Option<Holder> {
    let inodes: Vec<u64> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| fs::read_to_string(table).ok())
        .flat_map(|text| listening_inodes(&text, port))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = fs::read_dir(entry.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            let Ok(target) = fs::read_link(fd.path()) else { continue };
            if wanted.iter().any(|w| target.as_os_str() == w.as_str()) {
                let command = ProcFs.cmdline(pid).unwrap_or_default();
                return Some(Holder { pid, command });
            }
        }
    }
    None
}

/// The inodes of the sockets in LISTEN state (`0A`) on local port `port` in
/// a `/proc/net/tcp` table (`sl local_address rem_address st ... inode`).
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = fields.get(1)?;
            let state = fields.get(3)?;
            let inode = fields.get(9)?.parse().ok()?;
            let (_, hex) = local.rsplit_once(':')?;
            let local_port = u16::from_str_radix(hex, 16).ok()?;
            (local_port == port && *state == "0A").then_some(inode)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_sockets_are_read_from_the_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
                     0: 00000000:06F2 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0\n   \
                     1: 0100007F:06F2 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0\n";
        assert_eq!(listening_inodes(table, 1778), [4242]);
        assert!(listening_inodes(table, 1779).is_empty());
    }

    #[test]
    fn a_port_held_here_is_taken_and_its_holder_named() {
        let held = TcpListener::bind((Ipv6Addr::UNSPECIFIED, 0))
            .or_else(|_| TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)))
            .unwrap();
        let port = held.local_addr().unwrap().port();
        assert!(!port_is_free(port));
        let holder = listener_of(port).expect("this test's own listener");
        assert_eq!(holder.pid, std::process::id());
        drop(held);
        assert!(port_is_free(port));
        assert_eq!(listener_of(port), None);
    }
}

//! Connections the command's namespace refused on its own loopback, reported by name.
//!
//! A client that connects straight to a loopback port nothing listens on inside the command's
//! namespace (not one the list forwards, not one of its own servers) gets "connection refused"
//! from the kernel; the proxy is never asked. The Linux helper hands over raw TCP sockets of
//! that namespace filtered down to the kernel's answers to such connections (a RST with ACK
//! and sequence number 0, from the refused address and port); this records each refused
//! address and port once, as a refusal naming the allow pattern that would forward it.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use cordon_policies::loopback_forwards;
use nix::sys::socket::{SockaddrStorage, recvfrom};

use super::{ConnectionRecord, State};

/// The method such a refusal is recorded with.
const METHOD: &str = "DIRECT";
/// The most distinct refused targets recorded per watcher: a command that knocks on every
/// port grows the record by this much at most.
const MAX_REPORTED: usize = 256;

/// Reads `socket` (a raw socket the helper filtered) until the proxy stops.
pub(super) async fn watch(socket: OwnedFd, state: Arc<State>) {
    // The runtime must never block on it, whatever the helper set.
    let nonblocking = nix::fcntl::OFlag::O_NONBLOCK;
    if nix::fcntl::fcntl(&socket, nix::fcntl::FcntlArg::F_SETFL(nonblocking)).is_err() {
        return;
    }
    let Ok(socket) = crate::sys::watch_readable(socket) else { return };
    let forwarded = loopback_forwards(&state.rules).unwrap_or_default();
    let mut reported: HashSet<SocketAddr> = HashSet::new();
    let mut packet = [0u8; 128];
    while reported.len() < MAX_REPORTED {
        let Ok(mut ready) = socket.readable().await else { return };
        let received = ready.try_io(|inner| {
            recvfrom::<SockaddrStorage>(inner.as_raw_fd(), &mut packet).map_err(Into::into)
        });
        let (length, from) = match received {
            Ok(Ok(received)) => received,
            Ok(Err(_)) => return,
            Err(_would_block) => continue,
        };
        let Some(target) = refused_target(&packet[..length], from.as_ref()) else { continue };
        if target.ip().is_loopback() && !forwarded.contains(&target) && reported.insert(target) {
            record(&state, target);
        }
    }
}

/// The address and port a kernel's RST came from: the source address the socket reports, and
/// the TCP header's source port (after the IPv4 header, which IPv4 raw sockets include).
fn refused_target(packet: &[u8], from: Option<&SockaddrStorage>) -> Option<SocketAddr> {
    let from = from?;
    let (ip, tcp) = if let Some(v4) = from.as_sockaddr_in() {
        let header = usize::from(packet.first()? & 0x0f) * 4;
        (IpAddr::V4(v4.ip()), packet.get(header..)?)
    } else if let Some(v6) = from.as_sockaddr_in6() {
        (IpAddr::V6(v6.ip()), packet)
    } else {
        return None;
    };
    let port = u16::from_be_bytes([*tcp.first()?, *tcp.get(1)?]);
    Some(SocketAddr::new(ip, port))
}

fn record(state: &State, target: SocketAddr) {
    let host = target.ip().to_string();
    let port = target.port();
    state.record(ConnectionRecord {
        host,
        port,
        method: METHOD.to_owned(),
        allowed: false,
        rule: None,
        reason: Some(format!(
            "nothing listens on {target} in the command's network namespace, whose loopback is \
             its own: the connection was refused there; a server on this machine's loopback is \
             reached only when allowed with its port (--allow-domain 127.0.0.1:PORT), for a \
             service you mean the command to reach"
        )),
    });
}

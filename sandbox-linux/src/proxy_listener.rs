//! The command's way to cordon's proxy: a listening socket handed over, not a bridge.
//!
//! With a domain allow-list the command runs in a network namespace of its own with only
//! loopback up: it can reach nothing outside. Before it confines itself, the supervisor binds
//! `127.0.0.1:PORT` *inside* that namespace and sends the listening socket (`SCM_RIGHTS`) to
//! cordon's proxy, outside the sandbox, over the socketpair end it inherited (`--proxy-fd`). A
//! socketpair has no name: no other process, and no other sandboxed command, can connect to it
//! and hand the proxy a listener of its own. A socket belongs to the namespace it was created
//! in, not to the process holding it: the proxy accepts the command's connections from outside
//! and relays them — one hop, no process in between. The helper keeps no copy of the listener
//! (the command cannot accept on it) and closes its end of the socketpair once the proxy
//! answers, so nothing inside can reach the proxy but through the port. The proxy answers one
//! byte when it serves the listener; without that answer the helper fails closed (exit 125).
//! The command gets `HTTP_PROXY`/`HTTPS_PROXY` and `ALL_PROXY` pointing at the port.
//!
//! Each allowed loopback target of the domain list (`127.0.0.1:8080`, `localhost:8080`) gets a
//! listener of its own on that very address and port inside the namespace, handed over in the
//! same message: the proxy relays what arrives there to the host's loopback. They are bound
//! before the command exists, so the command cannot bind one of those ports first and play
//! the host's server to its own clients; the proxy's port is picked after them, so it never
//! takes one of theirs. The message also carries the raw sockets of [`crate::refusal_watch`],
//! through which the proxy learns of connections refused on the namespace's loopback.

use std::io::{IoSlice, Read};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use nix::sys::socket::{
    AddressFamily, Backlog, ControlMessage, MsgFlags, SockFlag, SockType, SockaddrIn,
    SockaddrStorage, bind, getsockname, getsockopt, listen, sendmsg, setsockopt, socket, sockopt,
};

use crate::error::HelperError;

/// Connections waiting for the proxy to accept them (a thousand clients connecting at once
/// would overflow the usual 128 and see their SYNs dropped and retried a second later).
const BACKLOG: i32 = 4096;
/// How long the proxy may take to confirm it serves the listener.
const HANDOVER_TIMEOUT: Duration = Duration::from_secs(30);

/// Binds a listener on each of `forwards` (the domain list's loopback targets) and then a
/// loopback port for the proxy in the current (new) network namespace, and hands them all to
/// the proxy over `channel`, this process's end of the proxy's socketpair, which it closes;
/// returns the proxy's port. Call in the supervisor, before Landlock and seccomp.
pub fn start(channel: OwnedFd, forwards: &[SocketAddr]) -> Result<u16, HelperError> {
    let error = |what| move |source| HelperError::NetworkNamespace { what, source };
    // A descriptor number from the command line: a stream socket, or nothing is handed over.
    match getsockopt(&channel, sockopt::SockType) {
        Ok(SockType::Stream) => {}
        Ok(_) => {
            let wrong = std::io::Error::from_raw_os_error(libc::EPROTOTYPE);
            return Err(error("the proxy's descriptor (--proxy-fd)")(wrong));
        }
        Err(errno) => return Err(error("the proxy's descriptor (--proxy-fd)")(errno.into())),
    }
    let mut control = UnixStream::from(channel);
    let forwarded = forwards
        .iter()
        .filter_map(|address| listen_on(*address).transpose())
        .collect::<Result<Vec<OwnedFd>, HelperError>>()?;
    let listener = socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)
        .map_err(std::io::Error::from)
        .map_err(error("creating the proxy's listening socket"))?;
    bind(listener.as_raw_fd(), &SockaddrIn::from(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)))
        .map_err(std::io::Error::from)
        .map_err(error("listening on loopback for the proxy"))?;
    let backlog = Backlog::new(BACKLOG).unwrap_or(Backlog::MAXCONN);
    listen(&listener, backlog)
        .map_err(std::io::Error::from)
        .map_err(error("listening on loopback for the proxy"))?;
    let port = getsockname::<SockaddrIn>(listener.as_raw_fd())
        .map_err(std::io::Error::from)
        .map_err(error("reading the proxy port"))?
        .port();
    // Where a client inside is refused on loopback, for the proxy to report.
    let watchers = crate::refusal_watch::open();
    // The proxy's listener first, then the forwarded ones and the watchers, in one message.
    let fds: Vec<RawFd> = std::iter::once(listener.as_raw_fd())
        .chain(forwarded.iter().map(AsRawFd::as_raw_fd))
        .chain(watchers.iter().map(AsRawFd::as_raw_fd))
        .collect();
    sendmsg::<()>(
        control.as_raw_fd(),
        &[IoSlice::new(b"L")],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )
    .map_err(std::io::Error::from)
    .map_err(error("handing the listening socket to the proxy"))?;
    // The proxy holds them now; the helper (and so the command) keeps no copy.
    drop(listener);
    drop(forwarded);
    drop(watchers);
    control.set_read_timeout(Some(HANDOVER_TIMEOUT)).map_err(error("waiting for the proxy"))?;
    let mut answer = [0u8; 1];
    control.read_exact(&mut answer).map_err(error("waiting for the proxy to take the listener"))?;
    drop(control);
    Ok(port)
}

/// A listening socket on `address` in the current network namespace, for a forwarded loopback
/// target; `None` for an IPv6 address where the namespace has no IPv6 (then no client inside
/// can reach that address either, and nobody can listen on it).
fn listen_on(address: SocketAddr) -> Result<Option<OwnedFd>, HelperError> {
    let error =
        |source: nix::Error| HelperError::LoopbackForward { address, source: source.into() };
    let family = match address {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    };
    let no_ipv6 = |errno: nix::Error| {
        address.is_ipv6() && matches!(errno, nix::Error::EAFNOSUPPORT | nix::Error::EADDRNOTAVAIL)
    };
    let socket = match socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None) {
        Ok(socket) => socket,
        Err(errno) if no_ipv6(errno) => return Ok(None),
        Err(errno) => return Err(error(errno)),
    };
    if address.is_ipv6() {
        // `[::1]:PORT` only, never the IPv4 side of a dual-stack socket.
        setsockopt(&socket, sockopt::Ipv6V6Only, &true).map_err(error)?;
    }
    match bind(socket.as_raw_fd(), &SockaddrStorage::from(address)) {
        Ok(()) => {}
        Err(errno) if no_ipv6(errno) => return Ok(None),
        Err(errno) => return Err(error(errno)),
    }
    let backlog = Backlog::new(BACKLOG).unwrap_or(Backlog::MAXCONN);
    listen(&socket, backlog).map_err(error)?;
    Ok(Some(socket))
}

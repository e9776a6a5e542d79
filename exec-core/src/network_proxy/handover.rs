//! The hand-over: the Linux helper binds the proxy's port in the command's network namespace
//! and sends the listening socket over its end of the proxy's socketpair; the proxy serves from
//! it. The same message carries a listener per forwarded loopback target ([`super::forward`])
//! and the raw sockets that see refused loopback connections ([`super::refusals`]).

use std::os::fd::AsRawFd;
use std::sync::Arc;

use cordon_policies::MAX_LOOPBACK_FORWARDS;
use nix::sys::socket::{ControlMessageOwned, MsgFlags, getsockopt, recvmsg, sockopt};
use tokio::net::{TcpListener, UnixStream};
use tokio::sync::Semaphore;

use super::{MAX_CONNECTIONS, State, forward, refusals, serve_clients};

/// The proxy's listener, the forwarded ones, and the raw sockets that see refused loopback
/// connections.
struct Listeners {
    proxy: TcpListener,
    forwarded: Vec<TcpListener>,
    watchers: Vec<std::os::fd::OwnedFd>,
}

/// Takes the listening socket the helper sends over `control`, answers one byte, closes
/// `control` and serves the command's connections from that listener. Only the helper holds
/// the other end, so there is nothing to wait for but its one message: anything else (end of
/// stream, no descriptor, not a listener) ends the task, and the helper, without its answer,
/// fails closed.
pub(super) async fn serve(control: UnixStream, state: Arc<State>) {
    let Listeners { proxy, forwarded, watchers } = match receive_listeners(&control, &state).await {
        Ok(listeners) => listeners,
        Err(error) => {
            tracing::debug!(%error, "no listening socket from the helper: the proxy stops");
            return;
        }
    };
    tracing::debug!("network proxy serves the command's port");
    if control.writable().await.is_ok() {
        let _ = control.try_write(b"K");
    }
    // From now on nothing reaches the proxy but through the command's ports.
    drop(control);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    // Dropped (and so stopped) with this task.
    let mut forwarders = tokio::task::JoinSet::new();
    for listener in forwarded {
        forwarders.spawn(forward::serve(listener, Arc::clone(&state), Arc::clone(&slots)));
    }
    for watcher in watchers {
        forwarders.spawn(refusals::watch(watcher, Arc::clone(&state)));
    }
    serve_clients(proxy, state, slots).await;
}

/// A received descriptor is close-on-exec from the start (no window for a concurrent spawn to
/// inherit it). Elsewhere the handover does not happen (the Linux helper makes it).
#[cfg(target_os = "linux")]
const RECEIVE_FLAGS: MsgFlags = MsgFlags::MSG_CMSG_CLOEXEC;
#[cfg(not(target_os = "linux"))]
const RECEIVE_FLAGS: MsgFlags = MsgFlags::empty();

/// The sockets sent over `stream` with `SCM_RIGHTS`: the proxy's listener first, then the
/// forwarded loopback targets' listeners and the raw watchers. No descriptor, or a first one that is not a listening
/// socket, is an error; of the later ones, up to two raw sockets are the watchers, and one
/// that is not a listener on a loopback target the list forwards is closed, as is anything
/// beyond what the helper sends.
async fn receive_listeners(stream: &UnixStream, state: &State) -> std::io::Result<Listeners> {
    let invalid = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_owned());
    loop {
        stream.readable().await?;
        let received = stream.try_io(tokio::io::Interest::READABLE, || {
            let mut byte = [0u8; 1];
            let mut iov = [std::io::IoSliceMut::new(&mut byte)];
            let mut space = nix::cmsg_space!([std::os::fd::RawFd; MAX_LOOPBACK_FORWARDS + 3]);
            let message =
                recvmsg::<()>(stream.as_raw_fd(), &mut iov, Some(&mut space), RECEIVE_FLAGS)
                    .map_err(std::io::Error::from)?;
            let mut fds = Vec::new();
            for cmsg in message.cmsgs().map_err(std::io::Error::from)? {
                if let ControlMessageOwned::ScmRights(received) = cmsg {
                    // SAFETY: each number was installed in this process by the `recvmsg`
                    // above, for this message, and is adopted here once.
                    fds.extend(
                        received.into_iter().map(|fd| unsafe { crate::sys::adopt_received_fd(fd) }),
                    );
                }
            }
            Ok(fds)
        });
        let fds = match received {
            Ok(fds) => fds,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(error) => return Err(error),
        };
        let mut fds = fds.into_iter();
        let fd = fds.next().ok_or_else(|| invalid("no descriptor"))?;
        let proxy = as_listener(fd).ok_or_else(|| invalid("not a listening socket"))?;
        let (raw, rest): (Vec<_>, Vec<_>) = fds.partition(|fd| {
            matches!(getsockopt(fd, sockopt::SockType), Ok(nix::sys::socket::SockType::Raw))
        });
        let watchers = raw.into_iter().take(2).collect();
        let forwarded = rest
            .into_iter()
            .filter_map(as_listener)
            .filter(|listener| forward::is_allowed_forward(state, listener))
            .map(|listener| {
                listener.set_nonblocking(true)?;
                TcpListener::from_std(listener)
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        proxy.set_nonblocking(true)?;
        let proxy = TcpListener::from_std(proxy)?;
        return Ok(Listeners { proxy, forwarded, watchers });
    }
}

/// `fd` as a listening socket, or `None` (and closed).
fn as_listener(fd: std::os::fd::OwnedFd) -> Option<std::net::TcpListener> {
    getsockopt(&fd, sockopt::AcceptConn).unwrap_or(false).then(|| std::net::TcpListener::from(fd))
}

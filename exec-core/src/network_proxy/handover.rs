//! The hand-over: the Linux helper binds the proxy's port in the command's network namespace
//! and sends the listening socket over its end of the proxy's socketpair; the proxy serves from
//! it.

use std::os::fd::AsRawFd;
use std::sync::Arc;

use nix::sys::socket::{ControlMessageOwned, MsgFlags, getsockopt, recvmsg, sockopt};
use tokio::net::{TcpListener, UnixStream};

use super::{State, serve_clients};

/// Takes the listening socket the helper sends over `control`, answers one byte, closes
/// `control` and serves the command's connections from that listener. Only the helper holds
/// the other end, so there is nothing to wait for but its one message: anything else (end of
/// stream, no descriptor, not a listener) ends the task, and the helper, without its answer,
/// fails closed.
pub(super) async fn serve(control: UnixStream, state: Arc<State>) {
    let listener = match receive_listener(&control).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::debug!(%error, "no listening socket from the helper: the proxy stops");
            return;
        }
    };
    tracing::debug!("network proxy serves the command's port");
    if control.writable().await.is_ok() {
        let _ = control.try_write(b"K");
    }
    // From now on nothing reaches the proxy but through the command's port.
    drop(control);
    serve_clients(listener, state).await;
}

/// A received descriptor is close-on-exec from the start (no window for a concurrent spawn to
/// inherit it). Elsewhere the handover does not happen (the Linux helper makes it).
#[cfg(target_os = "linux")]
const RECEIVE_FLAGS: MsgFlags = MsgFlags::MSG_CMSG_CLOEXEC;
#[cfg(not(target_os = "linux"))]
const RECEIVE_FLAGS: MsgFlags = MsgFlags::empty();

/// The listening TCP socket sent over `stream` with `SCM_RIGHTS`. Anything else (no
/// descriptor, a descriptor that is not a listening socket) is an error; extra descriptors
/// are closed.
async fn receive_listener(stream: &UnixStream) -> std::io::Result<TcpListener> {
    let invalid = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_owned());
    loop {
        stream.readable().await?;
        let received = stream.try_io(tokio::io::Interest::READABLE, || {
            let mut byte = [0u8; 1];
            let mut iov = [std::io::IoSliceMut::new(&mut byte)];
            let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
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
        let fd = fds.into_iter().next().ok_or_else(|| invalid("no descriptor"))?;
        if !getsockopt(&fd, sockopt::AcceptConn).unwrap_or(false) {
            return Err(invalid("not a listening socket"));
        }
        let listener = std::net::TcpListener::from(fd);
        listener.set_nonblocking(true)?;
        return TcpListener::from_std(listener);
    }
}

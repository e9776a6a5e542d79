//! Tunnel bytes between two TCP sockets without copying them through the proxy (Linux).
//!
//! A tunnel's bytes go `socket -> pipe -> socket` with `splice(2)`: the kernel moves page
//! references, the proxy never reads a byte. On loopback — where the command, the proxy and the
//! server share the CPUs, so every copy costs throughput — this keeps the proxy as fast as a bare
//! splice relay without any policy (`bench/proxy.py`'s floor row). The sockets stay non-blocking
//! and tokio's readiness says when to splice, so a tunnel holds no thread, only two pipes.
//!
//! Pipes are small until asked ([`PIPE_SIZE`]); once the user's pipe allowance is used up
//! (`/proc/sys/fs/pipe-user-pages-soft`, e.g. a thousand open tunnels) the kernel refuses to
//! grow them and the tunnel goes on with a default pipe: slower, never wrong. When no pipe can
//! be made at all (no descriptors left), the caller copies instead.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl, splice};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// Bytes a tunnel's pipe holds, each way: on loopback the default 64 KiB gains nothing over
/// copying, and 1 MiB gains no more than this (`bench/proxy.py`).
const PIPE_SIZE: i32 = 256 * 1024;

/// The two pipes of a tunnel, one per direction.
pub(super) struct Pipes {
    pub up: (OwnedFd, OwnedFd),
    pub down: (OwnedFd, OwnedFd),
}

impl Pipes {
    /// Both pipes, or `None` when they cannot be made (descriptors exhausted).
    pub(super) fn new() -> Option<Pipes> {
        Some(Pipes { up: pipe()?, down: pipe()? })
    }
}

fn pipe() -> Option<(OwnedFd, OwnedFd)> {
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).ok()?;
    // Best effort: beyond the user's pipe allowance the default size stays.
    let _ = fcntl(&write, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
    Some((read, write))
}

/// One direction: `from` -> pipe -> `to`, until `from` reaches end of file (which is passed
/// on: the other direction may still run); `moved` is told each time bytes went through.
pub(super) async fn pump(
    from: &TcpStream,
    to: &TcpStream,
    pipe: &(OwnedFd, OwnedFd),
    moved: &(dyn Fn() + Sync),
) -> io::Result<()> {
    let (pipe_read, pipe_write) = pipe;
    // SPLICE_F_NONBLOCK makes the pipe end non-blocking; the sockets already are (tokio), so a
    // splice that cannot go on returns EAGAIN and the task waits for readiness instead.
    let flags = SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK;
    loop {
        let mut held = loop {
            from.readable().await?;
            match from.try_io(Interest::READABLE, || {
                splice(from.as_fd(), None, pipe_write, None, PIPE_SIZE as usize, flags)
                    .map_err(io::Error::from)
            }) {
                Ok(moved) => break moved,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                Err(error) => return Err(error),
            }
        };
        if held == 0 {
            // End of file from `from`: pass it on, the other direction may still run.
            return super::relay::shutdown_write(to);
        }
        while held > 0 {
            to.writable().await?;
            match to.try_io(Interest::WRITABLE, || {
                splice(pipe_read, None, to.as_fd(), None, held, flags).map_err(io::Error::from)
            }) {
                Ok(sent) => {
                    held -= sent;
                    moved();
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                Err(error) => return Err(error),
            }
        }
    }
}

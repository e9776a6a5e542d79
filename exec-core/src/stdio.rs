//! A server's own stdin and stdout as async streams that need no thread.
//!
//! `tokio::io::stdin()`/`stdout()` read and write on tokio's blocking pool: the first read
//! starts a thread that stays for as long as the server reads. A process with a second thread
//! cannot fork a child that runs cordon's helper in place of exec'ing it (the child of a
//! threaded process may not allocate), so every sandboxed command of such a server would pay
//! for one more `execve` of cordon. When stdin or stdout is a pipe — as it is for an agent harness
//! that spawns `cordon executor` — it is reopened through `/proc/self/fd/N`, which gives this
//! process a description of the pipe of its own, made non-blocking and driven by the runtime's
//! epoll like any socket; the caller's description of the same pipe stays blocking. Reopening
//! takes permission on the pipe, which its creator's user has (a harness of the same user);
//! a pipe another user made (`EACCES`), anything that is not a pipe (a terminal, a file, a
//! socket), and every other system keep tokio's streams — and the exec'd helper.

use tokio::io::{AsyncRead, AsyncWrite};

/// This process's stdin.
pub fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    #[cfg(target_os = "linux")]
    if let Some(pipe) =
        reopened_pipe(std::os::fd::AsFd::as_fd(&std::io::stdin()), nix::fcntl::OFlag::O_RDONLY)
            .and_then(|file| tokio::net::unix::pipe::Receiver::from_file(file).ok())
    {
        tracing::debug!("stdin is a pipe: read without a thread");
        return Box::new(pipe);
    }
    tracing::debug!("stdin is read on a thread of tokio's (not a pipe cordon can reopen)");
    Box::new(tokio::io::stdin())
}

/// This process's stdout.
pub fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    #[cfg(target_os = "linux")]
    if let Some(pipe) =
        reopened_pipe(std::os::fd::AsFd::as_fd(&std::io::stdout()), nix::fcntl::OFlag::O_WRONLY)
            .and_then(|file| tokio::net::unix::pipe::Sender::from_file(file).ok())
    {
        tracing::debug!("stdout is a pipe: written without a thread");
        return Box::new(pipe);
    }
    tracing::debug!("stdout is written on a thread of tokio's (not a pipe cordon can reopen)");
    Box::new(tokio::io::stdout())
}

/// `fd` opened again as a new, non-blocking description, when it is a pipe. A write end
/// whose reader has gone cannot be reopened (`ENXIO`): then tokio's stream reports the
/// closed pipe as before.
#[cfg(target_os = "linux")]
fn reopened_pipe(
    fd: std::os::fd::BorrowedFd<'_>,
    access: nix::fcntl::OFlag,
) -> Option<std::fs::File> {
    use nix::fcntl::OFlag;
    use nix::sys::stat::{Mode, SFlag};
    use std::os::fd::AsRawFd;
    let stat = nix::sys::stat::fstat(fd).ok()?;
    if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT != SFlag::S_IFIFO {
        return None;
    }
    let flags = access | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let reopened = nix::fcntl::open(
        format!("/proc/self/fd/{}", fd.as_raw_fd()).as_str(),
        flags,
        Mode::empty(),
    );
    reopened.ok().map(std::fs::File::from)
}

//! A tunnel's bytes, both ways, once the proxy has admitted it.
//!
//! The upstream's bytes flow from the start (some servers speak first); the client's first
//! bytes are held until they pass the TLS check ([`sni`]): a ClientHello naming another server
//! than the host the tunnel was admitted for is answered with a TLS alert and goes nowhere.
//! Then bytes move spliced where the kernel can ([`splice`]), else copied, until both sides
//! have closed, either fails, or nothing moved either way for [`TUNNEL_IDLE`].

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cordon_policies::normalize_host;
use nix::sys::socket::{Shutdown, shutdown};
use tokio::net::TcpStream;

use super::HANDSHAKE_TIMEOUT;
use super::sni::{self, FirstFlight};
#[cfg(target_os = "linux")]
use super::splice;

/// Bytes copied per read in a tunnel, each way, where it copies.
const RELAY_BUFFER: usize = 64 * 1024;
/// A tunnel in which nothing moved either way for this long is closed.
pub(super) const TUNNEL_IDLE: Duration = Duration::from_secs(15 * 60);
/// A fatal TLS alert, `access_denied`, in a TLS 1.2 record (what TLS 1.3 clients read too).
const ACCESS_DENIED_ALERT: [u8; 7] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49];

/// What the client's first bytes are checked against.
pub(super) struct FirstBytes<'a> {
    /// What the client sent after its request and the proxy already read (hyper's buffer).
    pub carried: Vec<u8>,
    /// The host the tunnel was admitted for, normalized, which a ClientHello must name; `None`
    /// for a forwarded loopback port, whose destination no name chose (nothing to check).
    pub host: Option<&'a str>,
}

/// Why a tunnel's first bytes went nowhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refused {
    /// The ClientHello names another server (as sent).
    OtherName(String),
    /// A TLS handshake that cannot be read.
    Unreadable(&'static str),
}

/// How one direction ended early.
enum Stop {
    Io,
    Refused(Refused),
}

impl From<io::Error> for Stop {
    fn from(_: io::Error) -> Self {
        Stop::Io
    }
}

/// Bytes both ways between an admitted client and its upstream, both plain TCP sockets; the
/// refusal when the client's first bytes named another server.
pub(super) async fn relay_tcp(
    client: TcpStream,
    upstream: TcpStream,
    first: FirstBytes<'_>,
) -> Option<Refused> {
    let activity = Activity::new();
    #[cfg(target_os = "linux")]
    let pipes = splice::Pipes::new();
    #[cfg(target_os = "linux")]
    let (pipe_up, pipe_down) = (pipes.as_ref().map(|p| &p.up), pipes.as_ref().map(|p| &p.down));
    #[cfg(not(target_os = "linux"))]
    let (pipe_up, pipe_down) = (None, None);
    let up = async {
        let held = first_flight(&client, first).await?;
        write_all(&upstream, &held).await?;
        activity.touch();
        pump(&client, &upstream, pipe_up, &activity).await.map_err(Stop::from)
    };
    let down = async { pump(&upstream, &client, pipe_down, &activity).await.map_err(Stop::from) };
    tokio::select! {
        ended = async { tokio::try_join!(up, down) } => match ended {
            Err(Stop::Refused(refused)) => Some(refused),
            Ok(_) | Err(Stop::Io) => None,
        },
        () = activity.idle(TUNNEL_IDLE) => None,
    }
}

/// The client's first bytes once they passed the TLS check; a refusal (after a TLS alert to
/// the client) when they name another server. A TLS handshake must be whole within
/// [`HANDSHAKE_TIMEOUT`] of its first byte; before any byte, the tunnel's idle limit applies.
async fn first_flight(client: &TcpStream, first: FirstBytes<'_>) -> Result<Vec<u8>, Stop> {
    let FirstBytes { carried: mut bytes, host } = first;
    let Some(host) = host else { return Ok(bytes) };
    let mut chunk = vec![0u8; 4 * 1024];
    let mut deadline = None;
    loop {
        let refused = match sni::read(&bytes) {
            FirstFlight::NotTls | FirstFlight::NoName => return Ok(bytes),
            FirstFlight::Name(name) if normalize_host(&name) == host => return Ok(bytes),
            FirstFlight::Name(name) => Refused::OtherName(name),
            FirstFlight::Unreadable(why) => Refused::Unreadable(why),
            FirstFlight::NeedMore => {
                let read = read_some(client, &mut chunk);
                let read = match deadline {
                    None => read.await?,
                    Some(deadline) => {
                        tokio::time::timeout_at(deadline, read).await.map_err(|_| {
                            Stop::Refused(Refused::Unreadable("an unfinished ClientHello"))
                        })??
                    }
                };
                if read == 0 {
                    // The client closed: what it sent (nothing, or a cut handshake) goes nowhere.
                    return if bytes.is_empty() { Ok(bytes) } else { Err(Stop::Io) };
                }
                bytes.extend_from_slice(&chunk[..read]);
                deadline.get_or_insert_with(|| tokio::time::Instant::now() + HANDSHAKE_TIMEOUT);
                continue;
            }
        };
        let _ = write_all(client, &ACCESS_DENIED_ALERT).await;
        return Err(Stop::Refused(refused));
    }
}

/// One read from `from` (0 at end of file).
async fn read_some(from: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        from.readable().await?;
        match from.try_read(buf) {
            Ok(n) => return Ok(n),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(error),
        }
    }
}

async fn write_all(to: &TcpStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        to.writable().await?;
        match to.try_write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// One direction, spliced through `pipe` when there is one, else copied.
async fn pump(
    from: &TcpStream,
    to: &TcpStream,
    pipe: Option<&(OwnedFd, OwnedFd)>,
    activity: &Activity,
) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if let Some(pipe) = pipe {
        return splice::pump(from, to, pipe, &|| activity.touch()).await;
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pipe;
    copy(from, to, activity).await
}

/// One direction, copied: `from` -> `to` until `from` reaches end of file, which is passed on.
async fn copy(from: &TcpStream, to: &TcpStream, activity: &Activity) -> io::Result<()> {
    let mut buf = vec![0u8; RELAY_BUFFER];
    loop {
        let read = read_some(from, &mut buf).await?;
        if read == 0 {
            return shutdown_write(to);
        }
        write_all(to, &buf[..read]).await?;
        activity.touch();
    }
}

/// End of file to `stream`'s peer; the other direction may still run.
pub(super) fn shutdown_write(stream: &TcpStream) -> io::Result<()> {
    match shutdown(stream.as_raw_fd(), Shutdown::Write) {
        // The peer may have gone already; nothing is lost by that.
        Ok(()) | Err(nix::errno::Errno::ENOTCONN) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}

/// When bytes last moved in a tunnel, either way.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity { start: Instant::now(), last_ms: AtomicU64::new(0) }
    }

    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// Completes once nothing moved for `limit`.
    async fn idle(&self, limit: Duration) {
        loop {
            let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let quiet = self.start.elapsed().saturating_sub(last);
            if quiet >= limit {
                return;
            }
            tokio::time::sleep(limit - quiet).await;
        }
    }
}

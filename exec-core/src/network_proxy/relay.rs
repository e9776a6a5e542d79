//! A tunnel's bytes, both ways, once the proxy has admitted it.

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

#[cfg(target_os = "linux")]
use super::splice;

/// Bytes copied per read in a tunnel, each way, where it copies.
const RELAY_BUFFER: usize = 64 * 1024;

/// Bytes both ways between an admitted client and its upstream, both plain TCP sockets:
/// spliced where the kernel can ([`splice`]), else copied.
pub(super) async fn relay_tcp(mut client: TcpStream, mut upstream: TcpStream) {
    #[cfg(target_os = "linux")]
    if let Some(pipes) = splice::Pipes::new() {
        return splice::relay(&client, &upstream, pipes).await;
    }
    relay(&mut client, &mut upstream).await;
}

/// Bytes both ways between an admitted client and its upstream until either side closes.
pub(super) async fn relay(
    client: &mut (impl AsyncRead + AsyncWrite + Unpin),
    upstream: &mut (impl AsyncRead + AsyncWrite + Unpin),
) {
    let _ = tokio::io::copy_bidirectional_with_sizes(client, upstream, RELAY_BUFFER, RELAY_BUFFER)
        .await;
}

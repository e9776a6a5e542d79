//! Forwarded loopback targets: what the command sends to an allowed loopback address and port
//! in its own namespace reaches the host's.
//!
//! The helper binds a listener on each loopback target the allow-list names (`127.0.0.1:8080`,
//! `[::1]:8080`, both for `localhost:8080`) inside the command's network namespace, before the
//! command exists, and hands it over with the proxy's own. Each connection accepted there is
//! admitted like any other ([`State::open`]: the lists, a call's narrower list, recorded) and
//! relayed to the same address and port on the host, or for `localhost` to the host's
//! `localhost`. A refused one is reset at once. Nothing is read from the client first: the
//! destination is the port itself, not a name the client sends.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use cordon_policies::{LOOPBACK_NAME, loopback_forwards};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::relay::{FirstBytes, relay_tcp};
use super::{Destination, State};

/// The method a forwarded connection is recorded with.
pub(super) const METHOD: &str = "FORWARD";

/// Whether a listener the helper handed over is one the allow-list forwards: a listening
/// socket on an allowed loopback address and port. Any other is not served (closed), so what
/// the command can reach on loopback is what the list names, whatever was handed over.
pub(super) fn is_allowed_forward(state: &State, listener: &std::net::TcpListener) -> bool {
    let Ok(address) = listener.local_addr() else { return false };
    address.ip().is_loopback()
        && loopback_forwards(&state.rules).is_ok_and(|forwards| forwards.contains(&address))
}

/// Serves one forwarded target until the proxy stops, at most the proxy's connection limit at
/// once (shared with the proxy's port).
pub(super) async fn serve(listener: TcpListener, state: Arc<State>, slots: Arc<Semaphore>) {
    let Ok(inside) = listener.local_addr() else { return };
    tracing::debug!(%inside, "network proxy forwards a loopback target");
    super::accept_each(listener, slots, move |stream| {
        let state = Arc::clone(&state);
        async move { forward(stream, inside, &state).await }
    })
    .await;
}

/// One connection to `inside`: admitted, recorded, relayed; refused, reset.
async fn forward(client: TcpStream, inside: SocketAddr, state: &State) {
    let _ = client.set_nodelay(true);
    let host = destination_name(state, inside);
    let destination = Destination { host: &host, port: inside.port(), method: METHOD };
    match state.open(destination).await {
        Ok(upstream) => {
            let first = FirstBytes { carried: Vec::new(), host: None };
            let _ = relay_tcp(client, upstream, first).await;
        }
        Err(_) => {
            // A reset, not an empty answer: the client reports "connection reset", at once.
            let _ = client.set_zero_linger();
        }
    }
}

/// The name a connection to `inside` is admitted under: its address, unless only `localhost`
/// allows it (`localhost:PORT` listens on `127.0.0.1` and `::1`).
fn destination_name(state: &State, inside: SocketAddr) -> String {
    let address = inside.ip().to_string();
    let is_localhost = matches!(inside.ip(), IpAddr::V4(v4) if v4 == Ipv4Addr::LOCALHOST)
        || matches!(inside.ip(), IpAddr::V6(v6) if v6 == Ipv6Addr::LOCALHOST);
    if is_localhost
        && state.check_lists(&address, inside.port()).is_err()
        && state.check_lists(LOOPBACK_NAME, inside.port()).is_ok()
    {
        return LOOPBACK_NAME.to_owned();
    }
    address
}

//! The SOCKS5 front end (RFC 1928, `fast-socks5`): for TCP that is not HTTP. No
//! authentication (the socket is reachable only from the command's sandbox), `CONNECT` only;
//! the destination goes through the same list, resolution and checks as a `CONNECT` over HTTP.
//! `ALL_PROXY=socks5h://…` makes clients send host names, so the proxy resolves them.

use std::net::SocketAddr;
use std::sync::Arc;

use cordon_policies::normalize_host;
use fast_socks5::server::Socks5ServerProtocol;
use fast_socks5::util::target_addr::TargetAddr;
use fast_socks5::{ReplyError, Socks5Command};
use hyper::StatusCode;
use tokio::net::TcpStream;

use super::relay::{FirstBytes, relay_tcp};
use super::{Destination, HANDSHAKE_TIMEOUT, State};

/// The method recorded for a SOCKS5 connection.
const METHOD: &str = "SOCKS5";

pub(super) async fn serve(stream: TcpStream, state: Arc<State>) {
    let handshake = async {
        let protocol = Socks5ServerProtocol::accept_no_auth(stream).await.ok()?;
        protocol.read_command().await.ok()
    };
    let Ok(Some((protocol, command, target))) =
        tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await
    else {
        return;
    };
    let (host, port) = match target {
        TargetAddr::Ip(SocketAddr::V4(v4)) => (v4.ip().to_string(), v4.port()),
        TargetAddr::Ip(SocketAddr::V6(v6)) => (v6.ip().to_string(), v6.port()),
        TargetAddr::Domain(name, port) => (normalize_host(&name), port),
    };
    let destination = Destination { host: &host, port, method: METHOD };
    if command != Socks5Command::TCPConnect {
        // BIND and UDP ASSOCIATE would open the network beyond one checked TCP connection.
        let refusal = super::Refusal {
            status: StatusCode::FORBIDDEN,
            rule: None,
            reason: format!("SOCKS5 {command:?} is not supported, only CONNECT"),
        };
        refusal.record(&state, destination);
        let _ = protocol.reply_error(&ReplyError::CommandNotSupported).await;
        return;
    }
    match state.open(destination).await {
        Ok(upstream) => {
            let bound =
                upstream.local_addr().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
            if let Ok(client) = protocol.reply_success(bound).await {
                let first = FirstBytes { carried: Vec::new(), host: Some(&host) };
                if let Some(refused) = relay_tcp(client, upstream, first).await {
                    state.refuse_first_bytes(&refused, destination);
                }
            }
        }
        Err((refusal, _)) => {
            // SOCKS5 replies carry a code, no text: "not allowed by ruleset" for the list,
            // "host unreachable" for an allowed destination that could not be reached.
            let code = if refusal.status == StatusCode::FORBIDDEN {
                ReplyError::ConnectionNotAllowed
            } else {
                ReplyError::HostUnreachable
            };
            let _ = protocol.reply_error(&code).await;
        }
    }
}

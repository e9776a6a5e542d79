//! The HTTP front end: `CONNECT host:port` and absolute-form plain-HTTP requests (hyper).

use std::convert::Infallible;
use std::sync::Arc;

use cordon_policies::normalize_host;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;

use super::relay::{FirstBytes, relay_tcp};
use super::{Destination, HANDSHAKE_TIMEOUT, MAX_HEADER_BYTES, Refusal, State};

type ProxyBody = BoxBody<Bytes, hyper::Error>;

fn text_response(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut response =
        Response::new(Full::new(Bytes::from(body)).map_err(|never| match never {}).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A CONNECT's tunnel, run by the connection's own task once hyper hands the connection over.
type Tunnel = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Serves one client connection as HTTP/1.1. A CONNECT's tunnel runs here, inside this
/// connection's task, so stopping the proxy stops every tunnel too.
pub(super) async fn serve(stream: TcpStream, state: Arc<State>) {
    let (tunnels, mut tunnel) = tokio::sync::mpsc::unbounded_channel::<Tunnel>();
    let service = hyper::service::service_fn(move |request| {
        handle(request, Arc::clone(&state), tunnels.clone())
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        // Also how long a kept-alive connection may wait for its next request.
        .header_read_timeout(HANDSHAKE_TIMEOUT)
        .max_header_size(MAX_HEADER_BYTES)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if let Ok(tunnel) = tunnel.try_recv() {
        tunnel.await;
    }
}

async fn handle(
    request: Request<Incoming>,
    state: Arc<State>,
    tunnels: tokio::sync::mpsc::UnboundedSender<Tunnel>,
) -> Result<Response<ProxyBody>, Infallible> {
    let method = request.method().to_string();
    let (host, port) = match destination(&request) {
        Ok(target) => target,
        Err(unroutable) => {
            let line = unroutable.record(&state, &method);
            return Ok(text_response(StatusCode::BAD_REQUEST, line));
        }
    };
    let upstream = match state.open(Destination { host: &host, port, method: &method }).await {
        Ok(upstream) => upstream,
        Err((refusal, line)) => return Ok(text_response(refusal.status, line)),
    };
    if request.method() == Method::CONNECT {
        // The receiver lives until the connection ends; a send cannot fail before then.
        let _ = tunnels.send(Box::pin(tunnel(request, upstream, state, (host, port))));
        Ok(Response::new(Full::new(Bytes::new()).map_err(|never| match never {}).boxed()))
    } else {
        Ok(forward(request, upstream).await.unwrap_or_else(|error| {
            text_response(
                StatusCode::BAD_GATEWAY,
                format!("cordon proxy: {host}:{port}: upstream error: {error}\n"),
            )
        }))
    }
}

/// Why a request names no one destination.
#[derive(Debug, PartialEq, Eq)]
enum Unroutable {
    /// Neither CONNECT, nor an `http://` URL, nor an origin-form request.
    NotProxyForm,
    /// Not exactly one Host header (`target`: what the request line names, if anything;
    /// `named`: the Host headers' values that are text).
    HostCount { named: Vec<String>, target: Option<(String, u16)> },
    /// A Host header that cannot be read as `host[:port]`.
    BadHost { target: Option<(String, u16)> },
    /// An absolute-form request whose Host names another server than its URL.
    OtherHost { host: (String, u16), target: (String, u16) },
}

impl Unroutable {
    /// Records the refusal (when it concerns a destination) and returns the line the client
    /// is told: the host and port, and what to send instead.
    fn record(&self, state: &State, method: &str) -> String {
        let (destination, reason) = match self {
            Unroutable::NotProxyForm => {
                return "cordon proxy: expected CONNECT host:port or an absolute http:// URL\n"
                    .to_owned();
            }
            Unroutable::HostCount { named, target: Some(target) } => (
                target.clone(),
                format!(
                    "the request has {} Host headers{}; send exactly one, naming {}:{}",
                    named.len(),
                    listed(named),
                    target.0,
                    target.1
                ),
            ),
            Unroutable::HostCount { named, target: None } => {
                return format!(
                    "cordon proxy: a request with {} Host headers{} names no one destination; \
                     send exactly one Host header (host[:port])\n",
                    named.len(),
                    listed(named)
                );
            }
            Unroutable::BadHost { target: Some(target) } => (
                target.clone(),
                format!("its Host header is not host[:port]; send Host: {}:{}", target.0, target.1),
            ),
            Unroutable::BadHost { target: None } => {
                return "cordon proxy: the Host header is not host[:port]\n".to_owned();
            }
            Unroutable::OtherHost { host, target } => (
                host.clone(),
                format!(
                    "the request was sent for {}:{} with a Host header naming {}:{}: a request \
                     names one server; send it to http://{}:{}/ if that host is allowed",
                    target.0, target.1, host.0, host.1, host.0, host.1
                ),
            ),
        };
        let refusal = Refusal { status: StatusCode::BAD_REQUEST, rule: None, reason };
        let (host, port) = destination;
        refusal.record(state, Destination { host: &host, port, method })
    }
}

/// ` (a, b)` for the Host values `a` and `b`; nothing for none.
fn listed(named: &[String]) -> String {
    if named.is_empty() { String::new() } else { format!(" ({})", named.join(", ")) }
}

/// `host, port` from `CONNECT host:port`, an absolute `http://` URI (whose one Host header must
/// name the same server), or the one Host header of an origin-form request.
fn destination(request: &Request<Incoming>) -> Result<(String, u16), Unroutable> {
    let authority = |a: &hyper::http::uri::Authority, default: u16| {
        (normalize_host(a.host()), a.port_u16().unwrap_or(default))
    };
    if request.method() == Method::CONNECT {
        let target = request.uri().authority().ok_or(Unroutable::NotProxyForm)?;
        return match target.port_u16() {
            Some(port) => Ok((normalize_host(target.host()), port)),
            None => Err(Unroutable::NotProxyForm),
        };
    }
    let target = match request.uri().scheme_str() {
        Some("http") => {
            Some(authority(request.uri().authority().ok_or(Unroutable::NotProxyForm)?, 80))
        }
        Some(_) => return Err(Unroutable::NotProxyForm),
        None => None,
    };
    let hosts: Vec<_> = request.headers().get_all(hyper::header::HOST).iter().collect();
    let [host] = hosts[..] else {
        let named = hosts.iter().filter_map(|h| h.to_str().ok()).map(str::to_owned).collect();
        return Err(Unroutable::HostCount { named, target });
    };
    let host = host
        .to_str()
        .ok()
        // `user@host` is no Host header: a server may read it differently from the proxy.
        .filter(|h| !h.contains('@'))
        .and_then(|h| h.parse::<hyper::http::uri::Authority>().ok())
        .map(|a| authority(&a, 80))
        .ok_or_else(|| Unroutable::BadHost { target: target.clone() })?;
    match target {
        Some(target) if target != host => Err(Unroutable::OtherHost { host, target }),
        Some(target) => Ok(target),
        None => Ok(host),
    }
}

/// After `200` to a CONNECT: bytes both ways until either side closes. The client's socket is
/// taken back from hyper (no per-read indirection), with what hyper had already read past the
/// request; its first bytes must not name another TLS server than `host`.
async fn tunnel(
    request: Request<Incoming>,
    upstream: TcpStream,
    state: Arc<State>,
    (host, port): (String, u16),
) {
    let Ok(upgraded) = hyper::upgrade::on(request).await else { return };
    // hyper serves this connection on a plain TCP socket: any other transport would be a
    // tunnel whose first bytes cannot be checked, so it is not relayed.
    let Ok(parts) = upgraded.downcast::<TokioIo<TcpStream>>() else { return };
    let client = parts.io.into_inner();
    let first = FirstBytes { carried: parts.read_buf.to_vec(), host: Some(&host) };
    if let Some(refused) = relay_tcp(client, upstream, first).await {
        state.refuse_first_bytes(&refused, Destination { host: &host, port, method: "CONNECT" });
    }
}

/// Sends a plain-HTTP request upstream in origin form, without the proxy's own headers.
async fn forward(
    mut request: Request<Incoming>,
    upstream: TcpStream,
) -> Result<Response<ProxyBody>, hyper::Error> {
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    if let Ok(uri) = path.parse() {
        *request.uri_mut() = uri;
    }
    let headers = request.headers_mut();
    headers.remove("proxy-connection");
    headers.remove(hyper::header::PROXY_AUTHORIZATION);
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await?;
    tokio::spawn(connection);
    let response = sender.send_request(request).await?;
    Ok(response.map(BodyExt::boxed))
}

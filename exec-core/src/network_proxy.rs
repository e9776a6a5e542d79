//! The network allow-list proxy (issue 19): what a command with a domain allow-list reaches the
//! outside through.
//!
//! The command runs in a network namespace with only loopback; the Linux helper bridges
//! `127.0.0.1:PORT` inside it to this proxy's UNIX socket, and points `HTTP_PROXY`,
//! `HTTPS_PROXY` and `ALL_PROXY` at it. The proxy speaks HTTP/1.1 (hyper): `CONNECT host:port`
//! for HTTPS and anything tunnelled, and absolute-form requests (`GET http://host/path`) for
//! plain HTTP, which it forwards on a fresh upstream connection per request. For each
//! destination it:
//! 1. checks the host and port against the allow/deny list (deny wins);
//! 2. resolves the name itself (the namespace has no DNS), and refuses a name that resolves to
//!    a loopback, private, link-local or otherwise internal address unless an allow pattern
//!    names that address (DNS rebinding; cloud metadata at 169.254.169.254). The test-only
//!    resolver override ([`ProxySettings::test_resolve`]) maps a name to a loopback port and
//!    bypasses this check for exactly the names it maps;
//! 3. answers a refusal with `403` and a body naming the rule and the knob, and records every
//!    allowed and denied connection ([`NetworkLog`]).
//!
//! It runs on the caller's tokio runtime for the lifetime of one attempt (the orchestrator
//! owns it) and never takes the runtime down: a client sending garbage gets a 400 from hyper
//! and is dropped.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cordon_policies::{
    DomainDecision, DomainMatcher, DomainPatternError, DomainRules, is_internal_address,
    normalize_host,
};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::net::{TcpStream, UnixListener};

/// How long name resolution and the upstream connect may take.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(15);

/// What the proxy enforces.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProxySettings {
    pub rules: DomainRules,
    /// TEST ONLY (`CORDON_TEST_RESOLVE`): host names answered with these addresses instead of
    /// DNS, so the suite never leaves the machine. Only these names may reach an internal
    /// (loopback) address without an allow pattern naming it.
    pub test_resolve: Vec<(String, SocketAddr)>,
}

/// One connection the command asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConnectionRecord {
    pub host: String,
    pub port: u16,
    /// `CONNECT`, or the method of a forwarded plain-HTTP request.
    pub method: String,
    pub allowed: bool,
    /// The allow or deny pattern that decided, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Why it was refused (or failed after being allowed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Every connection of one attempt, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NetworkLog {
    pub connections: Vec<ConnectionRecord>,
}

impl NetworkLog {
    /// `host:port` of each refused destination, once each, in order.
    pub fn denied_hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        for record in self.connections.iter().filter(|c| !c.allowed) {
            let host = format!("{}:{}", record.host, record.port);
            if !hosts.contains(&host) {
                hosts.push(host);
            }
        }
        hosts
    }
}

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("network allow-list: {0}")]
    Pattern(#[from] DomainPatternError),
    #[error("cannot start the network proxy: {what}: {source}")]
    Io { what: &'static str, source: std::io::Error },
}

/// A running proxy; stops when [`NetworkProxy::finish`] is called or it is dropped.
#[derive(Debug)]
pub struct NetworkProxy {
    socket_path: PathBuf,
    log: Arc<Mutex<NetworkLog>>,
    task: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

struct State {
    matcher: DomainMatcher,
    test_resolve: Vec<(String, SocketAddr)>,
    log: Arc<Mutex<NetworkLog>>,
}

/// A refusal: the status and the one-paragraph body the command sees.
struct Refusal {
    status: StatusCode,
    rule: Option<String>,
    reason: String,
}

impl NetworkProxy {
    /// Listens on a fresh UNIX socket (in a private 0700 directory under the temp dir) and
    /// serves on the current tokio runtime.
    pub fn start(settings: &ProxySettings) -> Result<NetworkProxy, ProxyError> {
        let matcher = DomainMatcher::new(&settings.rules)?;
        let io = |what| move |source| ProxyError::Io { what, source };
        let dir = tempfile::Builder::new()
            .prefix("cordon-proxy-")
            .tempdir()
            .map_err(io("creating its directory"))?;
        let socket_path = dir.path().join("proxy.sock");
        let listener = UnixListener::bind(&socket_path).map_err(io("binding its socket"))?;
        let log = Arc::new(Mutex::new(NetworkLog::default()));
        let state = Arc::new(State {
            matcher,
            test_resolve: settings
                .test_resolve
                .iter()
                .map(|(host, addr)| (normalize_host(host), *addr))
                .collect(),
            log: Arc::clone(&log),
        });
        let task = tokio::spawn(serve(listener, state));
        Ok(NetworkProxy { socket_path, log, task, _dir: dir })
    }

    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// The refused connections so far, in order (the proxy keeps serving).
    pub fn refusals(&self) -> Vec<ConnectionRecord> {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.connections.iter().filter(|c| !c.allowed).cloned().collect()
    }

    /// Stops serving and returns what was recorded.
    pub fn finish(self) -> NetworkLog {
        self.task.abort();
        self.log.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Drop for NetworkProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(listener: UnixListener, state: Arc<State>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = Arc::clone(&state);
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        handle(request, Arc::clone(&state))
                    });
                    // Garbage, a closed client, a timeout: that connection ends, no other.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades()
                        .await;
                });
            }
            // Reap finished connections so the set does not grow for ever.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

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

async fn handle(
    request: Request<Incoming>,
    state: Arc<State>,
) -> Result<Response<ProxyBody>, Infallible> {
    let method = request.method().to_string();
    let Some((host, port)) = destination(&request) else {
        return Ok(text_response(
            StatusCode::BAD_REQUEST,
            "cordon proxy: expected CONNECT host:port or an absolute http:// URL\n".to_owned(),
        ));
    };
    let (upstream, rule) = match state.admit(&host, port).await {
        Ok(admitted) => admitted,
        Err(refusal) => {
            state.record(ConnectionRecord {
                host: host.clone(),
                port,
                method,
                allowed: false,
                rule: refusal.rule.clone(),
                reason: Some(refusal.reason.clone()),
            });
            let body =
                format!("cordon: network access to {host}:{port} refused: {}\n", refusal.reason);
            return Ok(text_response(refusal.status, body));
        }
    };
    state.record(ConnectionRecord {
        host: host.clone(),
        port,
        method,
        allowed: true,
        rule: Some(rule),
        reason: None,
    });
    if request.method() == Method::CONNECT {
        tokio::spawn(tunnel(request, upstream));
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

/// `host, port` from `CONNECT host:port`, an absolute `http://` URI, or the Host header.
fn destination(request: &Request<Incoming>) -> Option<(String, u16)> {
    if request.method() == Method::CONNECT {
        let authority = request.uri().authority()?;
        return Some((normalize_host(authority.host()), authority.port_u16()?));
    }
    match request.uri().scheme_str() {
        Some("http") => {
            let authority = request.uri().authority()?;
            Some((normalize_host(authority.host()), authority.port_u16().unwrap_or(80)))
        }
        Some(_) => None,
        None => {
            let host = request.headers().get(hyper::header::HOST)?.to_str().ok()?;
            let authority: hyper::http::uri::Authority = host.parse().ok()?;
            Some((normalize_host(authority.host()), authority.port_u16().unwrap_or(80)))
        }
    }
}

impl State {
    fn record(&self, record: ConnectionRecord) {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).connections.push(record);
    }

    /// The list, then the resolved addresses, then the connection.
    async fn admit(&self, host: &str, port: u16) -> Result<(TcpStream, String), Refusal> {
        let rule = match self.matcher.decide(host, port) {
            DomainDecision::Allowed { rule } => rule,
            DomainDecision::DeniedByRule { rule } => {
                return Err(Refusal {
                    status: StatusCode::FORBIDDEN,
                    reason: format!(
                        "denied by the rule \"{rule}\" in the network deny list (config \
                         `network.deny`); deny wins over allow"
                    ),
                    rule: Some(rule),
                });
            }
            DomainDecision::NotAllowed => {
                return Err(Refusal {
                    status: StatusCode::FORBIDDEN,
                    reason: format!(
                        "no rule of the network allow-list matches {host}:{port}; allow it with \
                         --allow-domain {host} (config `network = {{ allow = [\"{host}\"] }}`)"
                    ),
                    rule: None,
                });
            }
        };
        let addresses = self.resolve(host, port, &rule).await?;
        let connect = async {
            let mut last_error = None;
            for address in &addresses {
                match TcpStream::connect(address).await {
                    Ok(stream) => return Ok(stream),
                    Err(error) => last_error = Some(error),
                }
            }
            Err(last_error.map_or_else(|| "no address".to_owned(), |e| e.to_string()))
        };
        let failed = |why: String| Refusal {
            status: StatusCode::BAD_GATEWAY,
            rule: Some(rule.clone()),
            reason: format!("allowed by \"{rule}\", but the connection failed: {why}"),
        };
        match tokio::time::timeout(UPSTREAM_TIMEOUT, connect).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                Ok((stream, rule))
            }
            Ok(Err(why)) => Err(failed(why)),
            Err(_) => Err(failed("timed out".to_owned())),
        }
    }

    async fn resolve(&self, host: &str, port: u16, rule: &str) -> Result<Vec<SocketAddr>, Refusal> {
        if let Some((_, address)) = self.test_resolve.iter().find(|(name, _)| name == host) {
            // Test-only mapping: the one way past the internal-address check by name.
            return Ok(vec![*address]);
        }
        let addresses: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => {
                let lookup = tokio::net::lookup_host((host, port));
                match tokio::time::timeout(UPSTREAM_TIMEOUT, lookup).await {
                    Ok(Ok(found)) => found.collect(),
                    Ok(Err(error)) => {
                        return Err(Refusal {
                            status: StatusCode::BAD_GATEWAY,
                            rule: Some(rule.to_owned()),
                            reason: format!("cannot resolve {host}: {error}"),
                        });
                    }
                    Err(_) => {
                        return Err(Refusal {
                            status: StatusCode::BAD_GATEWAY,
                            rule: Some(rule.to_owned()),
                            reason: format!("resolving {host} timed out"),
                        });
                    }
                }
            }
        };
        // Every address must pass, or a resolver answering [public, internal] picks the target.
        if let Some(internal) = addresses.iter().find(|a| {
            is_internal_address(a.ip()) && !self.matcher.explicitly_allows_address(a.ip(), a.port())
        }) {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                rule: Some(rule.to_owned()),
                reason: format!(
                    "{host} resolves to {}, a loopback/private/link-local address; the allow-list \
                     reaches such an address only when a rule names it (e.g. --allow-domain {}:{port})",
                    internal.ip(),
                    bracketed(internal.ip())
                ),
            });
        }
        Ok(addresses)
    }
}

fn bracketed(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// After `200` to a CONNECT: bytes both ways until either side closes.
async fn tunnel(request: Request<Incoming>, mut upstream: TcpStream) {
    let Ok(upgraded) = hyper::upgrade::on(request).await else { return };
    let mut client = TokioIo::new(upgraded);
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
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

//! The network allow-list proxy: what a command with a domain allow-list reaches the
//! outside through.
//!
//! The command runs in a network namespace with only loopback; the Linux helper binds
//! `127.0.0.1:PORT` inside it and hands the listening socket to this proxy over a socketpair
//! made for that one launch (the helper inherits one end), then points `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` at the port. The proxy
//! speaks HTTP/1.1 (hyper, [`http`]): `CONNECT host:port` for HTTPS and anything tunnelled,
//! and absolute-form requests (`GET http://host/path`) for plain HTTP, which it forwards on a
//! fresh upstream connection per request; and SOCKS5 `CONNECT` ([`socks`]) on the same port.
//! For each destination it:
//! 1. checks the host and port against the allow/deny list (deny wins);
//! 2. resolves the name itself (the namespace has no DNS), and refuses a name that resolves to
//!    a loopback, private, link-local or otherwise internal address unless an allow pattern
//!    names that address (DNS rebinding; cloud metadata at 169.254.169.254). The end-to-end
//!    suite's resolver override (`ProxySettings::test_resolve`, built only with the
//!    `test-hooks` feature) maps a name to a loopback port and bypasses this check for exactly
//!    the names it maps;
//! 3. answers a refusal with `403` and a body naming the rule and the knob, and records every
//!    allowed and denied connection ([`NetworkLog`]).
//!
//! Each loopback target the list allows (`127.0.0.1:8080`, `localhost:8080`) is forwarded
//! ([`forward`]): the helper hands over a listener on that address and port inside the
//! namespace too, and the proxy relays its connections to the host's, admitted and recorded
//! like the rest (method `FORWARD`), so clients that go to loopback directly reach it.
//!
//! What it forwards must name what it admitted: a plain-HTTP request's one Host header is its
//! URL's host ([`http`]), and a tunnel's first bytes, when they are a TLS ClientHello, name the
//! host the tunnel was opened for ([`sni`], [`relay`]).
//!
//! It runs on the caller's tokio runtime for the lifetime of one attempt (the orchestrator
//! owns it) and never takes the runtime down: a client sending garbage gets a 400 from hyper
//! and is dropped.

mod admission;
mod forward;
mod handover;
mod http;
mod refusals;
mod relay;
mod sni;
mod socks;
#[cfg(target_os = "linux")]
mod splice;

use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cordon_policies::{DomainMatcher, DomainPatternError, DomainRules, SandboxPolicy};
use hyper::StatusCode;
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use serde::Serialize;
use tokio::net::{TcpListener, TcpStream, UnixStream};

use crate::launch::{HandOverSocket, ProxyEndpoint, SandboxKind};

/// How long name resolution and the upstream connect may take.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(15);

/// What the proxy enforces.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProxySettings {
    pub rules: DomainRules,
    /// A second list every destination must pass too (an executor call's `allowed_domains`).
    pub narrowed_by: Option<DomainRules>,
    /// The end-to-end suite's hook (`CORDON_TEST_RESOLVE`, see `test_hooks`): host names
    /// answered with these addresses instead of DNS, so the suite never leaves the machine.
    /// Only these names may reach an internal (loopback) address without an allow pattern
    /// naming it.
    #[cfg(any(test, feature = "test-hooks"))]
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
        denied_hosts(&self.connections)
    }
}

/// `host:port` of each refused destination among `records`, once each, in order.
pub fn denied_hosts<'a>(records: impl IntoIterator<Item = &'a ConnectionRecord>) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    for record in records.into_iter().filter(|c| !c.allowed) {
        let host = format!("{}:{}", record.host, record.port);
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    hosts
}

/// How to allow what `records` show refused: `--allow-domain HOST`, and for a loopback target
/// no rule matched, the pattern with its port. A target a rule allowed but that could not be
/// reached, or that a deny rule refused, gets no pattern: allowing it again would change
/// nothing.
pub fn refusal_advice<'a>(records: impl IntoIterator<Item = &'a ConnectionRecord>) -> String {
    let unlisted = denied_hosts(records.into_iter().filter(|record| record.rule.is_none()));
    cordon_policies::allow_domain_advice(&unlisted)
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
    endpoint: Endpoint,
    log: Arc<Mutex<NetworkLog>>,
    task: tokio::task::JoinHandle<()>,
}

struct State {
    /// The list as written (the loopback targets it forwards are derived from it).
    rules: DomainRules,
    matcher: DomainMatcher,
    narrowed_by: Option<DomainMatcher>,
    #[cfg(any(test, feature = "test-hooks"))]
    test_resolve: Vec<(String, SocketAddr)>,
    log: Arc<Mutex<NetworkLog>>,
}

/// A refusal: the status and the one-paragraph body the command sees.
struct Refusal {
    status: StatusCode,
    rule: Option<String>,
    reason: String,
}

impl Refusal {
    /// Records the refused destination and returns the line the client is told.
    fn record(&self, state: &State, destination: Destination<'_>) -> String {
        state.record(ConnectionRecord {
            host: destination.host.to_owned(),
            port: destination.port,
            method: destination.method.to_owned(),
            allowed: false,
            rule: self.rule.clone(),
            reason: Some(self.reason.clone()),
        });
        format!(
            "cordon: network access to {}:{} refused: {}\n",
            destination.host, destination.port, self.reason
        )
    }
}

/// Where a client asked to go, and how (`CONNECT`, an HTTP method, `SOCKS5`).
#[derive(Debug, Clone, Copy)]
struct Destination<'a> {
    host: &'a str,
    port: u16,
    method: &'a str,
}

/// Where the proxy takes its clients from.
#[derive(Debug)]
enum Endpoint {
    /// The helper hands over the command's listening socket through this end of the
    /// proxy's socketpair, which it inherits.
    HandOver(HandOverSocket),
    /// `127.0.0.1:PORT` on the host (Seatbelt).
    Loopback(u16),
}

impl NetworkProxy {
    /// Makes a socketpair for the helper to hand over the command's listening socket through
    /// (its end is [`NetworkProxy::endpoint`]), and serves on the current tokio runtime. A
    /// socketpair has no name: only the process that inherits the other end can reach it, and
    /// nothing is created on disk.
    pub fn start(settings: &ProxySettings) -> Result<NetworkProxy, ProxyError> {
        let matcher = DomainMatcher::new(&settings.rules)?;
        crate::limits::raise_open_file_limit();
        let io = |what| move |source| ProxyError::Io { what, source };
        let (own_end, helper_end) =
            socketpair(AddressFamily::Unix, SockType::Stream, None, PAIR_FLAGS)
                .map_err(|errno| io("making its hand-over socketpair")(errno.into()))?;
        // Above the numbers a spawner moves descriptors onto in the child (stdio, the status
        // report), which would otherwise replace it there.
        let helper_end = crate::sys::duplicate_at_or_above(helper_end.as_fd(), LOWEST_HELPER_FD)
            .map_err(io("making its hand-over socketpair"))?;
        let control = std::os::unix::net::UnixStream::from(own_end);
        control.set_nonblocking(true).map_err(io("making its hand-over socketpair"))?;
        let control =
            UnixStream::from_std(control).map_err(io("making its hand-over socketpair"))?;
        let (state, log) = State::new(matcher, settings)?;
        let task = tokio::spawn(handover::serve(control, state));
        tracing::debug!("network proxy waits for the helper's hand-over");
        let endpoint = Endpoint::HandOver(HandOverSocket::new(helper_end));
        Ok(NetworkProxy { endpoint, log, task })
    }

    /// Listens on `127.0.0.1` of the host, on a port the kernel picks, for a sandbox that can
    /// be limited to one local port (Seatbelt), and serves on the current tokio runtime. Any
    /// local process could connect to it; it reaches only what the allow-list allows.
    pub fn start_on_loopback(settings: &ProxySettings) -> Result<NetworkProxy, ProxyError> {
        let matcher = DomainMatcher::new(&settings.rules)?;
        crate::limits::raise_open_file_limit();
        let io = |what| move |source| ProxyError::Io { what, source };
        let listener =
            std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(io("binding its port"))?;
        let port = listener.local_addr().map_err(io("reading its port"))?.port();
        listener.set_nonblocking(true).map_err(io("binding its port"))?;
        let listener = TcpListener::from_std(listener).map_err(io("binding its port"))?;
        let (state, log) = State::new(matcher, settings)?;
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let task = tokio::spawn(serve_clients(listener, state, slots));
        tracing::debug!(port, "network proxy listens on loopback");
        Ok(NetworkProxy { endpoint: Endpoint::Loopback(port), log, task })
    }

    /// The proxy a launch under `kind` needs: one for a policy with a domain allow-list under
    /// the Linux helper (the only sandbox that can hand it the command's port; elsewhere such a
    /// policy means no network, see `launch`), none otherwise. `test_resolve` is the end-to-end
    /// suite's resolver override, empty (and ignored) without the `test-hooks` feature.
    pub fn start_for(
        kind: SandboxKind,
        policy: &SandboxPolicy,
        narrowed_by: Option<DomainRules>,
        test_resolve: &[(String, SocketAddr)],
    ) -> Result<Option<NetworkProxy>, ProxyError> {
        let Some(rules) = policy.network_domains() else { return Ok(None) };
        let settings = ProxySettings {
            rules: rules.clone(),
            narrowed_by,
            #[cfg(any(test, feature = "test-hooks"))]
            test_resolve: test_resolve.to_vec(),
        };
        #[cfg(not(any(test, feature = "test-hooks")))]
        let _ = test_resolve;
        match kind {
            SandboxKind::Linux => Ok(Some(NetworkProxy::start(&settings)?)),
            SandboxKind::Seatbelt => Ok(Some(NetworkProxy::start_on_loopback(&settings)?)),
            SandboxKind::None => Ok(None),
        }
    }

    /// How the command reaches this proxy (for [`crate::Launch::proxy`]).
    pub fn endpoint(&self) -> ProxyEndpoint<'_> {
        match &self.endpoint {
            Endpoint::HandOver(channel) => ProxyEndpoint::HandOver(channel),
            Endpoint::Loopback(port) => ProxyEndpoint::Loopback(*port),
        }
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

/// Both ends are close-on-exec from the start: a server spawning another session's command
/// meanwhile must not pass either on. (Only the Linux helper uses the hand-over; elsewhere the
/// flag is not offered and nothing spawns with this proxy.)
#[cfg(target_os = "linux")]
const PAIR_FLAGS: SockFlag = SockFlag::SOCK_CLOEXEC;
#[cfg(not(target_os = "linux"))]
const PAIR_FLAGS: SockFlag = SockFlag::empty();

/// The lowest number the helper's end may have: above stdio and the status report that
/// `sys::spawn_namespace_init` moves onto descriptor 3 in its child.
const LOWEST_HELPER_FD: std::os::fd::RawFd = 4;

/// At most this many client connections at once (each holds two sockets and, tunnelling, two
/// pipes — or two 64 KiB relay buffers where it copies); a connection beyond that is closed at
/// once. Memory stays bounded whatever
/// the command does.
const MAX_CONNECTIONS: usize = 4096;
/// A client must send its request line and headers (or its SOCKS5 greeting and request, or a
/// tunnel's TLS ClientHello once begun) within this long, or it is dropped: a slowloris client
/// holds one slot for this long, never the proxy. A kept-alive HTTP connection waits this long
/// for its next request.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest request line and headers served (a longer one gets `431`).
const MAX_HEADER_BYTES: usize = 64 * 1024;
/// The first byte of a SOCKS5 greeting; an HTTP request starts with a method's letter.
const SOCKS5_VERSION: u8 = 5;

/// Serves the command's connections from `listener`, at most as many at once as `slots` holds
/// ([`MAX_CONNECTIONS`], shared with the forwarded loopback targets).
async fn serve_clients(
    listener: TcpListener,
    state: Arc<State>,
    slots: Arc<tokio::sync::Semaphore>,
) {
    accept_each(listener, slots, move |stream| serve_connection(stream, Arc::clone(&state))).await;
}

/// Accepts connections from `listener` for as long as the proxy runs and hands each to
/// `handle`, at most as many at once as `slots` holds; one over that is dropped.
async fn accept_each<F, Fut>(listener: TcpListener, slots: Arc<tokio::sync::Semaphore>, handle: F)
where
    F: Fn(tokio::net::TcpStream) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors (EMFILE) or memory: accept fails at once until a
                    // connection ends. Wait a little instead of spinning on it.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else { continue };
                let work = handle(stream);
                connections.spawn(async move {
                    let _slot = slot;
                    work.await;
                });
            }
            // Reap finished connections so the set does not grow for ever.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// One client connection: SOCKS5 or HTTP, told apart by its first byte (peeked, not read).
/// Garbage, a closed client, a timeout: that connection ends, no other.
async fn serve_connection(stream: TcpStream, state: Arc<State>) {
    let _ = stream.set_nodelay(true);
    let mut byte = [0u8; 1];
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut byte)).await {
        Ok(Ok(1)) if byte[0] == SOCKS5_VERSION => socks::serve(stream, state).await,
        Ok(Ok(1)) => http::serve(stream, state).await,
        Ok(Ok(_) | Err(_)) | Err(_) => {}
    }
}

impl State {
    /// The shared state of a proxy for `settings`, and its connection log.
    fn new(
        matcher: DomainMatcher,
        settings: &ProxySettings,
    ) -> Result<(Arc<State>, Arc<Mutex<NetworkLog>>), ProxyError> {
        let log = Arc::new(Mutex::new(NetworkLog::default()));
        let narrowed_by = settings.narrowed_by.as_ref().map(DomainMatcher::new).transpose()?;
        let state = Arc::new(State {
            rules: settings.rules.clone(),
            matcher,
            narrowed_by,
            #[cfg(any(test, feature = "test-hooks"))]
            test_resolve: settings
                .test_resolve
                .iter()
                .map(|(host, addr)| (cordon_policies::normalize_host(host), *addr))
                .collect(),
            log: Arc::clone(&log),
        });
        Ok((state, log))
    }

    fn record(&self, record: ConnectionRecord) {
        tracing::debug!(
            host = %record.host,
            port = record.port,
            method = %record.method,
            allowed = record.allowed,
            rule = ?record.rule,
            reason = ?record.reason,
            "proxy connection"
        );
        self.log.lock().unwrap_or_else(PoisonError::into_inner).connections.push(record);
    }
}

#[cfg(test)]
mod tests;

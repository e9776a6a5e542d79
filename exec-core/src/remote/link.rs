//! The link: `ssh HOST cordon executor --serve-remote`, the executor protocol over its
//! stdin/stdout, written and read as the executor's own message types. Requests get ids and
//! wait for their responses (which may come out of order, see [`super::responses`]); the link
//! remembers the sessions still running there, so that a lost connection can say which ones
//! ended with it.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::responses::{LinkEvent, LinkEvents, Response, Unreadable, read_responses};
use super::{RemoteError, RemoteTarget};
use crate::executor::{
    CORDON_VERSION, CallOutcome, Form, HostFacts, Incoming, MAX_LINE_BYTES, Outgoing,
    RESOLVED_FORM_VERSION, ResolvedOutcome, excerpt,
};
use crate::resolved::{ResolvedExec, ResolvedResult};

/// A session running there, as this side knows it.
#[derive(Debug, Clone)]
pub(super) struct RemoteSession {
    /// What runs, as an approval showed it.
    pub cmd: String,
    pub tty: bool,
    /// When this side learnt of it.
    pub started: Instant,
    /// Calls waiting on it right now.
    pub busy: u32,
}

/// What the reader, the writer and the callers share.
pub(super) struct Shared {
    pub host: String,
    pub pending: Mutex<HashMap<String, oneshot::Sender<Response>>>,
    /// Sessions running on the far end, by id.
    pub live: Mutex<BTreeMap<u32, RemoteSession>>,
    /// The connection ended (EOF from ssh).
    pub lost: AtomicBool,
    /// This side is closing the link on purpose: EOF is not news.
    pub closing: AtomicBool,
    /// Why this side closed the link when the far end broke the protocol (a line over the
    /// limit) or went silent: every later call reports it.
    pub broken: Mutex<Option<String>>,
    /// Lines reported that answered no call (see [`Shared::report`]).
    pub stray: AtomicU64,
    pub events: mpsc::UnboundedSender<LinkEvent>,
}

/// How many lines that answer nothing (not the protocol, or for no call) a far end may write —
/// a login shell's greeting, say — before the link is closed.
const MAX_STRAY_LINES: u64 = 100;

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub fn lost_error(&self) -> RemoteError {
        let host = self.host.clone();
        let sessions = self.live_commands();
        match lock(&self.broken).clone() {
            Some(why) => RemoteError::Closed { host, why, sessions },
            None => RemoteError::Lost { host, sessions },
        }
    }

    /// The sessions running there, as `(id, command)`.
    pub fn live_commands(&self) -> Vec<(u32, String)> {
        lock(&self.live).iter().map(|(id, s)| (*id, s.cmd.clone())).collect()
    }

    /// Closes the link because the far end broke the protocol: later calls report `why`.
    pub fn break_link(&self, why: String) {
        lock(&self.broken).get_or_insert(why);
        self.lost.store(true, Ordering::SeqCst);
    }

    /// Tells the caller what the link noticed. A far end that writes more than
    /// [`MAX_STRAY_LINES`] lines no call waits for is not speaking the protocol: the link is
    /// closed rather than every line kept for the caller to print.
    pub fn report(&self, event: LinkEvent) {
        let stray = matches!(event, LinkEvent::NotProtocol { .. } | LinkEvent::Unexpected { .. });
        if stray && self.stray.fetch_add(1, Ordering::SeqCst) >= MAX_STRAY_LINES {
            self.break_link(format!(
                "it wrote more than {MAX_STRAY_LINES} lines that answer nothing"
            ));
            return;
        }
        // Nobody listening is nobody to tell.
        let _ = self.events.send(event);
    }
}

/// A connected remote executor.
pub struct RemoteLink {
    shared: Arc<Shared>,
    outbox: Mutex<Option<mpsc::UnboundedSender<String>>>,
    child: Mutex<Option<tokio::process::Child>>,
    next: AtomicU64,
    facts: HostFacts,
    remote_version: String,
    /// The relay of ssh's stderr (`ssh_stderr.rs`), finished when ssh and whatever it started
    /// closed it.
    ssh_said: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// One `write_resolved` call.
#[derive(Debug, Clone, Copy)]
pub struct Write<'a> {
    pub session_id: u32,
    pub chars: &'a str,
    pub yield_time_ms: Option<u64>,
    pub max_output_tokens: Option<usize>,
}

impl RemoteLink {
    /// Starts ssh, then says hello: both sides must speak the resolved form, and the far end
    /// must answer within `target.hello_timeout` (ssh's connection and login included), else
    /// ssh is killed. ssh's standard error (host keys, connection errors, the far end's own) is
    /// relayed to this process's stderr as escaped text, line by line (`ssh_stderr.rs`); ssh
    /// asks for passwords on the terminal itself. The link's own news comes as [`LinkEvents`].
    pub async fn connect(target: &RemoteTarget) -> Result<(RemoteLink, LinkEvents), RemoteError> {
        let started = tokio::time::Instant::now();
        let deadline = started + target.hello_timeout;
        let keepalive = super::ssh::keepalive_options(target, deadline).await;
        let mut command = tokio::process::Command::new(&target.ssh_program);
        command
            .args(target.ssh_args(&keepalive))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|source| RemoteError::Spawn { program: target.ssh_program.clone(), source })?;
        let ssh_said =
            child.stderr.take().map(|stderr| super::ssh_stderr::relay(stderr, target.label()));
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(RemoteError::Protocol {
                host: target.label(),
                message: "ssh has no stdin/stdout pipes".into(),
            });
        };
        let (events, events_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            host: target.label(),
            pending: Mutex::new(HashMap::new()),
            live: Mutex::new(BTreeMap::new()),
            lost: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            broken: Mutex::new(None),
            stray: AtomicU64::new(0),
            events,
        });
        let (outbox, mut lines) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(line) = lines.recv().await {
                if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
            // Dropping stdin is EOF for the far end: it ends every session and exits.
        });
        tokio::spawn(read_responses(
            BufReader::new(stdout),
            Arc::clone(&shared),
            outbox.downgrade(),
        ));
        let mut link = RemoteLink {
            shared,
            outbox: Mutex::new(Some(outbox)),
            child: Mutex::new(Some(child)),
            next: AtomicU64::new(0),
            facts: HostFacts { doctor: Value::Null, env: Vec::new(), cwd: "/".into() },
            remote_version: String::new(),
            ssh_said: Mutex::new(ssh_said),
        };
        match tokio::time::timeout_at(deadline, link.hello()).await {
            Ok(Ok(())) => {}
            // Why ssh could not connect comes before cordon's error.
            Ok(Err(error)) => {
                link.ssh_said_all().await;
                return Err(error);
            }
            Err(_) => {
                link.abort().await;
                link.ssh_said_all().await;
                return Err(RemoteError::NoHello {
                    host: target.label(),
                    waited: started.elapsed(),
                });
            }
        }
        Ok((link, LinkEvents::new(events_rx)))
    }

    async fn hello(&mut self) -> Result<(), RemoteError> {
        let response = self
            .request(|request_id| Incoming::Hello {
                request_id,
                protocol_version: RESOLVED_FORM_VERSION,
                cordon_version: Some(CORDON_VERSION.to_owned()),
            })
            .await
            .map_err(|e| self.unreachable(e))?;
        let mismatch =
            |remote_version: String, remote_protocol: String| RemoteError::VersionMismatch {
                host: self.shared.host.clone(),
                local_version: CORDON_VERSION,
                local_protocol: RESOLVED_FORM_VERSION,
                remote_version,
                remote_protocol,
            };
        match response {
            Outgoing::HelloResponse { protocol_version, cordon_version, forms, host, .. } => {
                if protocol_version != RESOLVED_FORM_VERSION || !forms.contains(&Form::ExecResolved)
                {
                    return Err(mismatch(cordon_version, protocol_version.to_string()));
                }
                let Some(facts) = host else {
                    return Err(RemoteError::Protocol {
                        host: self.shared.host.clone(),
                        message: "a hello_response without the host's facts (doctor, env, cwd)"
                            .into(),
                    });
                };
                self.facts = facts;
                self.remote_version = cordon_version;
                Ok(())
            }
            // An executor older than protocol 2 does not know `hello` at all; a newer one
            // that dropped this version says so with both versions in its message.
            Outgoing::Error { message, .. } => {
                let remote = match message.split_once("this executor (") {
                    Some((_, rest)) => rest.split(')').next().unwrap_or(rest).to_owned(),
                    None => "an older cordon, protocol 1 (no hello)".to_owned(),
                };
                let (version, protocol) = match remote.split_once(", protocol ") {
                    Some((v, p)) => (v.trim_start_matches("cordon ").to_owned(), p.to_owned()),
                    None => (remote, "1".to_owned()),
                };
                Err(mismatch(version, protocol))
            }
            other => Err(self.unexpected(&other)),
        }
    }

    /// Waits for `call` at most `limit`: a far end that has not answered by then is taken for
    /// dead (a frozen connection ssh has not noticed yet), the link is closed and every later
    /// call says so.
    pub async fn within<T>(
        &self,
        limit: std::time::Duration,
        call: impl Future<Output = Result<T, RemoteError>>,
    ) -> Result<T, RemoteError> {
        match tokio::time::timeout(limit, call).await {
            Ok(result) => result,
            Err(_) => {
                let sessions = self.shared.live_commands();
                self.shared.break_link(format!("no answer within {} s", limit.as_secs_f64()));
                self.abort().await;
                Err(RemoteError::Silent { host: self.shared.host.clone(), waited: limit, sessions })
            }
        }
    }

    /// A lost link before the hello: ssh could not connect or the far end has no cordon.
    fn unreachable(&self, error: RemoteError) -> RemoteError {
        match error {
            RemoteError::Lost { host, .. } => RemoteError::Remote {
                message: "no executor answered over ssh (ssh's own message, if any, is above; \
                          is cordon installed there? --remote-cordon PATH names it)"
                    .to_owned(),
                host,
            },
            other => other,
        }
    }

    /// A response of the wrong kind for its request.
    fn unexpected(&self, response: &Outgoing) -> RemoteError {
        let shown = serde_json::to_string(response).unwrap_or_else(|e| e.to_string());
        RemoteError::Protocol { host: self.shared.host.clone(), message: excerpt(&shown) }
    }

    /// Sends the request `make` builds around its id, and waits for the response with that
    /// id. A caller that stops waiting sends `cancel` (see [`CancelOnDrop`]).
    async fn request(&self, make: impl FnOnce(Value) -> Incoming) -> Result<Outgoing, RemoteError> {
        if self.shared.lost.load(Ordering::SeqCst) {
            return Err(self.shared.lost_error());
        }
        let id = format!("c{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
        let line = encode(&make(Value::String(id.clone())))
            .map_err(|source| RemoteError::Encode { host: self.shared.host.clone(), source })?;
        if line.len() > MAX_LINE_BYTES {
            // The far end would skip it with an error naming no request: nobody would answer.
            let (host, bytes) = (self.shared.host.clone(), line.len());
            return Err(RemoteError::TooLong { host, bytes, limit: MAX_LINE_BYTES });
        }
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id.clone(), tx);
        let outbox = lock(&self.outbox).clone();
        let sent = outbox.as_ref().is_some_and(|outbox| outbox.send(line).is_ok());
        let Some(outbox) = outbox.filter(|_| sent) else {
            lock(&self.shared.pending).remove(&id);
            return Err(self.shared.lost_error());
        };
        let cancel = CancelOnDrop { id, outbox: Some(outbox) };
        let response = rx.await;
        cancel.disarm();
        match response {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(Unreadable { excerpt, why })) => Err(RemoteError::Protocol {
                host: self.shared.host.clone(),
                message: format!("{excerpt}: {why}"),
            }),
            Err(_) => Err(self.shared.lost_error()),
        }
    }

    /// Ends session `id` there (`close_resolved`).
    pub async fn close_session(&self, session_id: u32) -> Result<(), RemoteError> {
        let response =
            self.request(|request_id| Incoming::CloseResolved { request_id, session_id }).await?;
        lock(&self.shared.live).remove(&session_id);
        match response {
            Outgoing::CloseResponse { outcome: CallOutcome::Success { .. }, .. } => Ok(()),
            Outgoing::CloseResponse { outcome: CallOutcome::Error { message }, .. }
            | Outgoing::Error { message, .. } => {
                Err(RemoteError::Remote { host: self.shared.host.clone(), message })
            }
            other => Err(self.unexpected(&other)),
        }
    }

    /// The sessions running there, as far as this side knows, by id.
    pub(super) fn live_sessions(&self) -> Vec<(u32, RemoteSession)> {
        lock(&self.shared.live).iter().map(|(id, session)| (*id, session.clone())).collect()
    }

    /// Runs `exec` there (`exec_resolved`).
    pub async fn exec(&self, exec: ResolvedExec) -> Result<ResolvedResult, RemoteError> {
        let about = RemoteSession {
            cmd: cordon_policies::render_argv(&exec.argv.iter().map(|w| &w.0).collect::<Vec<_>>())
                .text,
            tty: exec.tty,
            started: Instant::now(),
            busy: 0,
        };
        let exec = Box::new(exec);
        let response =
            self.request(|request_id| Incoming::ExecResolved { request_id, exec }).await?;
        let result = self.resolved(response)?;
        if let Some(id) = result.session_id {
            lock(&self.shared.live).insert(id, about);
        }
        Ok(result)
    }

    /// Types `chars` into session `id` (or just polls) and collects (`write_resolved`).
    pub async fn write(&self, write: Write<'_>) -> Result<ResolvedResult, RemoteError> {
        let Write { session_id, chars, yield_time_ms, max_output_tokens } = write;
        let _busy = Busy::new(&self.shared, session_id);
        let response = self
            .request(|request_id| Incoming::WriteResolved {
                request_id,
                session_id,
                chars: chars.to_owned(),
                yield_time_ms,
                max_output_tokens,
            })
            .await;
        let result = response.and_then(|r| self.resolved(r));
        // An error about the session (it exited, it never existed) also means it is gone.
        let running = matches!(&result, Ok(r) if r.session_id.is_some())
            || matches!(&result, Err(RemoteError::Lost { .. }));
        if !running {
            lock(&self.shared.live).remove(&session_id);
        }
        result
    }

    fn resolved(&self, response: Outgoing) -> Result<ResolvedResult, RemoteError> {
        match response {
            Outgoing::ResolvedResponse { outcome: ResolvedOutcome::Success { result }, .. } => {
                Ok(result)
            }
            Outgoing::ResolvedResponse { outcome: ResolvedOutcome::Error { message }, .. }
            | Outgoing::Error { message, .. } => {
                Err(RemoteError::Remote { host: self.shared.host.clone(), message })
            }
            other => Err(self.unexpected(&other)),
        }
    }

    /// What the far end reported about itself.
    pub fn facts(&self) -> &HostFacts {
        &self.facts
    }

    pub fn host(&self) -> &str {
        &self.shared.host
    }

    pub fn remote_version(&self) -> &str {
        &self.remote_version
    }

    /// Whether the connection ended.
    pub fn is_lost(&self) -> bool {
        self.shared.lost.load(Ordering::SeqCst)
    }

    /// Ends the link: EOF to the far end (which ends every session there and exits), then
    /// waits a moment for ssh, and kills it if it lingers — at once when the far end broke
    /// the protocol, which says nothing good about how it would end.
    pub async fn close(&self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        lock(&self.outbox).take();
        let child = lock(&self.child).take();
        if let Some(mut child) = child {
            let grace = if lock(&self.shared.broken).is_some() {
                std::time::Duration::ZERO
            } else {
                CLOSE_GRACE
            };
            let waited = tokio::time::timeout(grace, child.wait()).await;
            if waited.is_err() {
                let _ = child.kill().await;
            }
        }
        self.ssh_said_all().await;
    }

    /// Waits for the relay of ssh's stderr to show what is left: to the pipe's end, or for a
    /// moment when something ssh started (a connection master) holds it open.
    async fn ssh_said_all(&self) {
        let relay = lock(&self.ssh_said).take();
        if let Some(relay) = relay {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), relay).await;
        }
    }

    /// Closes this side's end without waiting (EOF to the far end, which ends every session
    /// there); ssh is killed when the link is dropped.
    pub fn hang_up(&self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        lock(&self.outbox).take();
    }

    /// Kills ssh at once (a timeout): the far end sees the connection drop and ends everything.
    pub async fn abort(&self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        lock(&self.outbox).take();
        let child = lock(&self.child).take();
        if let Some(mut child) = child {
            let _ = child.kill().await;
        }
    }
}

/// How long the far end may take beyond the longest a call can wait there (starting the
/// command, its sandbox, the output's way back) before it is taken for dead.
pub(super) const ANSWER_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// How long ssh gets to end after EOF before it is killed.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// One line of the protocol.
pub(super) fn encode(message: &Incoming) -> Result<String, serde_json::Error> {
    let mut line = serde_json::to_string(message)?;
    line.push('\n');
    Ok(line)
}

/// Marks a session busy while a call waits on it.
struct Busy<'a> {
    shared: &'a Shared,
    session_id: u32,
}

impl<'a> Busy<'a> {
    fn new(shared: &'a Shared, session_id: u32) -> Self {
        if let Some(session) = lock(&shared.live).get_mut(&session_id) {
            session.busy += 1;
        }
        Busy { shared, session_id }
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        if let Some(session) = lock(&self.shared.live).get_mut(&self.session_id) {
            session.busy = session.busy.saturating_sub(1);
        }
    }
}

/// Sends `cancel` for a request whose caller dropped it before the answer came (an MCP
/// client's cancellation): the far end drops the call, which kills its session.
struct CancelOnDrop {
    id: String,
    outbox: Option<mpsc::UnboundedSender<String>>,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.outbox = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(outbox) = self.outbox.take() {
            let cancel = Incoming::Cancel {
                request_id: None,
                call_request_id: Value::String(std::mem::take(&mut self.id)),
            };
            if let Ok(line) = encode(&cancel) {
                let _ = outbox.send(line);
            }
        }
    }
}

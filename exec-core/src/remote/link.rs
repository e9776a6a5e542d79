//! The link: `ssh HOST cordon executor --serve-remote`, the executor protocol over its
//! stdin/stdout. Requests get ids and wait for their responses (which may come out of
//! order); the link remembers the sessions still running there, so that a lost connection can
//! say which ones ended with it.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cordon_policies::{SandboxMode, SandboxPolicy};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::{RemoteError, RemoteTarget};
use crate::platform::Gap;
use crate::resolved::{HostFacts, ResolvedExec, ResolvedResult};

/// What the reader, the writer and the callers share.
struct Shared {
    host: String,
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// Sessions running on the far end: id → what runs there.
    live: Mutex<BTreeMap<u32, String>>,
    /// The connection ended (EOF from ssh).
    lost: AtomicBool,
    /// This side is closing the link on purpose: EOF is not news.
    closing: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn lost_error(&self) -> RemoteError {
        RemoteError::Lost {
            host: self.host.clone(),
            sessions: lock(&self.live).iter().map(|(id, cmd)| (*id, cmd.clone())).collect(),
        }
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
}

impl RemoteLink {
    /// Starts ssh, then says hello: both sides must speak the resolved form. ssh's own
    /// messages (host keys, passwords, connection errors) go to this process's stderr.
    pub async fn connect(target: &RemoteTarget) -> Result<RemoteLink, RemoteError> {
        let mut command = tokio::process::Command::new(&target.ssh_program);
        command
            .args(target.ssh_args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|source| RemoteError::Spawn { program: target.ssh_program.clone(), source })?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(RemoteError::Protocol {
                host: target.label(),
                message: "ssh has no stdin/stdout pipes".into(),
            });
        };
        let shared = Arc::new(Shared {
            host: target.label(),
            pending: Mutex::new(HashMap::new()),
            live: Mutex::new(BTreeMap::new()),
            lost: AtomicBool::new(false),
            closing: AtomicBool::new(false),
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
        };
        link.hello().await?;
        Ok(link)
    }

    async fn hello(&mut self) -> Result<(), RemoteError> {
        use crate::executor::{CORDON_VERSION, RESOLVED_FORM_VERSION};
        let request = json!({"type": "hello", "protocolVersion": RESOLVED_FORM_VERSION,
            "cordonVersion": CORDON_VERSION});
        let response = self.request(request).await.map_err(|e| self.unreachable(e))?;
        let mismatch =
            |remote_version: String, remote_protocol: String| RemoteError::VersionMismatch {
                host: self.shared.host.clone(),
                local_version: CORDON_VERSION,
                local_protocol: RESOLVED_FORM_VERSION,
                remote_version,
                remote_protocol,
            };
        match response["type"].as_str() {
            Some("hello_response") => {}
            // An executor older than protocol 2 does not know `hello` at all; a newer one
            // that dropped this version says so with both versions in its message.
            Some("error") => {
                let message = response["message"].as_str().unwrap_or_default();
                let remote = match message.split_once("this executor (") {
                    Some((_, rest)) => rest.split(')').next().unwrap_or(rest).to_owned(),
                    None => "an older cordon, protocol 1 (no hello)".to_owned(),
                };
                let (version, protocol) = match remote.split_once(", protocol ") {
                    Some((v, p)) => (v.trim_start_matches("cordon ").to_owned(), p.to_owned()),
                    None => (remote, "1".to_owned()),
                };
                return Err(mismatch(version, protocol));
            }
            _ => return Err(self.unexpected(&response)),
        }
        let version = response["cordonVersion"].as_str().unwrap_or("unknown").to_owned();
        let protocol = response["protocolVersion"].as_u64().unwrap_or(0);
        let serves_resolved = response["forms"]
            .as_array()
            .is_some_and(|forms| forms.iter().any(|f| f == "exec_resolved"));
        if protocol != u64::from(RESOLVED_FORM_VERSION) || !serves_resolved {
            return Err(mismatch(version, protocol.to_string()));
        }
        self.facts = serde_json::from_value(response.clone())
            .map_err(|e| self.unexpected_because(&response, &e.to_string()))?;
        self.remote_version = version;
        Ok(())
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

    fn unexpected(&self, response: &Value) -> RemoteError {
        self.unexpected_because(response, "")
    }

    fn unexpected_because(&self, response: &Value, why: &str) -> RemoteError {
        RemoteError::Protocol {
            host: self.shared.host.clone(),
            message: format!("{}{why}", crate::executor::excerpt(&response.to_string()),),
        }
    }

    /// Sends one request and waits for the response with its id.
    async fn request(&self, mut message: Value) -> Result<Value, RemoteError> {
        if self.shared.lost.load(Ordering::SeqCst) {
            return Err(self.shared.lost_error());
        }
        let id = format!("c{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
        message["requestId"] = Value::String(id.clone());
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id.clone(), tx);
        let mut line = message.to_string();
        line.push('\n');
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
            Ok(response) => Ok(response),
            Err(_) => Err(self.shared.lost_error()),
        }
    }

    /// Ends session `id` there (`close_resolved`).
    pub async fn close_session(&self, session_id: u32) -> Result<String, RemoteError> {
        let request = json!({"type": "close_resolved", "sessionId": session_id});
        let response = self.request(request).await?;
        lock(&self.shared.live).remove(&session_id);
        match (response["type"].as_str(), response["outcome"]["status"].as_str()) {
            (Some("close_response"), Some("success")) => {
                Ok(response["outcome"]["content"][0]["text"].as_str().unwrap_or_default().into())
            }
            (Some("close_response"), Some("error")) | (Some("error"), _) => {
                let message = response["outcome"]["message"]
                    .as_str()
                    .or(response["message"].as_str())
                    .unwrap_or("an error without a message");
                Err(RemoteError::Remote { host: self.shared.host.clone(), message: message.into() })
            }
            _ => Err(self.unexpected(&response)),
        }
    }

    /// The sessions running there, as far as this side knows: id and what runs.
    pub fn live_sessions(&self) -> Vec<(u32, String)> {
        lock(&self.shared.live).iter().map(|(id, cmd)| (*id, cmd.clone())).collect()
    }

    /// Runs `exec` there (`exec_resolved`).
    pub async fn exec(&self, exec: &ResolvedExec) -> Result<ResolvedResult, RemoteError> {
        let argv: Vec<&std::ffi::OsString> = exec.argv.iter().map(|word| &word.0).collect();
        let label = cordon_policies::render_argv(&argv).text;
        let response = self.request(json!({"type": "exec_resolved", "exec": exec})).await?;
        let result = self.resolved(&response)?;
        if let Some(id) = result.session_id {
            lock(&self.shared.live).insert(id, label);
        }
        Ok(result)
    }

    /// Types `chars` into session `id` (or just polls) and collects (`write_resolved`).
    pub async fn write(&self, write: Write<'_>) -> Result<ResolvedResult, RemoteError> {
        let Write { session_id, chars, yield_time_ms, max_output_tokens } = write;
        let request = json!({"type": "write_resolved", "sessionId": session_id, "chars": chars,
            "yieldTimeMs": yield_time_ms, "maxOutputTokens": max_output_tokens});
        let response = self.request(request).await;
        let result = response.and_then(|r| self.resolved(&r));
        // An error about the session (it exited, it never existed) also means it is gone.
        let running = matches!(&result, Ok(r) if r.session_id.is_some())
            || matches!(&result, Err(RemoteError::Lost { .. }));
        if !running {
            lock(&self.shared.live).remove(&session_id);
        }
        result
    }

    fn resolved(&self, response: &Value) -> Result<ResolvedResult, RemoteError> {
        match (response["type"].as_str(), response["outcome"]["status"].as_str()) {
            (Some("resolved_response"), Some("success")) => {
                serde_json::from_value(response["outcome"]["result"].clone())
                    .map_err(|e| self.unexpected_because(response, &format!(": {e}")))
            }
            (Some("resolved_response"), Some("error")) | (Some("error"), _) => {
                let message = response["outcome"]["message"]
                    .as_str()
                    .or(response["message"].as_str())
                    .unwrap_or("an error without a message");
                Err(RemoteError::Remote { host: self.shared.host.clone(), message: message.into() })
            }
            _ => Err(self.unexpected(response)),
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

    /// What the far end's `doctor` says it cannot enforce for `policy` (its mode, with the
    /// network on or off). Empty for `danger-full-access`.
    pub fn gaps(&self, policy: &SandboxPolicy) -> Vec<Gap> {
        let mode = policy.mode();
        if mode == SandboxMode::DangerFullAccess {
            return Vec::new();
        }
        let report = &self.facts.doctor["modes"][mode.as_str()];
        let mut gaps: Vec<&Value> =
            report["not_enforced"].as_array().map(|a| a.iter().collect()).unwrap_or_default();
        if policy.has_network_access() {
            if let Some(more) = report["not_enforced_with_network"].as_array() {
                gaps.extend(more);
            }
        }
        gaps.iter()
            .map(|g| Gap {
                what: g["what"].as_str().unwrap_or("(unnamed)").to_owned(),
                // A gap the far end does not qualify is taken as required (fail closed).
                required: g["required"].as_bool().unwrap_or(true),
            })
            .collect()
    }

    /// The refusal when the far end cannot enforce `policy` and best effort was not asked
    /// for.
    pub fn refusal(&self, policy: &SandboxPolicy) -> Option<RemoteError> {
        let required: Vec<String> =
            self.gaps(policy).into_iter().filter(|g| g.required).map(|g| g.what).collect();
        (!required.is_empty()).then(|| RemoteError::CannotEnforce {
            host: self.shared.host.clone(),
            mode: policy.mode().as_str(),
            gaps: required,
        })
    }

    /// Ends the link: EOF to the far end (which ends every session there and exits), then
    /// waits a moment for ssh, and kills it if it lingers.
    pub async fn close(&self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        lock(&self.outbox).take();
        let child = lock(&self.child).take();
        if let Some(mut child) = child {
            let waited =
                tokio::time::timeout(std::time::Duration::from_secs(5), child.wait()).await;
            if waited.is_err() {
                let _ = child.kill().await;
            }
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
            let cancel = json!({"type": "cancel", "callRequestId": self.id});
            let _ = outbox.send(format!("{cancel}\n"));
        }
    }
}

/// One `write_resolved` call.
#[derive(Debug, Clone, Copy)]
pub struct Write<'a> {
    pub session_id: u32,
    pub chars: &'a str,
    pub yield_time_ms: Option<u64>,
    pub max_output_tokens: Option<usize>,
}

/// Request ids of the closes sent for abandoned calls: their answers interest nobody.
const ABANDONED: &str = "abandoned-";

/// Hands each response to the request waiting for it; at EOF marks the link lost, wakes every
/// waiter (they report the loss) and says which remote sessions ended with it. A response
/// whose caller went away (an MCP client cancelled the call) that left a session running
/// closes that session: nobody holds its id.
async fn read_responses(
    mut stdout: BufReader<tokio::process::ChildStdout>,
    shared: Arc<Shared>,
    outbox: mpsc::WeakUnboundedSender<String>,
) {
    let mut line = String::new();
    loop {
        line.clear();
        match stdout.read_line(&mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            eprintln!(
                "cordon: {}: not a protocol line: {}",
                shared.host,
                crate::executor::excerpt(line.trim_end())
            );
            continue;
        };
        let id = match &value["requestId"] {
            Value::String(id) => id.clone(),
            other => other.to_string(),
        };
        let waiter = lock(&shared.pending).remove(&id);
        match waiter {
            Some(waiter) => {
                if let Err(value) = waiter.send(value) {
                    if let Some(session_id) = value["outcome"]["result"]["sessionId"].as_u64() {
                        lock(&shared.live).remove(&u32::try_from(session_id).unwrap_or(0));
                        let close = json!({"type": "close_resolved", "sessionId": session_id,
                            "requestId": format!("{ABANDONED}{id}")});
                        if let Some(outbox) = outbox.upgrade() {
                            let _ = outbox.send(format!("{close}\n"));
                        }
                    }
                }
            }
            None if id.starts_with(ABANDONED) => {}
            None => eprintln!(
                "cordon: {}: unexpected message: {}",
                shared.host,
                crate::executor::excerpt(&value.to_string())
            ),
        }
    }
    shared.lost.store(true, Ordering::SeqCst);
    // A call in flight reports the loss to its caller; with none, this line is the only news.
    let calls_waiting = {
        let mut pending = lock(&shared.pending);
        let waiting = !pending.is_empty();
        pending.clear();
        waiting
    };
    if !shared.closing.load(Ordering::SeqCst) && !calls_waiting && !lock(&shared.live).is_empty() {
        eprintln!("cordon: {}", shared.lost_error());
    }
}

//! `cordon exec --host HOST -- CMD`: the orchestrator's whole flow here (rules, approval,
//! classification, the retry decision), each attempt run there as the resolved form and
//! polled until it exits, its output streamed here as it arrives.

use std::io::Write as _;
use std::time::{Duration, Instant};

use crate::capture::HeadTail;
use crate::classify::ExitKind;
use crate::orchestrator::{Approver, Orchestrator, Outcome};
use crate::request::ExecRequest;
use crate::resolved::{Note, ResolvedExec, WireBytes};
use crate::runner::{AttemptRun, RawAttempt, Runner};
use crate::spawn::{CAPTURE_BYTES, OutputMode};
use crate::terminal_filter::{self, EscapeFilter};

use super::link::{ANSWER_GRACE, RemoteLink, Write};
use super::on_host::OnHost;
use super::{RemoteError, attempt_for, wire_env};

/// How long each poll of a running remote command waits (output arrives in chunks this far
/// apart; an exit ends a poll at once).
const POLL_MS: u64 = 1000;
/// No result is cut: the far end's unread buffer (1 MiB per poll) is the only bound.
const WHOLE_OUTPUT_TOKENS: usize = 1 << 20;

/// Runs requests on the far end of `link` under `orchestrator`'s decisions.
pub struct RemoteExec<'a> {
    pub orchestrator: &'a Orchestrator,
    pub link: &'a RemoteLink,
}

/// [`RemoteExec::run`] by another name, for callers that like functions.
pub async fn run_remote(
    remote: RemoteExec<'_>,
    request: &ExecRequest,
    approver: &impl Approver,
) -> Result<Outcome, RemoteError> {
    remote.run(request, approver).await
}

impl RemoteExec<'_> {
    /// The orchestrator's flow with every attempt run remotely. The remote command's stdout
    /// and stderr arrive merged (on this process's stdout when streaming); its stdin is
    /// `/dev/null`.
    pub async fn run(
        &self,
        request: &ExecRequest,
        approver: &impl Approver,
    ) -> Result<Outcome, RemoteError> {
        let runner = RemoteRunner { link: self.link };
        let approver = OnHost { host: self.link.host(), inner: approver };
        self.orchestrator.run_on(request, &approver, &runner).await
    }
}

struct RemoteRunner<'a> {
    link: &'a RemoteLink,
}

impl Runner for RemoteRunner<'_> {
    type Error = RemoteError;

    async fn run_attempt(&self, run: AttemptRun<'_>) -> Result<RawAttempt, RemoteError> {
        // The far end writes directly.
        let AttemptRun { request, sandbox, approval, writes: _ } = run;
        let exec = ResolvedExec {
            argv: request.command.iter().map(|word| WireBytes::from(word.as_os_str())).collect(),
            cwd: request.cwd.clone(),
            env: wire_env(&request.env),
            sandbox: attempt_for(request, sandbox),
            approval,
            tty: false,
            yield_time_ms: Some(POLL_MS),
            max_output_tokens: Some(WHOLE_OUTPUT_TOKENS),
        };
        let started = Instant::now();
        let deadline = request.timeout.map(|timeout| started + timeout);
        let mut stdout = HeadTail::new(CAPTURE_BYTES);
        let finished = |exit, stdout| RawAttempt {
            exit,
            duration: started.elapsed(),
            stdout,
            stderr: HeadTail::new(CAPTURE_BYTES),
            network: None,
            // The far end's sandbox is the far end's to watch.
            moved_aside: Vec::new(),
            writes: crate::transaction::WriteMode::Direct,
            held_back: Vec::new(),
            not_searched: Vec::new(),
            writes_direct_because: None,
        };
        // The run's timeout holds whatever the link does: a far end gone silent (a frozen
        // connection) times out here like a command that runs too long.
        // Each answer is due within its poll and a grace period, timeout or not: a far end
        // that stays connected but never answers is no reason to wait for ever.
        let answer_within = ANSWER_GRACE + Duration::from_millis(POLL_MS);
        let exec = self.link.within(answer_within, self.link.exec(exec));
        let Some(mut result) = self.before(deadline, exec).await? else {
            self.link.abort().await;
            return Ok(finished(ExitKind::TimedOut, stdout));
        };
        // As for a local command: on a terminal, only what the escape filter keeps.
        let mut filter = EscapeFilter::for_stream(&std::io::stdout());
        let mut kept = Vec::new();
        loop {
            stdout.push(result.output.as_bytes());
            if request.output == OutputMode::Stream {
                let shown =
                    terminal_filter::shown(filter.as_mut(), result.output.as_bytes(), &mut kept);
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(shown).and_then(|()| out.flush());
            }
            if let Some(exit) = result.exit {
                if !exit.is_possible() {
                    return Err(RemoteError::Protocol {
                        host: self.link.host().to_owned(),
                        message: format!("an exit no process can have: {exit:?}"),
                    });
                }
                // The far end names a limit it stopped the command at; only one asked for
                // here counts (a peer's other claims are no reason to exit 122).
                let limit = result.notes.iter().find_map(|note| {
                    let Note::LimitExceeded { key, .. } = note else { return None };
                    request.sandbox.limits.get(*key).is_some().then_some(*key)
                });
                let exit = limit.map_or(ExitKind::from_remote(exit), ExitKind::LimitExceeded);
                return Ok(finished(exit, stdout));
            }
            let Some(session_id) = result.session_id else {
                return Err(RemoteError::Protocol {
                    host: self.link.host().to_owned(),
                    message: "a result with neither an exit code nor a session id".into(),
                });
            };
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                // The far end ends everything when the link drops: that is the kill.
                self.link.abort().await;
                return Ok(finished(ExitKind::TimedOut, stdout));
            }
            let wait =
                left.map_or(POLL_MS, |l| POLL_MS.min(l.as_millis().try_into().unwrap_or(POLL_MS)));
            let write = Write {
                session_id,
                chars: "",
                yield_time_ms: Some(wait),
                max_output_tokens: Some(WHOLE_OUTPUT_TOKENS),
            };
            let write = self.link.within(answer_within, self.link.write(write));
            let Some(next) = self.before(deadline, write).await? else {
                self.link.abort().await;
                return Ok(finished(ExitKind::TimedOut, stdout));
            };
            result = next;
        }
    }
}

impl RemoteRunner<'_> {
    /// `call`'s result, or `None` when `deadline` passed first.
    async fn before<T>(
        &self,
        deadline: Option<Instant>,
        call: impl Future<Output = Result<T, RemoteError>>,
    ) -> Result<Option<T>, RemoteError> {
        match deadline {
            None => call.await.map(Some),
            Some(deadline) => match tokio::time::timeout_at(deadline.into(), call).await {
                Ok(result) => result.map(Some),
                Err(_) => Ok(None),
            },
        }
    }
}

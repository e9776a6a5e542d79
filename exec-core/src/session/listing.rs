//! What the sessions run (`list_sessions`), closing one on request (`close_session`), and the
//! rule that a call whose caller went away takes its command with it.
//!
//! Why kill on abandonment: a caller that drops an `exec_command` call (an MCP client's
//! `notifications/cancelled`) never learns the session id, so nobody could reach or stop that
//! process again; a dropped `write_stdin` is the caller saying "stop this" about a session it
//! holds. The executor only drops calls at shutdown, where every session dies anyway.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::{SessionError, SessionManager};

/// What a session was started for.
#[derive(Debug, Clone)]
pub(super) struct About {
    pub cmd: String,
    pub tty: bool,
    pub started: Instant,
}

/// One line of `list_sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    pub session_id: u32,
    pub cmd: String,
    pub tty: bool,
    /// `None` while the process runs.
    pub exit_code: Option<i32>,
    pub running_for_secs: u64,
    /// A call is waiting on this session right now.
    pub busy: bool,
    /// The machine it runs on, for sessions on another one (`null` for this one): every
    /// listing has the same fields.
    pub host: Option<String>,
}

/// Terminates and forgets a session unless [`KillIfAbandoned::disarm`] ran first, i.e. when
/// the call future holding it is dropped before it returns.
pub(super) struct KillIfAbandoned<'a> {
    manager: &'a SessionManager,
    id: u32,
    armed: bool,
}

impl<'a> KillIfAbandoned<'a> {
    pub fn new(manager: &'a SessionManager, id: u32) -> Self {
        KillIfAbandoned { manager, id, armed: true }
    }

    /// The call returned its result: the session lives on.
    pub fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for KillIfAbandoned<'_> {
    fn drop(&mut self) {
        if self.armed {
            let entry = self.manager.table().sessions.remove(&self.id);
            if let Some(entry) = entry {
                entry.session.terminate();
            }
        }
    }
}

impl SessionManager {
    /// The live sessions, oldest first.
    pub(super) fn summaries(&self) -> Vec<SessionSummary> {
        let table = self.table();
        let mut sessions: Vec<SessionSummary> = table
            .sessions
            .iter()
            .map(|(id, entry)| SessionSummary {
                session_id: *id,
                cmd: entry.about.cmd.clone(),
                tty: entry.about.tty,
                exit_code: entry.session.exit_code(),
                running_for_secs: entry.about.started.elapsed().as_secs(),
                busy: entry.busy > 0,
                host: None,
            })
            .collect();
        sessions.sort_by_key(|s| s.session_id);
        sessions
    }

    /// Closes one session as a closing terminal would: SIGHUP to its process group, a short
    /// grace period, then SIGKILL. Calls waiting on it return what was printed until then.
    pub(super) async fn close_session(&self, id: u32) -> Result<(), SessionError> {
        let entry = self.table().sessions.remove(&id).ok_or(SessionError::UnknownSession(id))?;
        entry.session.hang_up();
        tokio::time::sleep(CLOSE_GRACE).await;
        entry.session.terminate();
        Ok(())
    }
}

/// How long a closed session gets between SIGHUP and SIGKILL.
const CLOSE_GRACE: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_and_a_remote_session_are_listed_with_the_same_fields() {
        let local = SessionSummary {
            session_id: 1,
            cmd: "sleep 9".into(),
            tty: false,
            exit_code: None,
            running_for_secs: 2,
            busy: false,
            host: None,
        };
        let remote = SessionSummary { host: Some("build:22".into()), ..local.clone() };
        let keys = |summary: &SessionSummary| -> Vec<String> {
            let value = serde_json::to_value(summary).unwrap();
            value.as_object().unwrap().keys().cloned().collect()
        };
        assert_eq!(keys(&local), keys(&remote));
        assert_eq!(serde_json::to_value(&local).unwrap()["host"], serde_json::Value::Null);
    }
}

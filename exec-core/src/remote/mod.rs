//! Running commands on another machine: the orchestrator decides here, the
//! command runs sandboxed there.
//!
//! - Transport: the system `ssh` client runs `cordon executor --serve-remote` on the other
//!   machine and the executor protocol flows over the channel's stdin/stdout ([`RemoteLink`]),
//!   so `~/.ssh/config`, agents, jump hosts and control masters all apply. No listening port.
//! - Split: approval policy, rules, the final argv, cwd, environment and output budget are
//!   decided here; the far end gets the resolved form (`exec_resolved`) and owns spawning, the
//!   sandbox it is told to apply, session ids, buffering and process lifecycle.
//! - Trust: the far end's `doctor` report travels back in `hello_response`; a policy it
//!   cannot enforce is refused here (exit 125) unless best effort was asked for
//!   ([`RemoteLink::refusal`]).
//! - Failure: when the link drops, the far end sees EOF and ends every session (nothing
//!   survives there); this side reports the sessions that were lost, to the call that finds
//!   out or, when none does, as a [`LinkEvent`] for the caller to print. A version mismatch
//!   is one error naming both versions.
//!
//! [`run_remote`] is `cordon exec --host` (one command, the orchestrator's whole flow with a
//! retry decided here); [`RemoteSessions`] is `cordon executor --connect` (a harness's
//! sessions).

mod exec;
mod gaps;
mod link;
mod on_host;
mod responses;
mod sessions;
mod ssh;
mod ssh_stderr;

use std::path::PathBuf;
use std::time::Duration;

use crate::launch::SandboxKind;
use crate::request::ExecRequest;
use crate::resolved::{SandboxAttempt, WireBytes};

pub use crate::remote_error::RemoteError;
pub use exec::{RemoteExec, run_remote};
pub use link::RemoteLink;
pub use responses::{LinkEvent, LinkEvents};
pub use sessions::RemoteSessions;

/// Where and how to reach the other machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTarget {
    /// `[user@]host`, as ssh takes it (a `Host` alias of `~/.ssh/config` works).
    pub destination: String,
    pub port: Option<u16>,
    /// `-o KEY=VALUE` options for ssh, in order.
    pub ssh_options: Vec<String>,
    /// The `cordon` to run there (a name looked up on the remote `PATH`, or a path).
    pub remote_cordon: String,
    /// The ssh client (`ssh` on `PATH` unless told otherwise).
    pub ssh_program: PathBuf,
    /// How long ssh's connection, its login and the far end's `hello` may take together
    /// ([`HELLO_TIMEOUT`] unless the caller chose another, or a shorter run timeout applies).
    pub hello_timeout: Duration,
}

/// The longest the far end may take to answer `hello`, ssh's connection and login included,
/// unless the caller says otherwise.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// The sandbox attempt the far end applies for `kind`: its own platform sandbox under the
/// request's sandbox (policy, strictness, mount-view requirement) as decided here, or none.
fn attempt_for(request: &ExecRequest, kind: SandboxKind) -> SandboxAttempt {
    match kind {
        SandboxKind::None => SandboxAttempt::None { limits: request.sandbox.limits },
        SandboxKind::Linux | SandboxKind::Seatbelt => {
            SandboxAttempt::Platform { request: Box::new(request.sandbox.clone()) }
        }
    }
}

/// The environment as it travels: every name and value, whatever its bytes.
fn wire_env(env: &[(std::ffi::OsString, std::ffi::OsString)]) -> Vec<(WireBytes, WireBytes)> {
    env.iter()
        .map(|(k, v)| (WireBytes::from(k.as_os_str()), WireBytes::from(v.as_os_str())))
        .collect()
}

impl RemoteTarget {
    /// Splits `[user@]HOST[:PORT]` (`[::1]:22` for an IPv6 address with a port).
    pub fn parse_host(spec: &str) -> Result<(String, Option<u16>), RemoteError> {
        let bad = || RemoteError::BadHost { spec: spec.to_owned() };
        let (user, rest) = match spec.rsplit_once('@') {
            Some((user, rest)) if !user.is_empty() => (Some(user), rest),
            Some(_) => return Err(bad()),
            None => (None, spec),
        };
        let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
            let (host, after) = inner.split_once(']').ok_or_else(bad)?;
            match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None if after.is_empty() => (host, None),
                None => return Err(bad()),
            }
        } else {
            match rest.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (rest, None),
            }
        };
        if host.is_empty() || host.starts_with('-') || host.contains(char::is_whitespace) {
            return Err(bad());
        }
        let port = port.map(|p| p.parse::<u16>().map_err(|_| bad())).transpose()?;
        let destination = match user {
            Some(user) => format!("{user}@{host}"),
            None => host.to_owned(),
        };
        Ok((destination, port))
    }

    /// The ssh client's arguments: no terminal (`-T`; the protocol is bytes), the options
    /// (the user's, then `extra_options`), the port, the destination, and the remote command
    /// line quoted for the remote shell.
    pub fn ssh_args(&self, extra_options: &[String]) -> Vec<String> {
        let mut args = vec!["-T".to_owned()];
        for option in self.ssh_options.iter().chain(extra_options) {
            args.extend(["-o".to_owned(), option.clone()]);
        }
        if let Some(port) = self.port {
            args.extend(["-p".to_owned(), port.to_string()]);
        }
        args.extend(["--".to_owned(), self.destination.clone()]);
        let words = [self.remote_cordon.as_str(), "executor", "--serve-remote"];
        // ssh hands the remote login shell one string: each word is quoted for it.
        let quoted: Vec<String> = words
            .iter()
            .map(|w| shlex::try_quote(w).map_or_else(|_| (*w).to_owned(), |q| q.into_owned()))
            .collect();
        args.push(quoted.join(" "));
        args
    }

    /// How the host is named in messages.
    pub fn label(&self) -> String {
        match self.port {
            Some(port) => format!("{}:{port}", self.destination),
            None => self.destination.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_split_into_destination_and_port() {
        let ok = |spec: &str| RemoteTarget::parse_host(spec).unwrap();
        assert_eq!(ok("build"), ("build".to_owned(), None));
        assert_eq!(ok("me@build:2222"), ("me@build".to_owned(), Some(2222)));
        assert_eq!(ok("[::1]:22"), ("::1".to_owned(), Some(22)));
        assert_eq!(ok("u@[fe80::1]"), ("u@fe80::1".to_owned(), None));
        for bad in ["", "@host", "host:port", "-oProxyCommand=x", "a b", "[::1", "h:70000"] {
            assert!(RemoteTarget::parse_host(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_remote_command_is_quoted_for_the_remote_shell() {
        let target = RemoteTarget {
            destination: "me@build".into(),
            port: Some(2222),
            ssh_options: vec!["IdentityFile=/k".into()],
            remote_cordon: "/opt/my cordon/cordon".into(),
            ssh_program: "ssh".into(),
            hello_timeout: HELLO_TIMEOUT,
        };
        assert_eq!(
            target.ssh_args(&["ServerAliveInterval=15".to_owned()]),
            [
                "-T",
                "-o",
                "IdentityFile=/k",
                "-o",
                "ServerAliveInterval=15",
                "-p",
                "2222",
                "--",
                "me@build",
                "'/opt/my cordon/cordon' executor --serve-remote"
            ]
        );
    }
}

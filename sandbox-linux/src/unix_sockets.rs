//! What keeps a sandboxed command from the UNIX socket files of the host's daemons — an ssh
//! agent, a container engine, an IDE's socket in /tmp, a socat bridge to the network — for
//! each network setting, and the seccomp program that goes with it.
//!
//! With the network off and a network namespace of its own (where the kernel grants one with
//! the mount view), the command has IP sockets on its own loopback only, and UNIX sockets are
//! kept as with a domain list; without one, seccomp refuses every call that addresses a peer.
//! With a domain list the command needs IP sockets (cordon's proxy listens on loopback in its
//! network namespace),
//! but a socket file on the host would be a way around the proxy: from Landlock ABI 9 only the
//! `--allow-unix-socket` ones can be connected to; below it seccomp refuses UNIX sockets
//! altogether, and a policy naming sockets is refused unless best effort was asked for.

use serde::Serialize;

#[cfg(target_os = "linux")]
use crate::error::HelperError;
#[cfg(target_os = "linux")]
use crate::seccomp::Network;

/// What keeps a sandboxed command from the UNIX socket files of the host's daemons (an ssh
/// agent, a container engine, an IDE's socket in /tmp, a socat bridge to the network).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnixSockets {
    /// Network off: seccomp refuses `connect()` and every call that addresses a peer.
    NoConnect,
    /// A domain list below Landlock ABI 9: seccomp refuses UNIX sockets (pairs of stream or
    /// seqpacket sockets stay).
    NoUnixSocket,
    /// A domain list with Landlock ABI 9: Landlock refuses connecting to any socket file but
    /// those of `--allow-unix-socket`.
    OnlyAllowed,
    /// Network on: every socket file that is not hidden (Landlock ABI 9 would scope them).
    Reachable,
    /// A domain list with `--allow-unix-socket` below Landlock ABI 9, under best effort: every
    /// socket file that is not hidden.
    ReachableDespiteDomainList,
}

#[cfg(target_os = "linux")]
impl UnixSockets {
    /// What applies to `policy` here, once Landlock is installed (`landlock_enforced`); an
    /// error when the policy names sockets that cannot be reached alone and best effort was
    /// not asked for.
    pub fn decide(
        policy: &cordon_policies::ResolvedPolicy,
        landlock_enforced: bool,
        private_network: bool,
        best_effort: bool,
    ) -> Result<UnixSockets, HelperError> {
        let landlock_abi = landlock_enforced.then(crate::sys::landlock_abi);
        let scoped = landlock_abi.is_some_and(|abi| abi >= 9);
        let network = match (policy.network_access, policy.network_domains.is_some()) {
            // In a network namespace of its own the network is off by construction: IP
            // sockets reach only the command's own loopback (a local test server works), and
            // what must stay closed is the host's UNIX sockets, as with a domain list. Named
            // sockets below Landlock ABI 9 keep the seccomp filter that refuses every connect
            // (they were never reachable with the network off).
            (false, _) if private_network && (scoped || policy.allowed_sockets.is_empty()) => {
                Network::Proxied
            }
            (false, _) => Network::Off,
            (true, false) => Network::On,
            (true, true) => Network::Proxied,
        };
        let unix_sockets =
            UnixSockets::for_network(network, landlock_abi, !policy.allowed_sockets.is_empty());
        if unix_sockets == UnixSockets::ReachableDespiteDomainList && !best_effort {
            return Err(HelperError::NotEnforced(format!(
                "--allow-unix-socket with a domain list needs Landlock ABI 9 to reach only the \
                 named sockets (this kernel: {}); below it the command could connect to every \
                 UNIX socket on the host, a way around the proxy. Use --network for a command \
                 that needs these sockets",
                landlock_abi.map_or_else(|| "no Landlock".to_owned(), |abi| format!("ABI {abi}"))
            )));
        }
        Ok(unix_sockets)
    }

    /// What applies for `network` with Landlock enforced at `landlock_abi`, when the policy
    /// names `allowed` sockets (the helper refuses the last case unless best effort).
    pub fn for_network(network: Network, landlock_abi: Option<i32>, allowed: bool) -> UnixSockets {
        match network {
            Network::Off => UnixSockets::NoConnect,
            Network::On => UnixSockets::Reachable,
            Network::Proxied if landlock_abi.is_some_and(|abi| abi >= 9) => {
                UnixSockets::OnlyAllowed
            }
            Network::Proxied if allowed => UnixSockets::ReachableDespiteDomainList,
            Network::Proxied => UnixSockets::NoUnixSocket,
        }
    }

    /// The seccomp program that goes with it.
    pub fn seccomp_network(self) -> Network {
        match self {
            UnixSockets::NoConnect => Network::Off,
            UnixSockets::NoUnixSocket => Network::Proxied,
            UnixSockets::OnlyAllowed
            | UnixSockets::Reachable
            | UnixSockets::ReachableDespiteDomainList => Network::On,
        }
    }
}

impl UnixSockets {
    /// One line for `doctor`.
    pub fn describe(self) -> &'static str {
        match self {
            UnixSockets::NoConnect => "seccomp refuses connect() (and bind, listen, accept)",
            UnixSockets::NoUnixSocket => {
                "seccomp refuses UNIX sockets (stream and seqpacket pairs stay); \
                 --allow-unix-socket needs Landlock ABI 9 (exit 125 unless --best-effort)"
            }
            UnixSockets::OnlyAllowed => {
                "Landlock ABI 9 refuses connecting to UNIX socket files but the \
                 --allow-unix-socket ones"
            }
            UnixSockets::Reachable => {
                "every UNIX socket file that is not hidden (Landlock ABI 9 would scope them)"
            }
            UnixSockets::ReachableDespiteDomainList => {
                "every UNIX socket file that is not hidden (--best-effort with \
                 --allow-unix-socket below Landlock ABI 9)"
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_domain_list_scopes_unix_sockets_by_landlock_or_refuses_them() {
        let proxied = |abi, allowed| UnixSockets::for_network(Network::Proxied, abi, allowed);
        assert_eq!(proxied(Some(9), true), UnixSockets::OnlyAllowed);
        assert_eq!(proxied(Some(7), false), UnixSockets::NoUnixSocket);
        assert_eq!(proxied(None, false), UnixSockets::NoUnixSocket);
        assert_eq!(proxied(Some(7), true), UnixSockets::ReachableDespiteDomainList);
        assert_eq!(UnixSockets::NoUnixSocket.seccomp_network(), Network::Proxied);
        assert_eq!(UnixSockets::OnlyAllowed.seccomp_network(), Network::On);
        assert_eq!(
            UnixSockets::for_network(Network::Off, Some(9), false).seccomp_network(),
            Network::Off
        );
    }
}

//! What this machine's sandbox enforces — the typed [`DoctorReport`] behind `cordon doctor`,
//! the gaps `cordon exec --json` and the executor announce — and the helper personality's
//! entry points, so the CLI reaches the platform crates only through this crate.

use std::collections::BTreeMap;

use cordon_policies::SandboxPolicy;
use serde::Serialize;

pub use cordon_sandbox_linux::is_helper_arg0;
#[cfg(target_os = "linux")]
pub use cordon_sandbox_linux::probe::Cause;
pub use cordon_sandbox_linux::report::Gap;

/// The helper personality (`codex-linux-sandbox`): never returns. A transaction of the
/// helper's own keeps its state as `cordon exec`'s do.
pub fn helper_main() -> ! {
    #[cfg(target_os = "linux")]
    let transactions = crate::transaction::helper_transactions();
    #[cfg(target_os = "linux")]
    cordon_sandbox_linux::run_main(transactions);
    #[cfg(not(target_os = "linux"))]
    cordon_sandbox_linux::run_main()
}

/// The protections a sandboxed run of `policy` would miss on this machine (probes run in
/// short-lived child processes). Empty for `danger-full-access` and off Linux.
pub fn predicted_gaps(policy: &SandboxPolicy) -> Vec<Gap> {
    #[cfg(target_os = "linux")]
    if !matches!(policy, SandboxPolicy::DangerFullAccess {}) {
        use cordon_sandbox_linux::seccomp::Network;
        let network = match (policy.has_network_access(), policy.network_domains().is_some()) {
            (false, _) => Network::Off,
            (true, false) => Network::On,
            (true, true) => Network::Proxied,
        };
        return cordon_sandbox_linux::report::gaps(
            &cordon_sandbox_linux::probe::probe().predicted_enforcement(network),
        );
    }
    let _ = policy;
    Vec::new()
}

/// Everything `cordon doctor` reports about the kernel and the modes.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    pub kernel: KernelReport,
    /// How a sandboxed command's processes are kept from outliving it here.
    #[cfg(target_os = "linux")]
    pub containment: &'static str,
    /// Why each missing mechanism is missing, and the fix.
    #[cfg(target_os = "linux")]
    pub causes: Vec<Cause>,
    /// Whether the default policy (workspace-write, network off) runs here.
    pub default_policy_enforceable: bool,
    pub modes: BTreeMap<&'static str, ModeReport>,
    pub protected_paths: &'static [&'static str],
    pub protected_paths_note: &'static str,
    pub hidden_paths: &'static [&'static str],
    /// What keeps a sandboxed command from the host's UNIX socket files, per network setting.
    #[cfg(target_os = "linux")]
    pub unix_sockets: UnixSocketsReport,
    pub seccomp_deny_list: DenyList,
}

/// Which mechanism keeps a sandboxed command from the host's UNIX socket files, for each
/// network setting (`doctor`).
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Serialize)]
pub struct UnixSocketsReport {
    pub network_off: &'static str,
    /// What "network off" is here: a network namespace of the command's own with only
    /// loopback (with the mount view), or seccomp refusing IP sockets (without it).
    pub network_off_is: &'static str,
    /// With a domain list (`--allow-domain`).
    pub domain_list: &'static str,
    pub network_on: &'static str,
}

/// What the kernel offers.
#[derive(Debug, Clone, Serialize)]
pub struct KernelReport {
    pub landlock_abi: i32,
    pub seccomp_filter: bool,
    pub unprivileged_user_namespaces: bool,
    /// `true`, or why the mount view cannot be built.
    pub mount_view: MountViewStatus,
    /// `dev.tty.legacy_tiocsti` (`None`: the knob does not exist).
    pub legacy_tiocsti: Option<bool>,
    pub root: bool,
}

/// `true` in JSON when available, else the reason as a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum MountViewStatus {
    Available(bool),
    Unavailable(String),
}

/// What one sandbox mode enforces here.
#[derive(Debug, Clone, Serialize)]
pub struct ModeReport {
    pub sandbox: bool,
    pub enforced: Vec<String>,
    pub not_enforced: Vec<Gap>,
    /// What only a policy with the network on misses (workspace-write).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_enforced_with_network: Option<Vec<Gap>>,
}

/// The seccomp deny list as shown to people.
#[derive(Debug, Clone, Serialize)]
pub struct DenyList {
    pub network_off: Vec<DenyEntry>,
    pub network_on_socket_rule: Vec<DenyEntry>,
    /// `socket` and `socketpair` with a domain list.
    pub domain_list_socket_rules: Vec<DenyEntry>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DenyEntry {
    pub syscall: &'static str,
    pub when: String,
    pub stops: &'static str,
}

impl DoctorReport {
    /// Probes this machine (forks short-lived children for the namespace probes).
    #[cfg(target_os = "linux")]
    pub fn gather() -> DoctorReport {
        use cordon_policies::{DEFAULT_HIDDEN_PATHS, DEFAULT_PROTECTED_PATHS, SandboxMode};
        use cordon_sandbox_linux::report::gaps;
        use cordon_sandbox_linux::seccomp::{Network, deny_rules};

        let probe = cordon_sandbox_linux::probe::probe();
        let predicted = probe.predicted_enforcement(Network::Off);
        let gaps_off = gaps(&predicted);
        let gaps_on = gaps(&probe.predicted_enforcement(Network::On));
        let network_only: Vec<Gap> =
            gaps_on.into_iter().filter(|g| !gaps_off.contains(g)).collect();
        let default_policy_enforceable = !gaps_off.iter().any(|g| g.required);
        let mode_report = |mode: SandboxMode| match mode {
            SandboxMode::DangerFullAccess => ModeReport {
                sandbox: false,
                enforced: Vec::new(),
                not_enforced: Vec::new(),
                not_enforced_with_network: None,
            },
            SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite => {
                let mut enforced = Vec::new();
                if predicted.landlock_enforced {
                    let what = match mode {
                        SandboxMode::ReadOnly => "no writes anywhere but /dev/null",
                        _ => "writes only under the writable roots (and /dev/null)",
                    };
                    enforced.push(format!("Landlock ABI {}: {what}", predicted.landlock_abi));
                    enforced.push(
                        "Landlock: no read right on hidden paths outside the writable roots, also \
                         when a program outside replaces or creates one during a run (read is \
                         granted entry by entry around them)"
                            .to_owned(),
                    );
                }
                if predicted.mount_view.is_ok() {
                    enforced.push(
                        "mount view: read-only mounts outside the writable roots, protected \
                         paths read-only, hidden paths covered, private /dev/shm"
                            .to_owned(),
                    );
                    if predicted.landlock_enforced && predicted.landlock_abi < 3 {
                        // Landlock before ABI 3 has no truncate right: only the read-only
                        // mounts stop truncate(2) outside the roots, so say where it comes from.
                        enforced.push(
                            "mount view: no truncating files outside the writable roots \
                             (Landlock ABI 3 would refuse it; this kernel's cannot)"
                                .to_owned(),
                        );
                    }
                }
                if predicted.seccomp {
                    enforced.push(
                        "seccomp: network off unless allowed; ptrace, namespaces, mount, \
                         keyrings, bpf, perf, TIOCSTI refused"
                            .to_owned(),
                    );
                }
                enforced.push("no_new_privs; every capability dropped".to_owned());
                ModeReport {
                    sandbox: true,
                    enforced,
                    not_enforced: gaps_off.clone(),
                    not_enforced_with_network: (mode == SandboxMode::WorkspaceWrite)
                        .then(|| network_only.clone()),
                }
            }
        };
        let entries = |network| {
            deny_rules(network)
                .into_iter()
                .map(|r| DenyEntry { syscall: r.syscall, when: r.condition, stops: r.reason })
                .collect::<Vec<_>>()
        };
        DoctorReport {
            kernel: KernelReport {
                landlock_abi: probe.landlock_abi,
                seccomp_filter: probe.seccomp_filter,
                unprivileged_user_namespaces: probe.unprivileged_user_namespaces,
                mount_view: match &probe.mount_view {
                    Ok(()) => MountViewStatus::Available(true),
                    Err(reason) => MountViewStatus::Unavailable(reason.to_string()),
                },
                legacy_tiocsti: probe.legacy_tiocsti,
                root: probe.is_root,
            },
            containment: probe.containment.as_str(),
            causes: probe.causes.clone(),
            default_policy_enforceable,
            modes: SandboxMode::ALL.iter().map(|m| (m.as_str(), mode_report(*m))).collect(),
            protected_paths: DEFAULT_PROTECTED_PATHS,
            protected_paths_note: "a protected path that does not exist stays creatable: making \
                                   it read-only would need a mount point on the host (cordon's \
                                   own CORDON_HOME is the exception: it is created, then kept \
                                   read-only)",
            hidden_paths: DEFAULT_HIDDEN_PATHS,
            unix_sockets: {
                let mechanism =
                    |network| probe.predicted_enforcement(network).unix_sockets.describe();
                // With the mount view the network off is a namespace of the command's own, whose
                // host sockets are kept as a domain list keeps them.
                let with_namespace = probe.mount_view.is_ok();
                UnixSocketsReport {
                    network_off: mechanism(if with_namespace {
                        Network::Proxied
                    } else {
                        Network::Off
                    }),
                    network_off_is: if with_namespace {
                        "a network namespace of the command's own with only loopback: local \
                         servers and 127.0.0.1 work inside, each launch has its own (one session \
                         cannot reach a server another started), nothing leaves"
                    } else {
                        "no network namespace (no mount view here): seccomp refuses IP sockets, \
                         so a local server on 127.0.0.1 cannot listen"
                    },
                    domain_list: mechanism(Network::Proxied),
                    network_on: mechanism(Network::On),
                }
            },
            seccomp_deny_list: DenyList {
                network_off: entries(Network::Off),
                network_on_socket_rule: entries(Network::On)
                    .into_iter()
                    .filter(|r| r.syscall == "socket")
                    .collect(),
                domain_list_socket_rules: entries(Network::Proxied)
                    .into_iter()
                    .filter(|r| r.syscall.starts_with("socket"))
                    .collect(),
            },
        }
    }
}

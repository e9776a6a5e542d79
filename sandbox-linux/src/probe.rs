//! Kernel probes for `cordon doctor`: what this machine can enforce, found without changing the
//! calling process (namespace probes run in a forked child).

use serde::Serialize;

use crate::mount_view::{self, MountPlan, MountView, NoMountView};
use crate::report::{Containment, Enforcement, UnixSockets};
use crate::seccomp::Network;
use crate::sys;

/// What the running kernel offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelProbe {
    /// Landlock ABI version (0: none).
    pub landlock_abi: i32,
    /// Whether seccomp filters can be installed.
    pub seccomp_filter: bool,
    /// Whether an unprivileged user namespace can be created.
    pub unprivileged_user_namespaces: bool,
    /// Whether this process can build a mount view (its own mount namespace).
    pub mount_view: Result<(), NoMountView>,
    /// How a sandboxed command's processes would be contained: PID + IPC namespaces when the
    /// mount view can be built and the kernel allows them in it, else a subreaper.
    pub containment: Containment,
    /// `dev.tty.legacy_tiocsti`: `Some(false)` means the kernel refuses TIOCSTI by itself;
    /// `None` means the knob does not exist (older kernels: TIOCSTI always works).
    pub legacy_tiocsti: Option<bool>,
    /// Whether the caller is root (capabilities to drop, bounding set droppable).
    pub is_root: bool,
    /// For each missing mechanism, why it is missing here and how to get it.
    pub causes: Vec<Cause>,
}

/// Why a mechanism is missing, and the fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cause {
    pub mechanism: &'static str,
    pub why: String,
    pub fix: String,
}

/// Probes the kernel. Forks short-lived children for the namespace probes, which therefore
/// need a process with one thread: elsewhere they report that they could not run.
pub fn probe() -> KernelProbe {
    let legacy_tiocsti =
        std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").ok().map(|v| v.trim() == "1");
    let unprivileged_user_namespaces =
        matches!(sys::in_forked_child(|| sys::unshare_probe(libc::CLONE_NEWUSER)), Ok(0));
    let mount_view = sys::in_forked_child(|| {
        let plan = MountPlan::default();
        match mount_view::enter(plan.network) {
            MountView::Entered => match mount_view::build(&plan, &[]) {
                // What the helper does next (containment::split): PID + IPC namespaces.
                Ok(_) => match sys::unshare_probe(libc::CLONE_NEWPID | libc::CLONE_NEWIPC) {
                    0 => 0,
                    _ => 3,
                },
                Err(_) => 2,
            },
            MountView::Unavailable(_) => 1,
        }
    });
    let containment = match mount_view {
        Ok(0) => Containment::PidNamespace,
        _ => Containment::Subreaper,
    };
    let mount_view = match mount_view {
        Ok(0 | 3) => Ok(()),
        Ok(1) => Err(NoMountView::Refused),
        Ok(_) => Err(NoMountView::NotSetUp),
        Err(crate::error::ForkError::Threaded) => Err(NoMountView::ProbeThreaded),
        Err(crate::error::ForkError::Fork(e) | crate::error::ForkError::Wait(e)) => {
            Err(NoMountView::ProbeFailed(e.raw_os_error().unwrap_or(libc::EIO)))
        }
    };
    let landlock = sys::landlock_version();
    let seccomp_filter = sys::seccomp_filter_supported();
    let is_root = nix::unistd::geteuid().is_root();
    let mut causes = Vec::new();
    if let Err(errno) = landlock {
        causes.push(landlock_cause(errno));
    }
    if !seccomp_filter {
        causes.push(Cause {
            mechanism: "seccomp",
            why: "this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER is off)".into(),
            fix: "use a kernel built with CONFIG_SECCOMP_FILTER=y (every distribution kernel is)"
                .into(),
        });
    }
    if mount_view.is_err() {
        let sysctls = if is_root { Sysctls::default() } else { Sysctls::read() };
        causes.push(user_namespace_cause(&sysctls));
    }
    KernelProbe {
        landlock_abi: landlock.unwrap_or(0),
        seccomp_filter,
        unprivileged_user_namespaces,
        mount_view,
        containment,
        legacy_tiocsti,
        is_root,
        causes,
    }
}

/// Why `landlock_create_ruleset` failed.
pub fn landlock_cause(errno: i32) -> Cause {
    if errno == libc::EOPNOTSUPP {
        Cause {
            mechanism: "landlock",
            why: "Landlock is compiled into this kernel but not enabled at boot".into(),
            fix: "add landlock to the kernel's lsm= parameter (e.g. \
                  lsm=landlock,lockdown,yama,integrity,apparmor,bpf in GRUB_CMDLINE_LINUX) and \
                  reboot"
                .into(),
        }
    } else {
        Cause {
            mechanism: "landlock",
            why: "this kernel has no Landlock (compiled out: CONFIG_SECURITY_LANDLOCK is off, or \
                  older than 5.13)"
                .into(),
            fix: "use a kernel 5.13 or newer built with CONFIG_SECURITY_LANDLOCK=y, or run with \
                  --best-effort to accept a sandbox without filesystem write rules"
                .into(),
        }
    }
}

/// The knobs that turn unprivileged user namespaces off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sysctls {
    /// `user.max_user_namespaces`.
    pub max_user_namespaces: Option<u64>,
    /// Debian's `kernel.unprivileged_userns_clone`.
    pub unprivileged_userns_clone: Option<u64>,
    /// Ubuntu's `kernel.apparmor_restrict_unprivileged_userns`.
    pub apparmor_restrict_unprivileged_userns: Option<u64>,
}

impl Sysctls {
    pub fn read() -> Sysctls {
        let read = |path: &str| std::fs::read_to_string(path).ok()?.trim().parse().ok();
        Sysctls {
            max_user_namespaces: read("/proc/sys/user/max_user_namespaces"),
            unprivileged_userns_clone: read("/proc/sys/kernel/unprivileged_userns_clone"),
            apparmor_restrict_unprivileged_userns: read(
                "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            ),
        }
    }
}

/// Why the caller gets no namespace (and so no mount view). Root needs no user namespace, so
/// pass it default (unknown) sysctls: then only the generic cause remains.
pub fn user_namespace_cause(sysctls: &Sysctls) -> Cause {
    let (why, fix) = if sysctls.max_user_namespaces == Some(0) {
        (
            "user namespaces are disabled by sysctl user.max_user_namespaces=0",
            "sysctl -w user.max_user_namespaces=15000 (or run cordon as root)",
        )
    } else if sysctls.unprivileged_userns_clone == Some(0) {
        (
            "unprivileged user namespaces are disabled by sysctl kernel.unprivileged_userns_clone=0",
            "sysctl -w kernel.unprivileged_userns_clone=1 (or run cordon as root)",
        )
    } else if sysctls.apparmor_restrict_unprivileged_userns == Some(1) {
        (
            "AppArmor restricts unprivileged user namespaces \
             (kernel.apparmor_restrict_unprivileged_userns=1)",
            "give cordon an AppArmor profile that allows userns (profile cordon \
             /path/to/cordon flags=(unconfined) { userns, }), or sysctl -w \
             kernel.apparmor_restrict_unprivileged_userns=0",
        )
    } else {
        (
            "the kernel refuses a new namespace to this process (a container without \
             CAP_SYS_ADMIN, a seccomp profile, or CONFIG_USER_NS off)",
            "run cordon as root, or allow unshare(CLONE_NEWUSER) in the container's seccomp \
             profile",
        )
    };
    Cause { mechanism: "mount view", why: why.into(), fix: fix.into() }
}

impl KernelProbe {
    /// What a sandboxed command would get here (the modes differ in what is writable, not in
    /// which mechanisms apply; the network setting changes which gaps matter).
    pub fn predicted_enforcement(&self, network: Network) -> Enforcement {
        Enforcement {
            landlock_abi: self.landlock_abi,
            landlock_enforced: self.landlock_abi > 0,
            mount_view: self.mount_view,
            mount_view_required: true,
            seccomp: self.seccomp_filter,
            no_new_privs: true,
            // Root can drop it directly; anyone else can inside the user namespace.
            bounding_set_dropped: self.is_root || self.mount_view.is_ok(),
            unix_sockets: UnixSockets::for_network(
                network,
                (self.landlock_abi > 0).then_some(self.landlock_abi),
                false,
            ),
            cordon_home_inside_root: None,
            cordon_executables_inside_roots: Vec::new(),
            containment: self.containment,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_name_the_knob_that_is_off() {
        assert!(landlock_cause(libc::EOPNOTSUPP).fix.contains("lsm="));
        assert!(landlock_cause(libc::ENOSYS).why.contains("compiled out"));
        let off = |s: Sysctls| user_namespace_cause(&s).why;
        assert!(
            off(Sysctls { max_user_namespaces: Some(0), ..Sysctls::default() })
                .contains("user.max_user_namespaces=0")
        );
        assert!(
            off(Sysctls { unprivileged_userns_clone: Some(0), ..Sysctls::default() })
                .contains("unprivileged_userns_clone=0")
        );
        assert!(
            off(Sysctls { apparmor_restrict_unprivileged_userns: Some(1), ..Sysctls::default() })
                .contains("AppArmor")
        );
        assert!(off(Sysctls::default()).contains("seccomp profile"));
    }
}

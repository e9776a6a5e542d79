//! Kernel probes for `cordon doctor`: what this machine can enforce, found without changing the
//! calling process (namespace probes run in a forked child).

use serde::Serialize;

use crate::mount_view::{self, MountPlan, MountView};
use crate::report::Enforcement;
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
    pub mount_view: Result<(), String>,
    /// `dev.tty.legacy_tiocsti`: `Some(false)` means the kernel refuses TIOCSTI by itself;
    /// `None` means the knob does not exist (older kernels: TIOCSTI always works).
    pub legacy_tiocsti: Option<bool>,
    /// Whether the caller is root (capabilities to drop, bounding set droppable).
    pub is_root: bool,
}

/// Probes the kernel. Forks short-lived children for the namespace probes.
pub fn probe() -> KernelProbe {
    let legacy_tiocsti =
        std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").ok().map(|v| v.trim() == "1");
    let unprivileged_user_namespaces =
        matches!(sys::in_forked_child(|| sys::unshare_probe(libc::CLONE_NEWUSER)), Ok(0));
    let mount_view = match sys::in_forked_child(|| match mount_view::enter(&MountPlan::default()) {
        Ok(MountView::Built) => 0,
        Ok(MountView::Unavailable(_) | MountView::Disabled) => 1,
        Err(_) => 2,
    }) {
        Ok(0) => Ok(()),
        Ok(1) => Err("the kernel refuses a mount namespace to this user".to_owned()),
        Ok(_) => Err("a mount namespace can be created but not set up".to_owned()),
        Err(e) => Err(format!("probe failed: {e}")),
    };
    KernelProbe {
        landlock_abi: sys::landlock_abi(),
        seccomp_filter: sys::seccomp_filter_supported(),
        unprivileged_user_namespaces,
        mount_view,
        legacy_tiocsti,
        is_root: nix::unistd::geteuid().is_root(),
    }
}

impl KernelProbe {
    /// What a sandboxed command would get here (the modes differ in what is writable, not in
    /// which mechanisms apply; the network setting changes which gaps matter).
    pub fn predicted_enforcement(&self, network: Network) -> Enforcement {
        Enforcement {
            landlock_abi: self.landlock_abi,
            landlock_enforced: self.landlock_abi > 0,
            mount_view: self.mount_view.clone(),
            mount_view_required: false,
            seccomp: self.seccomp_filter,
            no_new_privs: true,
            // Root can drop it directly; anyone else can inside the user namespace.
            bounding_set_dropped: self.is_root || self.mount_view.is_ok(),
            network_access: network == Network::On,
        }
    }
}

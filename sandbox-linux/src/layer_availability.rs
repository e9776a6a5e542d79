//! Whether a run can have write layers here, judged before its launch from the kernel's and
//! the file system's known refusals (no mount is tried: the caller is a threaded front end).

use std::path::{Path, PathBuf};

/// Why a run's writes cannot go through write layers here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoWriteLayer {
    #[error("the mount view is turned off (sandbox_mount_view = false)")]
    MountViewOff,
    #[error("this process cannot make a mount namespace: {0}")]
    NoNamespace(String),
    #[error("Linux {0} is older than 5.11, which an overlay in a user namespace needs")]
    OldKernel(String),
    #[error("this kernel has no overlay file system loaded (modprobe overlay)")]
    NoOverlay,
    #[error("CORDON_HOME ({}) lies inside the writable root {}", .home.display(), .root.display())]
    HomeInsideRoot { home: PathBuf, root: PathBuf },
    #[error("{} is on {kind}, which an overlay cannot keep its changes on", .dir.display())]
    UnusableFileSystem { dir: PathBuf, kind: &'static str },
    #[error("{} cannot be prepared: {error}", .dir.display())]
    Unreachable { dir: PathBuf, error: String },
    #[error("{} is not writable by this user", .dir.display())]
    NotWritable { dir: PathBuf },
    #[error(
        "this user namespace allows no PID namespace (user.max_pid_namespaces is 0), which a \
         write layer needs"
    )]
    NoPidNamespace,
    #[error(
        "the writable root {} is not a directory: a write layer covers directories only",
        .0.display()
    )]
    FileRoot(PathBuf),
    #[error(
        "this process runs under a seccomp filter (a container's, or a sandbox's), which may refuse \
         the namespaces a write layer needs (--writes transaction tries anyway)"
    )]
    Filtered,
}

/// Whether write layers can be made in `dir` (made by the run when missing: its nearest
/// existing ancestor is judged) and mounted by this process's helper, judged without making
/// or mounting anything: the checks are the kernel's and the file system's known refusals,
/// each cheap. A refusal these checks do not foresee fails the helper's setup instead, with
/// the kernel's reason.
pub fn availability(
    dir: &Path,
    writable: &[PathBuf],
    mount_view_off: bool,
) -> Result<(), NoWriteLayer> {
    if mount_view_off {
        return Err(NoWriteLayer::MountViewOff);
    }
    let pid_namespaces = std::fs::read_to_string("/proc/sys/user/max_pid_namespaces");
    if pid_namespaces.is_ok_and(|count| count.trim() == "0") {
        return Err(NoWriteLayer::NoPidNamespace);
    }
    // A file as a root would be written directly, beside the gate.
    let file = writable.iter().find(|root| root.exists() && !root.is_dir());
    if let Some(file) = file {
        return Err(NoWriteLayer::FileRoot(file.clone()));
    }
    let release = nix::sys::utsname::uname()
        .map(|name| name.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    if kernel_older_than(&release, (5, 11)) {
        return Err(NoWriteLayer::OldKernel(release));
    }
    let root = nix::unistd::geteuid().is_root();
    if seccomp_filtered() {
        return Err(NoWriteLayer::Filtered);
    }
    if root && !has_sys_admin() || !root && !user_namespaces_allowed() {
        let sysctls = if root { Default::default() } else { crate::probe::Sysctls::read() };
        return Err(NoWriteLayer::NoNamespace(crate::probe::user_namespace_cause(&sysctls).why));
    }
    let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !filesystems.lines().any(|line| line.split_whitespace().last() == Some("overlay")) {
        return Err(NoWriteLayer::NoOverlay);
    }
    let unreachable = |error: &dyn std::fmt::Display| NoWriteLayer::Unreachable {
        dir: dir.to_path_buf(),
        error: error.to_string(),
    };
    let existing = dir.ancestors().find(|dir| std::fs::symlink_metadata(dir).is_ok());
    let existing = existing.ok_or_else(|| unreachable(&"nothing of it exists"))?;
    let canonical = std::fs::canonicalize(existing).map_err(|e| unreachable(&e))?;
    if let Some(root) = writable.iter().find(|root| canonical.starts_with(root)) {
        return Err(NoWriteLayer::HomeInsideRoot { home: canonical, root: root.clone() });
    }
    let access = nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK;
    if nix::unistd::access(&canonical, access).is_err() {
        return Err(NoWriteLayer::NotWritable { dir: canonical });
    }
    let stat = rustix::fs::statfs(&canonical).map_err(|e| unreachable(&e))?;
    // The kernel refuses these as an upper layer (remote or stacked file systems), or they keep
    // no `user.*` attributes, which whiteouts in a user namespace are.
    #[allow(clippy::unnecessary_cast, reason = "f_type's width differs between targets")]
    let kind = match stat.f_type as i64 {
        0x794c_7630 => Some("overlayfs"),
        0x6969 => Some("NFS"),
        0x6573_5546 => Some("FUSE"),
        0xff53_4d42 | 0xfe53_4d42 => Some("SMB"),
        0x8584_58f6 => Some("ramfs"),
        0x0102_1994 if kernel_older_than(&release, (6, 6)) => Some("tmpfs before Linux 6.6"),
        _ => None,
    };
    if let Some(kind) = kind {
        return Err(NoWriteLayer::UnusableFileSystem { dir: canonical, kind });
    }
    Ok(())
}

/// Whether a release string (`6.1.0-18-amd64`) names a kernel older than `major.minor`; an
/// unreadable one counts as old.
fn kernel_older_than(release: &str, (major, minor): (u32, u32)) -> bool {
    let mut numbers =
        release.split(|c: char| !c.is_ascii_digit()).map(|part| part.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(have_major), Some(have_minor)) => (have_major, have_minor) < (major, minor),
        _ => true,
    }
}

/// A field of `/proc/self/status`.
fn status_field(name: &str) -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_owned())
}

/// Whether root here holds `CAP_SYS_ADMIN` (a container may take it away).
fn has_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    status_field("CapEff")
        .and_then(|hex| u64::from_str_radix(&hex, 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// Whether a seccomp filter confines this process (mode 2): what it refuses cannot be told
/// without trying.
fn seccomp_filtered() -> bool {
    status_field("Seccomp").is_some_and(|mode| mode == "2")
}

/// Whether no known switch turns unprivileged user namespaces off.
fn user_namespaces_allowed() -> bool {
    let sysctls = crate::probe::Sysctls::read();
    sysctls.max_user_namespaces != Some(0)
        && sysctls.unprivileged_userns_clone != Some(0)
        && sysctls.apparmor_restrict_unprivileged_userns != Some(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_are_compared_by_major_and_minor() {
        assert!(kernel_older_than("5.10.0-28-amd64", (5, 11)));
        assert!(!kernel_older_than("5.11.0", (5, 11)));
        assert!(!kernel_older_than("6.1.0-18-amd64", (5, 11)));
        assert!(kernel_older_than("6.1.0-18-amd64", (6, 6)));
        assert!(!kernel_older_than("6.18.1", (6, 6)));
        assert!(kernel_older_than("garbage", (5, 11)));
    }
}

//! Write layers: a writable root seen through an overlay whose upper directory is the caller's,
//! so that what the command writes there lands in that directory and reaches the root only when
//! the caller applies it after the run (`cordon_exec_core`'s apply, which judges every change).
//!
//! The caller names a directory outside every writable root (`--writes-to DIR`). For the `i`th
//! layered root the helper makes, before anything is mounted:
//!
//! ```text
//! DIR/i/root    a symbolic link whose target is the root's path (any bytes, as the kernel has it)
//! DIR/i/upper   the overlay's upper directory: every change of the run, and nothing else
//! DIR/i/work    the overlay's work directory
//! ```
//!
//! and mounts `overlay` on the root in its own mount namespace, with the root itself as the
//! lower layer, before the mount view copies the roots' mounts. The overlay is mounted with
//! `userxattr` (whiteouts and opaque directories marked with `user.overlay.*` attributes, which
//! is what an overlay in a user namespace needs, and what the apply reads), and its paths are
//! handed over as descriptors opened with `O_NOFOLLOW`, never spliced into the options text.
//! The overlay lives and dies with the command's mount namespace; nothing is mounted on the host.
//! It is `volatile`: the upper directory is not synced at every copy-up and at unmount, but once,
//! by the apply (each layer gets a fresh work directory, which `volatile` needs).
//!
//! `/tmp` and `$TMPDIR` are not layered: other programs of the user's share them while the
//! command runs, and a lower layer must not change under a mounted overlay. A root inside a
//! layered root is layered with it.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::mount::{MsFlags, mount};
use nix::sys::stat::Mode;

use crate::error::HelperError;

/// One writable root seen through an overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// The root (canonical), which is also the overlay's lower layer.
    pub root: PathBuf,
    /// The overlay's upper directory.
    pub upper: PathBuf,
    /// The overlay's work directory.
    pub work: PathBuf,
}

/// The roots that get a layer: every writable root but `/tmp` and `$TMPDIR` (`shared`), and
/// but one inside a root that gets a layer already.
pub fn layered_roots(roots: &[PathBuf], shared: &[PathBuf]) -> Vec<PathBuf> {
    let candidates: Vec<&PathBuf> = roots.iter().filter(|root| !shared.contains(root)).collect();
    let mut layered: Vec<PathBuf> = candidates
        .iter()
        .filter(|root| !candidates.iter().any(|outer| outer != *root && root.starts_with(outer)))
        .map(|root| (*root).clone())
        .collect();
    layered.sort();
    layered.dedup();
    layered
}

/// Makes `dir/i/{root,upper,work}` for each of `roots` (see the module docs). `dir` must exist,
/// be a directory of this user's, and lie outside every one of `writable` (else the command
/// could write its own upper directory and no change would pass through the apply).
pub fn prepare(
    dir: &Path,
    roots: &[PathBuf],
    writable: &[PathBuf],
) -> Result<Vec<Layer>, HelperError> {
    let fail =
        |what: String| move |source: std::io::Error| HelperError::WriteLayer { what, source };
    let canonical = std::fs::canonicalize(dir).map_err(fail(format!("{}", dir.display())))?;
    if let Some(root) = writable.iter().find(|root| canonical.starts_with(root)) {
        return Err(HelperError::Usage(format!(
            "--writes-to {}: lies inside the writable root {}, where the command could write its \
             own changes",
            dir.display(),
            root.display()
        )));
    }
    let meta = std::fs::symlink_metadata(&canonical).map_err(fail(format!("{}", dir.display())))?;
    if !meta.is_dir() {
        return Err(HelperError::Usage(format!("--writes-to {}: not a directory", dir.display())));
    }
    let mut layers = Vec::new();
    for (index, root) in roots.iter().enumerate() {
        let base = canonical.join(index.to_string());
        let make = |path: &Path| {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(path)
                .map_err(fail(format!("making {}", path.display())))
        };
        make(&base)?;
        let (upper, work) = (base.join("upper"), base.join("work"));
        make(&upper)?;
        make(&work)?;
        give_roots_mode(root, &upper)
            .map_err(fail(format!("giving {} the root's mode", upper.display())))?;
        std::os::unix::fs::symlink(root, base.join("root"))
            .map_err(fail(format!("naming the root in {}", base.display())))?;
        layers.push(Layer { root: root.clone(), upper, work });
    }
    Ok(layers)
}

/// The temporary directories' layers (`/tmp`, `$TMPDIR`: `temporary`, those of them that are
/// writable roots and lie in no other layered root), for a caller that keeps them in
/// `keep_in` (see the module docs): each upper directory is `keep_in/<the root's path,
/// escaped>/upper`, made on the first run and found again by later ones; each work directory
/// is fresh, `dir/t<i>/work`. A root whose name would be too long, or which holds `keep_in`
/// (an overlay's upper directory cannot lie in its lower one), keeps direct writes.
pub fn prepare_temporary(
    dir: &Path,
    keep_in: &Path,
    temporary: &[PathBuf],
    layered: &[PathBuf],
) -> Result<Vec<Layer>, HelperError> {
    let fail =
        |what: String| move |source: std::io::Error| HelperError::WriteLayer { what, source };
    let canonical_dir = std::fs::canonicalize(dir).map_err(fail(format!("{}", dir.display())))?;
    let keep_in = std::fs::canonicalize(keep_in).map_err(fail(format!("{}", keep_in.display())))?;
    let mut roots: Vec<&PathBuf> = temporary
        .iter()
        .filter(|root| !layered.iter().any(|outer| root.starts_with(outer)))
        .collect();
    roots.sort();
    roots.dedup();
    let outermost: Vec<&PathBuf> = roots
        .iter()
        .filter(|root| !roots.iter().any(|outer| outer != *root && root.starts_with(outer)))
        .copied()
        .collect();
    let mut layers = Vec::new();
    for (index, root) in outermost.into_iter().enumerate() {
        let name = escaped_name(root);
        if name.len() > 200 || keep_in.starts_with(root) {
            let shown = cordon_policies::abbreviate(&format!("{root:?}"), 200).text;
            crate::messages::warning(format_args!(
                "{shown} is written directly: its write layer could not be kept in {}",
                keep_in.display()
            ));
            continue;
        }
        let make = |path: &Path| {
            use std::os::unix::fs::DirBuilderExt;
            match std::fs::DirBuilder::new().mode(0o700).create(path) {
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                other => other.map_err(fail(format!("making {}", path.display()))),
            }
        };
        let base = keep_in.join(name);
        make(&base)?;
        let upper = base.join("upper");
        make(&upper)?;
        let meta =
            std::fs::symlink_metadata(&upper).map_err(fail(format!("{}", upper.display())))?;
        if !meta.is_dir() {
            return Err(HelperError::Usage(format!("{}: not a directory", upper.display())));
        }
        let work_base = canonical_dir.join(format!("t{index}"));
        make(&work_base)?;
        let work = work_base.join("work");
        make(&work)?;
        give_roots_mode(root, &upper).map_err(fail(format!("{}", upper.display())))?;
        layers.push(Layer { root: root.clone(), upper, work });
    }
    Ok(layers)
}

/// A root's path as one file name: `%` and `/` escaped.
fn escaped_name(root: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut name = String::from("root");
    for &byte in root.as_os_str().as_bytes() {
        match byte {
            b'/' | b'%' => name.push_str(&format!("%{byte:02X}")),
            // Bytes that are not printable ASCII are escaped too: the name stays text.
            0x21..=0x7e => name.push(char::from(byte)),
            _ => name.push_str(&format!("%{byte:02X}")),
        }
    }
    name
}

/// The overlay's top directory shows the upper directory's mode and owner: the root's, so the
/// command sees its root as it is (the owner where this caller may set it).
fn give_roots_mode(root: &Path, upper: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Ok(meta) = std::fs::metadata(root) else { return Ok(()) };
    let _ = std::os::unix::fs::lchown(upper, Some(meta.uid()), Some(meta.gid()));
    std::fs::set_permissions(upper, std::fs::Permissions::from_mode(meta.mode() & 0o7777))
}

/// Mounts every layer's overlay on its root, in this process's own mount namespace (made
/// private already), outer roots first (a workspace under `/tmp` is mounted on top of `/tmp`'s
/// layer). Every root, upper and work directory is opened before the first mount, so each
/// overlay's lower layer is the host's directory, never another layer; each is named to the
/// kernel as `/proc/self/fd/N`: no byte of a path reaches the options text, where `,` `:` and
/// `\` mean something. Where a layer is mounted is looked up after the outer ones are in
/// place, following no link.
pub(crate) fn mount_layers(layers: &[Layer]) -> Result<(), HelperError> {
    let mut ordered: Vec<&Layer> = layers.iter().collect();
    ordered.sort_by_key(|layer| layer.root.components().count());
    let opened = ordered
        .into_iter()
        .map(|layer| open_layer(layer).map(|fds| (layer, fds)))
        .collect::<Result<Vec<_>, _>>()?;
    for (layer, (lower, upper, work)) in opened {
        mount_layer(layer, &lower, &upper, &work)?;
    }
    Ok(())
}

fn layer_error<'a>(layer: &'a Layer, what: &'a str) -> impl FnOnce(nix::Error) -> HelperError + 'a {
    let what = format!("{what} for {}", layer.root.display());
    move |source: nix::Error| HelperError::WriteLayer { what, source: source.into() }
}

fn open_layer(layer: &Layer) -> Result<(OwnedFd, OwnedFd, OwnedFd), HelperError> {
    let open = |path: &Path| -> nix::Result<OwnedFd> {
        nix::fcntl::open(
            path,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
    };
    Ok((
        open(&layer.root).map_err(layer_error(layer, "opening the root"))?,
        open(&layer.upper).map_err(layer_error(layer, "opening the upper directory"))?,
        open(&layer.work).map_err(layer_error(layer, "opening the work directory"))?,
    ))
}

fn mount_layer(
    layer: &Layer,
    lower: &OwnedFd,
    upper: &OwnedFd,
    work: &OwnedFd,
) -> Result<(), HelperError> {
    let target = rustix::fs::openat2(
        rustix::fs::CWD,
        &layer.root,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
        rustix::fs::ResolveFlags::NO_SYMLINKS | rustix::fs::ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(|errno| {
        let error = nix::Error::from_raw(errno.raw_os_error());
        layer_error(layer, "finding where to mount the write layer")(error)
    })?;
    let target = format!("/proc/self/fd/{}", target.as_raw_fd());
    let options = format!(
        "lowerdir=/proc/self/fd/{},upperdir=/proc/self/fd/{},workdir=/proc/self/fd/{},userxattr,\
         volatile",
        lower.as_raw_fd(),
        upper.as_raw_fd(),
        work.as_raw_fd()
    );
    match mount(
        Some("overlay"),
        target.as_str(),
        Some("overlay"),
        MsFlags::empty(),
        Some(options.as_str()),
    ) {
        Err(nix::Error::ENODEV) => Err(layer_error(
            layer,
            "mounting the write layer (this kernel has no overlay file system loaded: modprobe overlay)",
        )(nix::Error::ENODEV)),
        other => other.map_err(layer_error(layer, "mounting the write layer")),
    }
}

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

    fn paths(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn kernel_releases_are_compared_by_major_and_minor() {
        assert!(kernel_older_than("5.10.0-28-amd64", (5, 11)));
        assert!(!kernel_older_than("5.11.0", (5, 11)));
        assert!(!kernel_older_than("6.1.0-18-amd64", (5, 11)));
        assert!(kernel_older_than("6.1.0-18-amd64", (6, 6)));
        assert!(!kernel_older_than("6.18.1", (6, 6)));
        assert!(kernel_older_than("garbage", (5, 11)));
    }

    #[test]
    fn tmp_roots_and_roots_inside_a_layered_one_get_no_layer_of_their_own() {
        let roots = paths(&["/tmp", "/home/u/ws", "/home/u/ws/sub", "/tmp/ws2", "/var/tmp/t"]);
        let shared = paths(&["/tmp", "/var/tmp/t"]);
        assert_eq!(layered_roots(&roots, &shared), paths(&["/home/u/ws", "/tmp/ws2"]));
    }

    #[test]
    fn a_directory_inside_a_writable_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let inside = root.join("layers");
        std::fs::create_dir(&inside).unwrap();
        let roots = [root];
        let err = prepare(&inside, &roots, &roots).unwrap_err();
        assert!(err.to_string().contains("lies inside the writable root"), "{err}");
    }

    #[test]
    fn each_root_gets_its_upper_work_and_a_link_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let layers = prepare(dir.path(), &paths(&["/a/b", "/c"]), &paths(&["/a/b", "/c"])).unwrap();
        assert_eq!(layers.len(), 2);
        let base = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(std::fs::read_link(base.join("1/root")).unwrap(), PathBuf::from("/c"));
        assert!(base.join("0/upper").is_dir() && base.join("0/work").is_dir());
        // A second run into the same directory is refused rather than mixed with the first.
        assert!(prepare(dir.path(), &paths(&["/a/b"]), &[]).is_err());
    }
}

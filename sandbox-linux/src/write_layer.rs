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
//! `/tmp` and `$TMPDIR` (unless the policy names one as a root itself) are never applied: with
//! `--temporary-in DIR` each gets a layer whose upper directory lives on in DIR, the caller's
//! per-workspace state, and without it they are written directly. A preset's cache is written
//! directly. A root inside a layered root is layered with it; layers are mounted outer first.

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
    /// Allowed UNIX sockets under the root: a socket seen through an overlay cannot be
    /// connected to, so each is bound over its place in the layer from the host's.
    pub sockets: Vec<PathBuf>,
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
        layers.push(Layer { root: root.clone(), upper, work, sockets: Vec::new() });
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
        if keep_in.starts_with(root) {
            // The command could write its own kept layer: never kept there, and never
            // written directly (a transaction's roots are judged by the gate, or refused).
            return Err(HelperError::Usage(format!(
                "--temporary-in {}: lies inside {}, which the command can write",
                keep_in.display(),
                root.display()
            )));
        }
        let make = |path: &Path| {
            use std::os::unix::fs::DirBuilderExt;
            match std::fs::DirBuilder::new().mode(0o700).create(path) {
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                other => other.map_err(fail(format!("making {}", path.display()))),
            }
        };
        let upper = kept_upper(&keep_in, root);
        make(upper.parent().unwrap_or(&keep_in))?;
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
        layers.push(Layer { root: root.clone(), upper, work, sockets: Vec::new() });
    }
    Ok(layers)
}

/// Where the upper directory of temporary root `root` kept in `keep_in` lies.
pub fn kept_upper(keep_in: &Path, root: &Path) -> PathBuf {
    keep_in.join(escaped_name(root)).join("upper")
}

/// A root's path as one file name: `%` and `/` escaped; past 200 bytes (a file name may have
/// 255), the path's SHA-256 instead, which no escaped name can be.
fn escaped_name(root: &Path) -> String {
    use sha2::Digest;
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
    if name.len() <= 200 {
        return name;
    }
    let digest = sha2::Sha256::digest(root.as_os_str().as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256-{hex}")
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
        .map(|layer| open_layer(layer).map(|(fds, sockets)| (layer, fds, sockets)))
        .collect::<Result<Vec<_>, _>>()?;
    for (layer, (lower, upper, work), sockets) in opened {
        mount_layer(layer, &lower, &upper, &work)?;
        for (path, socket) in sockets {
            bind_socket(layer, &path, &socket)?;
        }
    }
    Ok(())
}

/// Whether `fd` is a UNIX socket's inode.
fn is_socket(fd: &OwnedFd) -> bool {
    nix::sys::stat::fstat(fd).is_ok_and(|stat| {
        nix::sys::stat::SFlag::from_bits_truncate(stat.st_mode) & nix::sys::stat::SFlag::S_IFMT
            == nix::sys::stat::SFlag::S_IFSOCK
    })
}

/// Binds the host's `socket` (opened before any layer was mounted, and a socket) over `path`
/// in the layer, where a socket must be too (the one the layer shows from the host): a bind
/// onto anything else is not made.
fn bind_socket(layer: &Layer, path: &Path, socket: &OwnedFd) -> Result<(), HelperError> {
    let target = rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC | rustix::fs::OFlags::NOFOLLOW,
        rustix::fs::Mode::empty(),
        rustix::fs::ResolveFlags::NO_SYMLINKS | rustix::fs::ResolveFlags::NO_MAGICLINKS,
    )
    .ok();
    // What the layer shows there instead of a socket (nothing, a directory the command made
    // in an earlier run) gets no bind: the socket stays out of reach, as an absent one does.
    let Some(target) = target.filter(is_socket) else { return Ok(()) };
    let source = format!("/proc/self/fd/{}", socket.as_raw_fd());
    let target = format!("/proc/self/fd/{}", target.as_raw_fd());
    mount(Some(source.as_str()), target.as_str(), None::<&str>, MsFlags::MS_BIND, None::<&str>)
        .map_err(layer_error(layer, "binding an allowed socket into the write layer"))
}

fn layer_error<'a>(layer: &'a Layer, what: &'a str) -> impl FnOnce(nix::Error) -> HelperError + 'a {
    let what = format!("{what} for {}", layer.root.display());
    move |source: nix::Error| HelperError::WriteLayer { what, source: source.into() }
}

type OpenLayer = (OwnedFd, OwnedFd, OwnedFd);

fn open_layer(layer: &Layer) -> Result<(OpenLayer, Vec<(PathBuf, OwnedFd)>), HelperError> {
    let open = |path: &Path| -> nix::Result<OwnedFd> {
        nix::fcntl::open(
            path,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
    };
    let sockets = layer
        .sockets
        .iter()
        .filter_map(|path| {
            let flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
            // A socket that is not there (yet) stays out of reach, as anywhere else; what is
            // there but not a socket (a directory, a file, a link) is never bound: it would
            // be the host's, written past the layer.
            let fd = nix::fcntl::open(path, flags, Mode::empty()).ok()?;
            is_socket(&fd).then(|| (path.clone(), fd))
        })
        .collect();
    let fds = (
        open(&layer.root).map_err(layer_error(layer, "opening the root"))?,
        open(&layer.upper).map_err(layer_error(layer, "opening the upper directory"))?,
        open(&layer.work).map_err(layer_error(layer, "opening the work directory"))?,
    );
    Ok((fds, sockets))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
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

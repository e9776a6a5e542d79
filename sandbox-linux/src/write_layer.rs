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
        // The overlay's top directory shows the upper directory's mode and owner: the root's,
        // so the command sees its root as it is (the owner where this caller may set it).
        if let Ok(meta) = std::fs::metadata(root) {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let _ = std::os::unix::fs::lchown(&upper, Some(meta.uid()), Some(meta.gid()));
            std::fs::set_permissions(&upper, std::fs::Permissions::from_mode(meta.mode() & 0o7777))
                .map_err(fail(format!("giving {} the root's mode", upper.display())))?;
        }
        std::os::unix::fs::symlink(root, base.join("root"))
            .map_err(fail(format!("naming the root in {}", base.display())))?;
        layers.push(Layer { root: root.clone(), upper, work });
    }
    Ok(layers)
}

/// Mounts `layer`'s overlay on its root, in this process's own mount namespace (made private
/// already). The root, upper and work directories are opened first and named to the kernel as
/// `/proc/self/fd/N`: no byte of a path reaches the options text, where `,` `:` and `\` mean
/// something.
pub(crate) fn mount_layer(layer: &Layer) -> Result<(), HelperError> {
    let fail = |what: &str| {
        let what = format!("{what} for {}", layer.root.display());
        move |source: nix::Error| HelperError::WriteLayer { what, source: source.into() }
    };
    let open = |path: &Path| -> nix::Result<OwnedFd> {
        nix::fcntl::open(
            path,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
    };
    let lower = open(&layer.root).map_err(fail("opening the root"))?;
    let upper = open(&layer.upper).map_err(fail("opening the upper directory"))?;
    let work = open(&layer.work).map_err(fail("opening the work directory"))?;
    let options = format!(
        "lowerdir=/proc/self/fd/{},upperdir=/proc/self/fd/{},workdir=/proc/self/fd/{},userxattr,\
         volatile",
        lower.as_raw_fd(),
        upper.as_raw_fd(),
        work.as_raw_fd()
    );
    match mount(
        Some("overlay"),
        &layer.root,
        Some("overlay"),
        MsFlags::empty(),
        Some(options.as_str()),
    ) {
        Err(nix::Error::ENODEV) => Err(fail(
            "mounting the write layer (this kernel has no overlay file system loaded: modprobe overlay)",
        )(nix::Error::ENODEV)),
        other => other.map_err(fail("mounting the write layer")),
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

//! Which hidden paths the mount view covers, and where: each existing path the caller could
//! reach gets a stand-in, once, unless a hidden directory already covers its real place.
//!
//! A catalogue entry often lies in another (`$XDG_RUNTIME_DIR/bus` in `$XDG_RUNTIME_DIR`, a key
//! the user hides inside `~/.ssh`): once the directory is covered, the path inside it no longer
//! exists and a second mount there would fail, so it is left out — judged by real places
//! (symbolic links resolved), so that a path that only *looks* inside a hidden directory but
//! leads elsewhere is still covered, at the place it leads to.

use std::path::{Path, PathBuf};

use crate::listings::Listings;

/// The hidden paths to cover, decided before anything is mounted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct HiddenPlan {
    /// Directories: covered with an empty read-only tmpfs.
    pub dirs: Vec<PathBuf>,
    /// Anything else (files, sockets, devices): covered with `/dev/null`.
    pub files: Vec<PathBuf>,
    /// Allowed UNIX sockets inside hidden directories, exposed through their cover.
    pub exposed_sockets: Vec<PathBuf>,
}

/// An existing, reachable hidden path.
struct Found {
    path: PathBuf,
    real: PathBuf,
    dir: bool,
}

/// Plans the stand-ins for `paths` (absolute), keeping `allowed_sockets` reachable.
pub(crate) fn plan(
    paths: &[PathBuf],
    allowed_sockets: &[PathBuf],
    listings: &Listings,
) -> HiddenPlan {
    let mut found: Vec<Found> = Vec::new();
    for path in paths {
        // Most of the catalogue is not there: its directory's listing says so.
        if !listings.exists(path) {
            continue;
        }
        let Ok(meta) = std::fs::metadata(path) else {
            // A dangling or missing path has nothing to hide.
            continue;
        };
        // What this caller cannot reach anyway needs no stand-in (for an unprivileged caller:
        // other users' secrets, /etc/shadow), which saves a mount each.
        if !reachable(path, &meta) {
            continue;
        }
        let Ok(real) = std::fs::canonicalize(path) else { continue };
        if let Some(other) = found.iter_mut().find(|other| other.real == real) {
            // One place named twice: covered under the name that is the place itself, never
            // under a link to it (a link can be swapped before the mount, and the place would
            // stay uncovered).
            if other.path != other.real && *path == real {
                other.path = path.clone();
            }
            continue;
        }
        found.push(Found { path: path.clone(), real, dir: meta.is_dir() });
    }
    let covered = |item: &Found| {
        found.iter().any(|dir| dir.dir && item.real != dir.real && item.real.starts_with(&dir.real))
    };
    let kept: Vec<&Found> = found.iter().filter(|item| !covered(item)).collect();
    // A path spelled inside a covered directory would vanish with the cover: it is covered
    // at its real place.
    let target = |item: &Found| {
        let inside = kept
            .iter()
            .any(|dir| dir.dir && dir.path != item.path && item.path.starts_with(&dir.path));
        if inside { item.real.clone() } else { item.path.clone() }
    };
    let dirs: Vec<PathBuf> = kept.iter().filter(|item| item.dir).map(|item| target(item)).collect();
    let files = kept.iter().filter(|item| !item.dir).map(|item| target(item)).collect();
    let exposed_sockets = allowed_sockets
        .iter()
        .filter(|p| {
            use std::os::unix::fs::FileTypeExt;
            std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket())
        })
        .filter(|p| dirs.iter().any(|dir| p.starts_with(dir) && *p != dir))
        .cloned()
        .collect();
    HiddenPlan { dirs, files, exposed_sockets }
}

/// Whether the caller could use `path` without the sandbox's help: search a directory, connect
/// to a socket (which takes write permission), read anything else.
fn reachable(path: &Path, meta: &std::fs::Metadata) -> bool {
    use nix::unistd::AccessFlags;
    use std::os::unix::fs::FileTypeExt;
    let mode = if meta.is_dir() {
        AccessFlags::X_OK
    } else if meta.file_type().is_socket() {
        AccessFlags::W_OK
    } else {
        AccessFlags::R_OK
    };
    nix::unistd::access(path, mode).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_path_inside_a_hidden_directory_is_covered_with_it_or_where_it_really_is() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let (a, b) = (root.join("a"), root.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(a.join("key"), "k").unwrap();
        std::fs::write(b.join("x"), "x").unwrap();
        std::os::unix::fs::symlink(&b, a.join("link")).unwrap();
        std::os::unix::fs::symlink(b.join("x"), root.join("alias")).unwrap();
        let hidden = [
            a.clone(),
            a.join("key"),
            a.join("link/x"),
            root.join("alias"),
            root.join("missing"),
            a.join("missing"),
        ];
        let planned = plan(&hidden, &[], &Listings::new());
        assert_eq!(
            planned,
            HiddenPlan { dirs: vec![a.clone()], files: vec![b.join("x")], exposed_sockets: vec![] }
        );
        // A directory inside another hidden one is covered with it too.
        let nested = plan(&[a.join("link"), a.clone(), b.clone()], &[], &Listings::new());
        assert_eq!(nested.dirs, vec![b, a]);
        assert!(nested.files.is_empty());
    }

    /// One place named twice, first through a link (another hidden name that a sandboxed run
    /// made a link to it): it is covered under its own name, which no one can swap.
    #[test]
    fn a_place_named_through_a_link_first_is_covered_under_its_own_name() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let ticket = root.join("krb5cc_0");
        std::fs::write(&ticket, "ticket").unwrap();
        std::os::unix::fs::symlink(&ticket, root.join("tmux-0")).unwrap();
        let planned = plan(&[root.join("tmux-0"), ticket.clone()], &[], &Listings::new());
        assert_eq!(planned.files, vec![ticket]);
    }

    #[test]
    fn an_allowed_socket_in_a_hidden_directory_is_exposed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let dir = root.join("run");
        std::fs::create_dir_all(dir.join("engine")).unwrap();
        let socket = dir.join("engine/engine.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let planned = plan(
            &[dir.clone(), dir.join("engine")],
            std::slice::from_ref(&socket),
            &Listings::new(),
        );
        assert_eq!(
            planned,
            HiddenPlan { dirs: vec![dir], files: vec![], exposed_sockets: vec![socket] }
        );
    }
}

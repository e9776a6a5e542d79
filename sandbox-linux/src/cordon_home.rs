//! cordon's own state directory and executables inside a writable root.
//!
//! `$CORDON_HOME` (default `~/.cordon`) holds the config and the allow rules that decide the
//! next command's sandbox, so it must never be writable from inside one — whether or not it
//! exists yet: with the workspace at `$HOME`, a command could otherwise create `~/.cordon` and
//! plant `sandbox_mode = "danger-full-access"`. A missing directory cannot be made read-only
//! (a read-only bind needs something to bind), so the helper creates it, empty and private
//! (0700), before it confines anything, then adds it to the protected paths. Only the mount
//! view can keep a directory inside a writable root read-only, so when this applies and the
//! mount view cannot be built the sandbox counts as not set up (see `report::gaps`).

use std::path::{Path, PathBuf};

use cordon_policies::ResolvedPolicy;

use crate::error::HelperError;

/// cordon's run state under `$CORDON_HOME`, never read or written from a sandbox.
const RUN_STATE: [&str; 4] = ["runs", "kept", "temporary", "trash"];

/// When `cordon_home` lies inside a writable root (judged by its nearest existing ancestor,
/// canonicalized): creates it if missing, adds it to the policy's protected paths and returns
/// its canonical path. `None` when it lies outside every root (read-only there already).
pub(crate) fn protect(
    cordon_home: Option<&Path>,
    policy: &mut ResolvedPolicy,
) -> Result<Option<PathBuf>, HelperError> {
    let Some(home) = cordon_home.filter(|home| home.is_absolute()) else { return Ok(None) };
    let target = canonical_even_if_missing(home);
    // Other runs' layers, what they held back, each workspace's `/tmp` and what upkeep moved
    // aside: no command reads another run's writes (nor locks another workspace's `/tmp`).
    // (A transactional run's cordon makes all four before the launch.)
    for state in RUN_STATE {
        policy.hidden_paths.push(target.join(state));
    }
    // The runs' write layers, what they held back and the workspaces' `/tmp` layers: a root
    // inside one (`--add-dir` of it) would let a command plant a run for the next cordon to
    // apply, a record for `cordon held` to take in, or another workspace's `/tmp`.
    for state in RUN_STATE {
        let dir = target.join(state);
        if policy.writable_roots.iter().any(|root| root.starts_with(&dir)) {
            std::os::unix::fs::DirBuilderExt::mode(
                std::fs::DirBuilder::new().recursive(true),
                0o700,
            )
            .create(&dir)
            .map_err(|source| HelperError::CordonHome { path: dir.clone(), source })?;
            policy.protected_paths.push(dir.display().to_string());
        }
    }
    if !policy.writable_roots.iter().any(|root| target.starts_with(root)) {
        return Ok(None);
    }
    if std::fs::symlink_metadata(&target).is_err() {
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&target)
            .map_err(|source| HelperError::CordonHome { path: target.clone(), source })?;
    }
    policy.protected_paths.push(target.display().to_string());
    Ok(Some(target))
}

/// The executables in `executables` (cordon's own files and the paths they are started by)
/// that lie inside a writable root, and every symbolic link on the way to them: each file is
/// added to the policy's protected paths, so the mount view binds it read-only (a rename over
/// it or an unlink is refused while the binding stands) and pins the directories between it and
/// its root. A symbolic link cannot be bound itself (a bind follows it), so the directory
/// holding it is protected instead. Returns what was protected; missing paths are skipped
/// (there is nothing to start there).
pub(crate) fn protect_executables(
    executables: &[PathBuf],
    policy: &mut ResolvedPolicy,
) -> Vec<PathBuf> {
    let mut protected = Vec::new();
    for path in executables.iter().filter(|path| path.is_absolute()) {
        let Some(hops) = path_hops(path) else { continue };
        for target in hops {
            // A link directly in a root would take the whole root with it: that one stays
            // writable (a known limit: install cordon, and its links, outside the roots).
            if policy.writable_roots.iter().any(|root| target.starts_with(root))
                && !policy.writable_roots.contains(&target)
                && !protected.contains(&target)
            {
                protected.push(target);
            }
        }
    }
    policy.protected_paths.extend(protected.iter().map(|p| p.display().to_string()));
    protected
}

/// What keeps `path` leading to the same file: the directory of every symbolic link met while
/// resolving it (in any component, in the order met), then the file it ends at. `None` when it
/// does not resolve to an existing file (a loop, a dangling link, a missing component).
fn path_hops(path: &Path) -> Option<Vec<PathBuf>> {
    const MAX_LINKS: usize = 40;
    let mut hops = Vec::new();
    let mut pending: Vec<std::ffi::OsString> =
        path.components().rev().map(|c| c.as_os_str().to_owned()).collect();
    let mut resolved = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = pending.pop() {
        match name.to_str() {
            Some("/" | ".") => continue,
            Some("..") => {
                resolved.pop();
                continue;
            }
            _ => {}
        }
        let next = resolved.join(&name);
        let meta = std::fs::symlink_metadata(&next).ok()?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            hops.push(resolved.clone());
            let target = std::fs::read_link(&next).ok()?;
            if target.is_absolute() {
                resolved = PathBuf::from("/");
            }
            pending.extend(target.components().rev().map(|c| c.as_os_str().to_owned()));
        } else {
            resolved = next;
        }
    }
    hops.push(resolved);
    Some(hops)
}

/// The canonical form of `path`: its nearest existing ancestor canonicalized (symlinks
/// resolved), with the missing rest appended. `.` and `..` are taken lexically first (the
/// kernel would refuse `missing/..` anyway).
fn canonical_even_if_missing(path: &Path) -> PathBuf {
    let lexical = cordon_policies::lexically_normal(path);
    let mut existing = lexical.as_path();
    let mut missing = Vec::new();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(existing) {
            return missing.iter().rev().fold(canonical, |out, name| out.join(name));
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name.to_owned());
                existing = parent;
            }
            // Nothing of it exists, not even `/`: take it as given.
            _ => return lexical,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(root: &Path) -> ResolvedPolicy {
        ResolvedPolicy {
            network_domains: None,
            writable_roots: vec![std::fs::canonicalize(root).unwrap()],
            network_access: false,
            protected_paths: Vec::new(),
            hidden_paths: Vec::new(),
            allowed_sockets: Vec::new(),
        }
    }

    #[test]
    fn a_missing_home_inside_a_root_is_created_private_and_protected() {
        let root = tempfile::tempdir().unwrap();
        let mut policy = policy(root.path());
        let home = root.path().join("a/../.cordon");
        let protected = protect(Some(&home), &mut policy).unwrap().unwrap();
        let canonical = std::fs::canonicalize(root.path()).unwrap().join(".cordon");
        assert_eq!(protected, canonical);
        assert!(canonical.is_dir());
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&canonical.metadata().unwrap().permissions());
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(policy.protected_paths, vec![canonical.display().to_string()]);
    }

    #[test]
    fn a_home_outside_every_root_is_left_alone() {
        let root = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let mut policy = policy(root.path());
        let home = other.path().join("missing/.cordon");
        assert_eq!(protect(Some(&home), &mut policy).unwrap(), None);
        assert!(!home.exists());
        assert!(policy.protected_paths.is_empty());
        assert_eq!(protect(None, &mut policy).unwrap(), None);
        assert_eq!(protect(Some(Path::new("relative")), &mut policy).unwrap(), None);
    }

    #[test]
    fn executables_inside_a_root_are_protected_and_a_symlink_protects_its_directory() {
        let root = tempfile::tempdir().unwrap();
        let canonical_root = std::fs::canonicalize(root.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let mut policy = policy(root.path());
        std::fs::create_dir(root.path().join("bin")).unwrap();
        std::fs::write(root.path().join("bin/cordon"), "").unwrap();
        std::fs::create_dir(root.path().join("links")).unwrap();
        std::os::unix::fs::symlink("/bin/true", root.path().join("links/cordon")).unwrap();
        std::fs::write(outside.path().join("cordon"), "").unwrap();
        let protected = protect_executables(
            &[
                root.path().join("bin/cordon"),
                root.path().join("links/cordon"),
                outside.path().join("cordon"),
                root.path().join("missing/cordon"),
                PathBuf::from("relative"),
            ],
            &mut policy,
        );
        let expected = vec![canonical_root.join("bin/cordon"), canonical_root.join("links")];
        // (`/bin/true`, where the link leads, is outside the root.)
        assert_eq!(protected, expected);
        let shown: Vec<String> = expected.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(policy.protected_paths, shown);
    }

    #[test]
    fn every_link_on_the_way_to_an_executable_keeps_its_directory_protected() {
        let root = tempfile::tempdir().unwrap();
        let root_path = std::fs::canonicalize(root.path()).unwrap();
        let mut policy = policy(&root_path);
        for dir in ["tools/bin", "links", "lbin", "home"] {
            std::fs::create_dir_all(root_path.join(dir)).unwrap();
        }
        std::fs::write(root_path.join("tools/bin/cordon"), "").unwrap();
        std::os::unix::fs::symlink("../tools/bin/cordon", root_path.join("links/cordon")).unwrap();
        std::os::unix::fs::symlink("../links/cordon", root_path.join("lbin/cordon")).unwrap();
        std::os::unix::fs::symlink("../tools/bin", root_path.join("home/bin")).unwrap();
        let protected = protect_executables(
            &[root_path.join("lbin/cordon"), root_path.join("home/bin/cordon")],
            &mut policy,
        );
        assert_eq!(
            protected,
            vec![
                root_path.join("lbin"),
                root_path.join("links"),
                root_path.join("tools/bin/cordon"),
                root_path.join("home"),
            ]
        );
    }

    #[test]
    fn a_symlinked_ancestor_is_judged_where_it_points() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let link = outside.path().join("link");
        std::os::unix::fs::symlink(root.path(), &link).unwrap();
        let mut policy = policy(root.path());
        let protected = protect(Some(&link.join(".cordon")), &mut policy).unwrap();
        assert_eq!(protected, Some(std::fs::canonicalize(root.path()).unwrap().join(".cordon")));
    }
}

//! A workspace, and the place cordon keeps what belongs to it.
//!
//! A workspace is the directory a run starts in, canonicalized: `cordon exec`'s working
//! directory, the directory an executor or MCP server was started in. Its identity is that
//! path and nothing a sandboxed command could write — no marker file, no `.git` found by
//! walking up (a command may create one in `/tmp`, which every run can write, and so join two
//! projects under one name). A run started in a subdirectory is a workspace of its own.
//!
//! What cordon keeps per workspace lives in `$CORDON_HOME/workspaces/<id>/`, where `<id>` is
//! the first 128 bits of the path's SHA-256 (a name no path a command picks can collide with),
//! beside a file `workspace` naming the path for people. Nothing there is ever a writable root
//! but the caches under `cache/`, so one workspace's runs never write what another
//! workspace's runs read.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// A workspace and its directory in `$CORDON_HOME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    path: PathBuf,
    dir: PathBuf,
    home: PathBuf,
}

impl Workspace {
    /// The workspace a run started in `cwd` belongs to, with its state under `cordon_home`.
    pub fn of(cwd: &Path, cordon_home: &Path) -> io::Result<Workspace> {
        let path = std::fs::canonicalize(cwd)?;
        let dir = cordon_home.join("workspaces").join(workspace_id(&path));
        Ok(Workspace { path, dir, home: cordon_home.to_path_buf() })
    }

    /// The workspace's directory, canonical.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// cordon's directory for it (`$CORDON_HOME/workspaces/<id>`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where its preset caches live, one directory per client.
    pub fn cache_root(&self) -> PathBuf {
        self.dir.join("cache")
    }

    /// Where the workspace's sandboxed runs keep what they write to `/tmp` and `$TMPDIR`:
    /// `$CORDON_HOME/temporary/<id>`, apart from the caches, so that no sandbox reads it.
    pub fn temporary(&self) -> PathBuf {
        self.home.join("temporary").join(self.id())
    }

    /// Held by the run that writes [`Workspace::temporary`].
    pub fn temporary_lock(&self) -> PathBuf {
        let mut name = self.id().to_owned();
        name.push(".lock");
        self.home.join("temporary").join(name)
    }

    fn id(&self) -> &std::ffi::OsStr {
        self.dir.file_name().unwrap_or_default()
    }

    /// Where upkeep moves what it could not remove: `$CORDON_HOME/trash/<id>`, hidden inside
    /// the sandbox with the rest of cordon's run state.
    pub fn trash(&self) -> PathBuf {
        self.home.join("trash").join(self.id())
    }

    /// Creates the workspace's directory (0700, and its parents as needed) and names the
    /// workspace in it.
    pub fn prepare(&self) -> io::Result<()> {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        let named = self.dir.join("workspace");
        let mut text = self.path.as_os_str().as_bytes().to_vec();
        text.push(b'\n');
        if std::fs::read(&named).ok().as_deref() != Some(text.as_slice()) {
            let temporary = self.dir.join(format!("workspace.{}", std::process::id()));
            std::fs::write(&temporary, &text)?;
            std::fs::rename(&temporary, &named)?;
        }
        Ok(())
    }
}

/// The name of `path`'s directory under `workspaces/`: 32 hex digits of its SHA-256.
fn workspace_id(path: &Path) -> String {
    let digest = Sha256::digest(path.as_os_str().as_bytes());
    digest[..16].iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_is_named_by_its_canonical_path() {
        let home = tempfile::tempdir().unwrap();
        let a = tempfile::tempdir().unwrap();
        std::fs::create_dir(a.path().join("sub")).unwrap();
        let one = Workspace::of(a.path(), home.path()).unwrap();
        let again = Workspace::of(&a.path().join("sub/.."), home.path()).unwrap();
        let sub = Workspace::of(&a.path().join("sub"), home.path()).unwrap();
        assert_eq!(one, again);
        assert_ne!(one.dir(), sub.dir());
        assert_eq!(one.dir().parent().unwrap(), home.path().join("workspaces"));
        assert_eq!(one.dir().file_name().unwrap().len(), 32);
        one.prepare().unwrap();
        let named = std::fs::read_to_string(one.dir().join("workspace")).unwrap();
        assert_eq!(named, format!("{}\n", one.path().display()));
    }

    #[test]
    fn the_id_is_stable() {
        assert_eq!(workspace_id(Path::new("/w")), workspace_id(Path::new("/w")));
        assert_eq!(workspace_id(Path::new("/")), "8a5edab282632443219e051e4ade2d1d");
    }
}

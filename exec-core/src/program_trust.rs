//! Whether a program name resolves to a file no sandboxed command can have planted — what the
//! known-safe list needs before it lets a command run without a question: `ls` must be the
//! system's `ls`, never a `tools/ls` that an earlier command wrote and a `PATH` entry finds.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where a command looks its programs up, and what it (or an earlier sandboxed command) could
/// have written.
pub struct ProgramLookup<'a> {
    /// The command's `PATH`; `None` searches `execvp`'s default (`/bin:/usr/bin`).
    pub path: Option<OsString>,
    /// Where the command starts: a relative program or `PATH` entry is taken from here.
    pub cwd: PathBuf,
    /// Canonical writable roots of the request's policy, resolved on first use: only a
    /// known-safe command's programs are looked up, and resolving the policy canonicalizes
    /// every root.
    writable_roots: std::cell::OnceCell<Vec<PathBuf>>,
    resolve_roots: Box<dyn Fn() -> Vec<PathBuf> + 'a>,
}

impl std::fmt::Debug for ProgramLookup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramLookup")
            .field("path", &self.path)
            .field("cwd", &self.cwd)
            .field("writable_roots", &self.writable_roots.get())
            .finish_non_exhaustive()
    }
}

impl<'a> ProgramLookup<'a> {
    /// A lookup in `path` from `cwd`; `resolve_roots` gives the canonical writable roots when
    /// first needed.
    pub fn new(
        path: Option<OsString>,
        cwd: PathBuf,
        resolve_roots: impl Fn() -> Vec<PathBuf> + 'a,
    ) -> ProgramLookup<'a> {
        ProgramLookup {
            path,
            cwd,
            writable_roots: std::cell::OnceCell::new(),
            resolve_roots: Box::new(resolve_roots),
        }
    }

    fn writable_roots(&self) -> &[PathBuf] {
        self.writable_roots.get_or_init(|| (self.resolve_roots)())
    }

    /// Whether `program` is found as `execvp` finds it in a file owned by root that neither
    /// the user's group nor others may change, in a directory of the same kind, outside every
    /// writable root — and no `PATH` directory searched before it could hold a file a sandboxed
    /// command planted: none is relative (the workspace) or inside a writable root. A directory
    /// of the user's own before it (`~/.local/bin`, `~/.cargo/bin`) that does not hold the name
    /// now is passed over: only the user (or another unsandboxed program) can write there, and
    /// a file the user adds between this decision and the run is the user's own.
    pub fn trusts(&self, program: &str) -> bool {
        if program.is_empty() {
            return false;
        }
        if program.contains('/') {
            let path = Path::new(program);
            return path.is_absolute() && self.trusted_file(path);
        }
        let default = OsString::from("/bin:/usr/bin");
        let search = self.path.as_ref().unwrap_or(&default);
        for dir in std::env::split_paths(search) {
            // An empty or relative entry is the working directory, which the workspace holds.
            if !dir.is_absolute() || self.inside_roots(&dir) {
                return false;
            }
            let candidate = dir.join(program);
            if is_executable_file(&candidate) {
                return self.trusted_file(&candidate);
            }
        }
        false
    }

    /// Whether `dir` (or, if it does not exist, its nearest existing ancestor) lies inside a
    /// writable root, where a sandboxed command could create or change what it holds.
    fn inside_roots(&self, dir: &Path) -> bool {
        let mut existing = dir.to_path_buf();
        while !existing.exists() {
            if !existing.pop() {
                return true;
            }
        }
        let Ok(canonical) = std::fs::canonicalize(&existing) else { return true };
        self.writable_roots().iter().any(|root| canonical.starts_with(root))
    }

    fn trusted_file(&self, path: &Path) -> bool {
        let Ok(canonical) = std::fs::canonicalize(path) else { return false };
        let Some(parent) = canonical.parent() else { return false };
        is_locked_down(&canonical) && self.trusted_dir(parent)
    }

    /// A directory and every directory above it: root-owned, not writable by group or others,
    /// outside the roots.
    fn trusted_dir(&self, dir: &Path) -> bool {
        let Ok(canonical) = std::fs::canonicalize(dir) else { return false };
        !self.inside_roots(&canonical) && canonical.ancestors().all(is_locked_down)
    }
}

/// Owned by root and not writable by group or others.
fn is_locked_down(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).is_ok_and(|meta| meta.uid() == 0 && meta.mode() & 0o022 == 0)
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(path: &str, roots: &[&Path]) -> ProgramLookup<'static> {
        let roots: Vec<PathBuf> = roots.iter().map(|r| r.to_path_buf()).collect();
        ProgramLookup::new(Some(path.into()), PathBuf::from("/"), move || roots.clone())
    }

    #[test]
    fn system_programs_are_trusted_and_relative_or_planted_ones_are_not() {
        assert!(lookup("/usr/bin:/bin", &[]).trusts("ls"));
        assert!(lookup("/usr/bin", &[]).trusts("/usr/bin/ls"));
        assert!(!lookup("tools:/usr/bin", &[]).trusts("ls"));
        assert!(!lookup(":/usr/bin", &[]).trusts("ls"));
        assert!(!lookup("/usr/bin", &[Path::new("/usr")]).trusts("ls"));
        assert!(!lookup("/usr/bin", &[]).trusts("./ls"));
        assert!(!lookup("/usr/bin", &[]).trusts("no-such-program-here"));
        let dir = tempfile::tempdir().unwrap();
        let planted = dir.path().join("ls");
        std::fs::write(&planted, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&planted, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let path = format!("{}:/usr/bin", dir.path().display());
        // Root-owned here when the tests run as root, but inside a writable root.
        assert!(!lookup(&path, &[dir.path()]).trusts("ls"));
        // A directory of the user's own first on PATH: passed over for a name it does not hold,
        // never for one it does.
        let user_dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(
            user_dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
        let path = format!("{}:/nonexistent/.local/bin:/usr/bin", user_dir.path().display());
        assert!(lookup(&path, &[]).trusts("ls"));
        let own = user_dir.path().join("cat");
        std::fs::write(&own, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&own, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        assert!(!lookup(&path, &[]).trusts("cat"));
        // A directory that does not exist yet but would lie inside a writable root is not.
        let missing = format!("{}/bin:/usr/bin", dir.path().display());
        assert!(!lookup(&missing, &[dir.path()]).trusts("ls"));
    }
}

//! Running commands under Seatbelt from a test, and scratch directories.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use cordon_policies::ResolvedPolicy;
use cordon_sandbox_macos::{
    SANDBOX_EXEC_PATH, sandbox_exec_command, seatbelt_profile, with_real_paths,
};

/// Whether Seatbelt can be used here. When it cannot, prints why and returns `false`; with
/// `CORDON_TEST_REQUIRE_SANDBOX=1` (CI) it panics instead, so a skip never passes silently.
pub fn seatbelt_available() -> bool {
    let reason = if !Path::new(SANDBOX_EXEC_PATH).exists() {
        Some(format!("{SANDBOX_EXEC_PATH} does not exist"))
    } else {
        // Probe by using it: a process that is already sandboxed cannot apply a second profile.
        match Command::new(SANDBOX_EXEC_PATH)
            .args(["-p", "(version 1) (allow default)", "--", "/usr/bin/true"])
            .output()
        {
            Ok(out) if out.status.success() => None,
            Ok(out) => Some(format!(
                "sandbox-exec refused a trivial profile: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => Some(format!("cannot run {SANDBOX_EXEC_PATH}: {e}")),
        }
    };
    let Some(reason) = reason else {
        return true;
    };
    if std::env::var_os("CORDON_TEST_REQUIRE_SANDBOX").is_some_and(|v| v == "1") {
        panic!("CORDON_TEST_REQUIRE_SANDBOX=1 but Seatbelt is unavailable: {reason}");
    }
    eprintln!("skipped: {reason}");
    false
}

/// Returns early from a test (with the reason printed) when Seatbelt is unavailable.
macro_rules! skip_unless_seatbelt {
    () => {
        if !$crate::suite::util::seatbelt_available() {
            return;
        }
    };
}
pub(crate) use skip_unless_seatbelt;

/// A fresh directory under the system temp dir, removed on drop. `path` is spelled as the
/// system hands it out (on macOS `/var/folders/...`, which is a link to `/private/var/...`).
pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    pub fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "cordon-seatbelt-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        Scratch { path }
    }

    /// Creates directory `rel` (and its parents) and returns its path.
    pub fn dir(&self, rel: &str) -> PathBuf {
        let dir = self.path.join(rel);
        fs::create_dir_all(&dir).unwrap();
        dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// A policy with these roots and paths and the default-free lists the test spells out.
pub fn policy(
    roots: &[&Path],
    network_access: bool,
    protected: &[&str],
    hidden: &[&Path],
) -> ResolvedPolicy {
    ResolvedPolicy {
        network_domains: None,
        writable_roots: roots.iter().map(|r| r.to_path_buf()).collect(),
        network_access,
        protected_paths: protected.iter().map(|p| (*p).to_owned()).collect(),
        hidden_paths: hidden.iter().map(|h| h.to_path_buf()).collect(),
        allowed_sockets: Vec::new(),
    }
}

/// Runs `/bin/sh -c script` under the profile for `policy`, the way cordon does.
pub fn sh(policy: &ResolvedPolicy, script: &str) -> Output {
    let profile = seatbelt_profile(&with_real_paths(policy));
    let command: Vec<OsString> = ["/bin/sh", "-c", script].map(OsString::from).to_vec();
    sandbox_exec_command(&profile, &command).output().unwrap()
}

/// `path` quoted for `/bin/sh`.
pub fn q(path: &Path) -> String {
    format!("'{}'", path.to_str().unwrap().replace('\'', r"'\''"))
}

//! The sandbox policy: its JSON shape (Codex-compatible) and the effective writable roots.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::domains::DomainRules;
use crate::hidden_paths::Relocations;
use crate::hidden_paths::{expand_hidden_path, is_under_home, relocations};
use crate::paths::{DEFAULT_PROTECTED_PATHS, expand_path, session_bus_socket};
use crate::secret_files::DEFAULT_HIDDEN_PATHS;

/// What a sandboxed command may do. Serialised exactly as Codex's helper expects:
/// `{"type": "read-only"}`, `{"type": "workspace-write", "writable_roots": [...], ...}`,
/// `{"type": "danger-full-access"}`. Unknown fields are an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SandboxPolicy {
    /// No sandbox at all.
    DangerFullAccess {},
    /// Read everything, write nothing but `/dev/null`, no network.
    ReadOnly {
        /// Paths replaced by empty stand-ins; `None` means [`DEFAULT_HIDDEN_PATHS`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hidden_paths: Option<Vec<String>>,
    },
    /// Read everything, write the writable roots.
    WorkspaceWrite(WorkspaceWrite),
}

/// The `workspace-write` fields. Missing optional fields are empty or `false`, as in the JSON
/// Codex passes to its helper, so Codex's policies parse unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceWrite {
    /// Extra writable directories (relative ones are taken relative to the policy cwd).
    #[serde(default)]
    pub writable_roots: Vec<PathBuf>,
    /// Whether the command may use the network.
    #[serde(default)]
    pub network_access: bool,
    /// Network by domain: the command gets its own network namespace with only loopback and
    /// reaches the outside through cordon's proxy, which allows these destinations. Takes
    /// precedence over `network_access`. Absent in Codex's JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_domains: Option<DomainRules>,
    /// Do not add the policy cwd to the writable roots (a Codex permission profile that does
    /// not grant it). Absent in Codex's JSON.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclude_policy_cwd: bool,
    /// Do not add `$TMPDIR` to the writable roots.
    #[serde(default)]
    pub exclude_tmpdir_env_var: bool,
    /// Do not add `/tmp` to the writable roots.
    #[serde(default)]
    pub exclude_slash_tmp: bool,
    /// Paths kept read-only inside each writable root (relative names are taken inside every
    /// root); `None` means [`DEFAULT_PROTECTED_PATHS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected_paths: Option<Vec<String>>,
    /// Paths replaced by empty stand-ins; `None` means [`DEFAULT_HIDDEN_PATHS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden_paths: Option<Vec<String>>,
    /// UNIX sockets the command may reach although they are hidden, or lie in a hidden
    /// directory (`~/…`, `$XDG_RUNTIME_DIR/…` expand as hidden paths do); the rest of a hidden
    /// directory stays hidden. Needs the network on or a domain list: with the network off
    /// seccomp refuses every `connect()`. Absent in Codex's JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_unix_sockets: Vec<String>,
}

/// The CLI spelling of the three policies (`-s MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

impl SandboxMode {
    /// Every mode, in order of increasing access.
    pub const ALL: [SandboxMode; 3] =
        [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite, SandboxMode::DangerFullAccess];

    /// The spelling used on the command line and in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }
}

/// A policy that could not be read or applied to this cwd.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("invalid sandbox policy JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the policy cwd must be an absolute path, got {0:?}")]
    RelativeCwd(PathBuf),
    #[error("`~` in {path:?} cannot be expanded: HOME is not set")]
    NoHome { path: String },
    #[error(
        "allow_unix_sockets ({sockets}) needs the network on or a domain list: with the network \
         off the sandbox refuses every connect(), to UNIX sockets too (--network, --allow-domain)"
    )]
    SocketsNeedNetwork { sockets: String },
    #[error(
        "allow_unix_sockets: {path:?} is not an absolute path without `.` or `..` (`~/` and \
         `$XDG_RUNTIME_DIR/` expand)"
    )]
    RelativeSocket { path: String },
}

/// A policy resolved against a cwd and an environment: absolute, canonical paths only. This is
/// what the helper builds its mount view and Landlock ruleset from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPolicy {
    /// Canonical, existing writable roots, without duplicates, shortest first.
    pub writable_roots: Vec<PathBuf>,
    /// Whether the command may open IP sockets (true with a domain list too: the empty
    /// network namespace is what confines it then).
    pub network_access: bool,
    /// The domain allow-list: a network namespace with only loopback, and the proxy.
    pub network_domains: Option<DomainRules>,
    /// Protected entries: relative names (taken inside every root) or absolute paths.
    pub protected_paths: Vec<String>,
    /// Absolute paths to hide (`~` expanded); existence is checked by whoever hides them.
    pub hidden_paths: Vec<PathBuf>,
    /// Absolute paths of the UNIX sockets reachable despite the hidden paths (none of them is
    /// in `hidden_paths` itself; a hidden directory may hold them).
    pub allowed_sockets: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// Parses the policy JSON; unknown fields and unknown `type`s are errors.
    pub fn from_json(json: &str) -> Result<Self, PolicyError> {
        Ok(serde_json::from_str(json)?)
    }

    /// The policy as compact JSON (what the orchestrator passes to the helper).
    pub fn to_json(&self) -> String {
        // Serialising these plain enums and strings cannot fail; fall back to the strictest
        // policy rather than panic if it ever did.
        serde_json::to_string(self).unwrap_or_else(|_| r#"{"type":"read-only"}"#.to_owned())
    }

    /// The default policy for a CLI mode.
    pub fn from_mode(mode: SandboxMode) -> Self {
        match mode {
            SandboxMode::ReadOnly => SandboxPolicy::ReadOnly { hidden_paths: None },
            SandboxMode::WorkspaceWrite => SandboxPolicy::WorkspaceWrite(WorkspaceWrite::default()),
            SandboxMode::DangerFullAccess => SandboxPolicy::DangerFullAccess {},
        }
    }

    /// The mode this policy is an instance of.
    pub fn mode(&self) -> SandboxMode {
        match self {
            SandboxPolicy::DangerFullAccess {} => SandboxMode::DangerFullAccess,
            SandboxPolicy::ReadOnly { .. } => SandboxMode::ReadOnly,
            SandboxPolicy::WorkspaceWrite(_) => SandboxMode::WorkspaceWrite,
        }
    }

    /// Whether the command may use the network.
    /// The hidden paths as configured (`None`: the defaults).
    pub fn hidden_paths_setting(&self) -> Option<&Vec<String>> {
        match self {
            SandboxPolicy::DangerFullAccess {} => None,
            SandboxPolicy::ReadOnly { hidden_paths } => hidden_paths.as_ref(),
            SandboxPolicy::WorkspaceWrite(write) => write.hidden_paths.as_ref(),
        }
    }

    pub fn has_network_access(&self) -> bool {
        match self {
            SandboxPolicy::DangerFullAccess {} => true,
            SandboxPolicy::ReadOnly { .. } => false,
            SandboxPolicy::WorkspaceWrite(ww) => ww.network_access || ww.network_domains.is_some(),
        }
    }

    /// The domain allow-list, when the network goes through the proxy.
    pub fn network_domains(&self) -> Option<&DomainRules> {
        match self {
            SandboxPolicy::WorkspaceWrite(ww) => ww.network_domains.as_ref(),
            SandboxPolicy::DangerFullAccess {} | SandboxPolicy::ReadOnly { .. } => None,
        }
    }

    /// The writable roots before canonicalisation, in this order: configured roots
    /// (relative ones joined to `cwd`), the policy cwd, `/tmp`, `$TMPDIR`.
    pub fn candidate_writable_roots(&self, cwd: &Path, tmpdir: Option<&Path>) -> Vec<PathBuf> {
        let SandboxPolicy::WorkspaceWrite(ww) = self else {
            return Vec::new();
        };
        let mut roots: Vec<PathBuf> = ww.writable_roots.iter().map(|r| cwd.join(r)).collect();
        if !ww.exclude_policy_cwd {
            roots.push(cwd.to_path_buf());
        }
        if !ww.exclude_slash_tmp {
            roots.push(PathBuf::from("/tmp"));
        }
        if !ww.exclude_tmpdir_env_var {
            // An empty or relative TMPDIR names no directory we could safely open up.
            if let Some(tmpdir) = tmpdir.filter(|t| t.is_absolute()) {
                roots.push(tmpdir.to_path_buf());
            }
        }
        roots
    }

    /// The writable roots the policy names itself — the configured ones and the policy cwd,
    /// not `/tmp` and `$TMPDIR` — canonical (roots that do not resolve are left out).
    /// `canonicalize` is `std::fs::canonicalize` outside tests.
    pub fn named_writable_roots(
        &self,
        cwd: &Path,
        canonicalize: impl Fn(&Path) -> io::Result<PathBuf>,
    ) -> Vec<PathBuf> {
        let SandboxPolicy::WorkspaceWrite(ww) = self else { return Vec::new() };
        let cwd_root = (!ww.exclude_policy_cwd).then(|| cwd.to_path_buf());
        ww.writable_roots
            .iter()
            .map(|root| cwd.join(root))
            .chain(cwd_root)
            .filter_map(|root| canonicalize(&root).ok())
            .collect()
    }

    /// Resolves the policy for a command: canonical writable roots (roots that do not resolve,
    /// e.g. do not exist, are skipped), protected names and absolute hidden paths.
    /// `canonicalize` is `std::fs::canonicalize` outside tests.
    pub fn resolve(
        &self,
        cwd: &Path,
        env: &PolicyEnv<'_>,
        canonicalize: impl Fn(&Path) -> io::Result<PathBuf>,
    ) -> Result<ResolvedPolicy, PolicyError> {
        let writable_roots = self.writable_roots(cwd, env, canonicalize)?;
        let allowed_sockets = self.allowed_sockets(env)?;
        let hidden = match self {
            SandboxPolicy::DangerFullAccess {} => Some(Vec::new()),
            SandboxPolicy::ReadOnly { hidden_paths } => hidden_paths.clone(),
            SandboxPolicy::WorkspaceWrite(ww) => ww.hidden_paths.clone(),
        };
        let protected_paths = self.protected_paths();
        let hidden_paths = match hidden {
            Some(list) => {
                let mut paths = Vec::new();
                for p in &list {
                    // An explicit `~` path without a home is an error, not a silent no-op; a
                    // `$TOKEN` that is not set names nothing to hide.
                    if is_under_home(p) && env.home.is_none() && env.account_home.is_none() {
                        return Err(PolicyError::NoHome { path: p.clone() });
                    }
                    paths.extend(expand_hidden_path(p, env));
                }
                paths
            }
            // Defaults under `~` or a `$TOKEN` that is not set are dropped: nothing to hide.
            None => DEFAULT_HIDDEN_PATHS.iter().flat_map(|p| expand_hidden_path(p, env)).collect(),
        };
        Ok(ResolvedPolicy {
            writable_roots,
            network_access: self.has_network_access(),
            network_domains: self.network_domains().cloned(),
            protected_paths,
            hidden_paths: distinct_hidden(hidden_paths, &allowed_sockets),
            allowed_sockets,
        })
    }

    /// The writable roots [`SandboxPolicy::resolve`] gives, alone: for callers that need only
    /// them, without expanding the hidden paths (a catalogue of hundreds) each time.
    pub fn writable_roots(
        &self,
        cwd: &Path,
        env: &PolicyEnv<'_>,
        canonicalize: impl Fn(&Path) -> io::Result<PathBuf>,
    ) -> Result<Vec<PathBuf>, PolicyError> {
        if !cwd.is_absolute() {
            return Err(PolicyError::RelativeCwd(cwd.to_path_buf()));
        }
        let mut writable_roots: Vec<PathBuf> = self
            .candidate_writable_roots(cwd, env.tmpdir)
            .iter()
            .filter_map(|root| canonicalize(root).ok())
            .collect();
        writable_roots.sort_by(|a, b| {
            a.components().count().cmp(&b.components().count()).then_with(|| a.cmp(b))
        });
        writable_roots.dedup();
        Ok(writable_roots)
    }

    /// The protected paths [`SandboxPolicy::resolve`] gives: the policy's, else the defaults.
    pub fn protected_paths(&self) -> Vec<String> {
        let protected = match self {
            SandboxPolicy::DangerFullAccess {} | SandboxPolicy::ReadOnly { .. } => Some(Vec::new()),
            SandboxPolicy::WorkspaceWrite(ww) => ww.protected_paths.clone(),
        };
        protected
            .unwrap_or_else(|| DEFAULT_PROTECTED_PATHS.iter().map(|p| (*p).to_owned()).collect())
    }

    /// The expanded `allow_unix_sockets`, checked against the network setting (the front-end
    /// calls it to refuse a bad list before anything runs; `resolve` uses it).
    pub fn allowed_sockets(&self, env: &PolicyEnv<'_>) -> Result<Vec<PathBuf>, PolicyError> {
        let SandboxPolicy::WorkspaceWrite(ww) = self else { return Ok(Vec::new()) };
        if ww.allow_unix_sockets.is_empty() {
            return Ok(Vec::new());
        }
        if !self.has_network_access() {
            return Err(PolicyError::SocketsNeedNetwork {
                sockets: ww.allow_unix_sockets.join(", "),
            });
        }
        let mut sockets = Vec::new();
        for path in &ww.allow_unix_sockets {
            if (path == "~" || path.starts_with("~/")) && env.home.is_none() {
                return Err(PolicyError::NoHome { path: path.clone() });
            }
            // A `$VARIABLE` that is not set names no socket.
            let Some(expanded) = expand_path(path, env) else { continue };
            // Absolute and plain: a `..` would let the stand-in the helper creates for it
            // land outside the hidden directory that holds it.
            let plain = expanded.components().all(|c| {
                matches!(c, std::path::Component::RootDir | std::path::Component::Normal(_))
            });
            if !expanded.is_absolute() || !plain {
                return Err(PolicyError::RelativeSocket { path: path.clone() });
            }
            if !sockets.contains(&expanded) {
                sockets.push(expanded);
            }
        }
        Ok(sockets)
    }
}

/// The absolute paths to hide, each once (`$XDG_RUNTIME_DIR` and `/run/user/$UID` are usually
/// the same directory), without the allowed sockets. A path inside another stays: the Seatbelt
/// profile denies both, and the mount view covers what it finds covered already only once.
fn distinct_hidden(paths: Vec<PathBuf>, allowed_sockets: &[PathBuf]) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    paths
        .into_iter()
        .filter(|p| p.is_absolute() && seen.insert(p.clone()))
        .filter(|p| !allowed_sockets.contains(p))
        .collect()
}

/// The parts of the environment a policy depends on: the user's view of their own machine
/// (see [`EnvSnapshot`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct PolicyEnv<'a> {
    /// `$TMPDIR`, if set.
    pub tmpdir: Option<&'a Path>,
    /// `$HOME`, if set.
    pub home: Option<&'a Path>,
    /// The caller's uid (for `$UID` in hidden paths).
    pub uid: Option<u32>,
    /// `$XDG_RUNTIME_DIR`, if set.
    pub runtime_dir: Option<&'a Path>,
    /// `$SSH_AUTH_SOCK`, if set.
    pub ssh_auth_sock: Option<&'a Path>,
    /// The session bus's socket file, from `$DBUS_SESSION_BUS_ADDRESS`.
    pub session_bus: Option<&'a Path>,
    /// The Kerberos ticket cache `$KRB5CCNAME` names in a file or directory.
    pub kerberos_cache: Option<&'a Path>,
    /// The user's home in the password database (hidden paths under `~` are hidden there too).
    pub account_home: Option<&'a Path>,
    /// Where variables move catalogue entries (`GNUPGHOME`, `XDG_CONFIG_HOME`, `KUBECONFIG`, …).
    pub relocations: Option<&'a Relocations>,
    /// cordon's state directory: `$CORDON_HOME`, else `$HOME/.cordon`.
    pub cordon_home: Option<&'a Path>,
}

/// The owned values behind a [`PolicyEnv`]: the *user view*. It is read from cordon's own
/// environment, never from the command's, which the environment policy may have emptied or
/// rewritten: a command whose env lacks `HOME` must still find `~/.ssh` hidden, and one given
/// `TMPDIR=/somewhere` must not make `/somewhere` writable. The orchestrator hands it to the
/// helper explicitly (`--user-view JSON`, this struct's serde shape; absent fields are unset).
///
/// This crate reads no environment: callers gather the values
/// (`EnvSnapshot::from_lookup(|k| std::env::var_os(k), Some(uid))`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnvSnapshot {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub home: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmpdir: Option<PathBuf>,
    #[serde(rename = "xdg_runtime_dir", skip_serializing_if = "Option::is_none")]
    pub runtime_dir: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_auth_sock: Option<PathBuf>,
    /// The socket file `$DBUS_SESSION_BUS_ADDRESS` names (`unix:path=…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_bus: Option<PathBuf>,
    /// The file or directory `$KRB5CCNAME` names (`FILE:…`, `DIR:…` or a path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kerberos_cache: Option<PathBuf>,
    /// The home directory the password database gives the uid: filled by the caller, not read
    /// from the environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_home: Option<PathBuf>,
    /// The variables that move a catalogue entry, as set ([`crate::RELOCATING_VARIABLES`]).
    #[serde(skip_serializing_if = "Relocations::is_empty")]
    pub relocations: Relocations,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cordon_home: Option<PathBuf>,
    /// The executables cordon runs as itself: the files the front-end and the helper start
    /// from, and the paths they were found by. A sandboxed command must not replace them, or
    /// the next "sandboxed" run would be its program. Filled by the caller, not read from the
    /// environment.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cordon_executables: Vec<PathBuf>,
    /// The absolute directories of `PATH`: the programs cordon judged are found there, so
    /// the ones in a home directory stay readable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_dirs: Vec<PathBuf>,
}

impl EnvSnapshot {
    /// Reads `HOME`, `TMPDIR`, `XDG_RUNTIME_DIR`, `SSH_AUTH_SOCK`, `DBUS_SESSION_BUS_ADDRESS`,
    /// `CORDON_HOME` and the relocating variables through `lookup`; empty values count as unset. `cordon_home` is
    /// `$CORDON_HOME`, else `$HOME/.cordon`. `account_home` is left for the caller.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
        uid: Option<u32>,
    ) -> Self {
        let get = |key: &str| lookup(key).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = get("HOME");
        let cordon_home =
            get("CORDON_HOME").or_else(|| home.as_ref().map(|home| home.join(".cordon")));
        EnvSnapshot {
            tmpdir: get("TMPDIR"),
            home,
            uid,
            runtime_dir: get("XDG_RUNTIME_DIR"),
            ssh_auth_sock: get("SSH_AUTH_SOCK"),
            session_bus: lookup("DBUS_SESSION_BUS_ADDRESS")
                .and_then(|address| session_bus_socket(&address.to_string_lossy())),
            kerberos_cache: lookup("KRB5CCNAME")
                .and_then(|name| crate::paths::kerberos_cache_file(&name.to_string_lossy())),
            account_home: None,
            relocations: relocations(&lookup),
            cordon_home,
            cordon_executables: Vec::new(),
            path_dirs: lookup("PATH")
                .map(|path| std::env::split_paths(&path).filter(|dir| dir.is_absolute()).collect())
                .unwrap_or_default(),
        }
    }

    pub fn view(&self) -> PolicyEnv<'_> {
        PolicyEnv {
            tmpdir: self.tmpdir.as_deref(),
            home: self.home.as_deref(),
            uid: self.uid,
            runtime_dir: self.runtime_dir.as_deref(),
            ssh_auth_sock: self.ssh_auth_sock.as_deref(),
            session_bus: self.session_bus.as_deref(),
            kerberos_cache: self.kerberos_cache.as_deref(),
            account_home: self.account_home.as_deref(),
            relocations: Some(&self.relocations),
            cordon_home: self.cordon_home.as_deref(),
        }
    }
}

#[cfg(test)]
#[path = "sandbox_policy_tests.rs"]
mod tests;

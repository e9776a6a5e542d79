//! OpenAI Codex's permission profile (`codex-linux-sandbox --permission-profile JSON`, the only
//! policy Codex 0.169 passes its helper) read into a [`SandboxPolicy`], so nothing past the
//! helper's command line knows which spelling came in.
//!
//! The profile lists file-system entries, each a path (absolute, or a special place: `root`,
//! `minimal`, `project_roots` with an optional `subpath`, `tmpdir`, `slash_tmp`, `unknown`) with
//! an access (`read`, `write`, `deny` — also spelled `none`); for a path the deepest entry
//! decides, and at the same depth `deny` beats `write` beats `read`. Read this way:
//! - effective `write` entries are the writable roots (`slash_tmp` and `tmpdir` switch `/tmp`
//!   and `$TMPDIR` on; the policy cwd is writable only when an entry says so);
//! - `read` entries inside a writable root stay read-only, in union with cordon's own protected
//!   paths and with the names Codex's helper protects in every writable root whether listed or
//!   not (`.git` whole, `.agents`, `.codex`, `.aws`);
//! - `deny` entries are hidden, in union with cordon's own hidden paths;
//! - `network`: `restricted` is no network, `enabled` the network.
//!
//! What cordon cannot enforce as Codex means it is refused, never weakened: a profile that
//! restricts reads (no `root` read entry), write everywhere with the network off, glob entries,
//! a place reopened for writing inside a hidden or read-only one. Fields this reading does not
//! know are errors too (Codex ignores them): a setting a newer Codex adds must not be dropped.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::paths::DEFAULT_PROTECTED_PATHS;
use crate::sandbox_policy::{SandboxPolicy, WorkspaceWrite};
use crate::secret_files::DEFAULT_HIDDEN_PATHS;

/// Names Codex's helper keeps read-only inside every writable root, listed or not.
pub const CODEX_PROTECTED_NAMES: &[&str] = &[".git", ".agents", ".codex", ".aws"];

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Profile {
    Managed { file_system: FileSystem, network: Network },
    Disabled {},
    External { network: Network },
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum FileSystem {
    Restricted {
        entries: Vec<Entry>,
        #[serde(default)]
        #[allow(dead_code, reason = "a bound on glob expansion; glob entries are refused")]
        glob_scan_max_depth: Option<std::num::NonZeroUsize>,
    },
    Unrestricted {},
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Network {
    Restricted,
    Enabled,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    path: EntryPath,
    access: Access,
    /// `skip`: Codex's helper still keeps a missing path out of reach, so it changes nothing
    /// here; read only to be checked.
    #[serde(default)]
    #[allow(dead_code, reason = "accepted and checked; it changes nothing on Linux")]
    missing_path_behavior: Option<MissingPath>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Access {
    Read,
    Write,
    #[serde(alias = "none")]
    Deny,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum MissingPath {
    Skip,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum EntryPath {
    Path { path: PathBuf },
    GlobPattern { pattern: String },
    Special { value: Special },
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum Special {
    Root {},
    Minimal {},
    #[serde(alias = "current_working_directory")]
    ProjectRoots {
        #[serde(default)]
        subpath: Option<PathBuf>,
    },
    Tmpdir {},
    SlashTmp {},
    Unknown {
        path: String,
        #[serde(default)]
        #[allow(dead_code, reason = "an unknown place resolves to nothing")]
        subpath: Option<PathBuf>,
    },
}

/// A permission profile cordon cannot read or cannot enforce as Codex means it.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("--permission-profile: invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error(
        "--permission-profile: a profile without \"type\" (Codex's older shape) is not supported; \
         Codex 0.169 sends {{\"type\": \"managed\", …}}"
    )]
    Untyped,
    #[error(
        "--permission-profile restricts reads (no {{\"kind\": \"root\"}} read entry): cordon's \
         sandbox reads everything and hides only listed paths, so it cannot enforce a read \
         allow-list"
    )]
    RestrictedReads,
    #[error(
        "--permission-profile allows writing everywhere with the network off; cordon has no such \
         sandbox (a write root of `/` or an unrestricted file system needs the network on, and \
         then runs without a sandbox as Codex does)"
    )]
    WriteEverywhereWithoutNetwork,
    #[error(
        "--permission-profile allows writing everywhere except the places it lists; cordon's \
         sandbox cannot carve places out of a writable `/`"
    )]
    WriteEverywhereNarrowed,
    #[error("--permission-profile: {0:?} holds a NUL byte")]
    Nul(String),
    #[error("--permission-profile: glob entry {0:?} is not supported; list the paths")]
    Glob(String),
    #[error("--permission-profile: {0:?} is not an absolute path")]
    Relative(PathBuf),
    #[error("--permission-profile: a `minimal` entry with {0} access is not supported")]
    Minimal(&'static str),
    #[error(
        "--permission-profile: {path:?} is writable inside {outer:?}, which is {what}; cordon \
         cannot reopen a place for writing there"
    )]
    Reopened { path: PathBuf, outer: PathBuf, what: &'static str },
    #[error(
        "--permission-profile: an `unknown` place ({0:?}) with read or deny access would be \
         dropped; cordon refuses it rather than enforce less"
    )]
    UnknownPlace(String),
}

/// The places of a profile, resolved.
struct Places {
    root_read: bool,
    root_write: bool,
    root_deny: bool,
    slash_tmp: bool,
    tmpdir: bool,
    /// Resolved paths with their access, the deepest decision per path kept.
    paths: Vec<(PathBuf, Access)>,
}

/// Reads `json` (the value of `--permission-profile`) into the policy cordon enforces;
/// `policy_cwd` is `--sandbox-policy-cwd`, which `project_roots` entries are resolved against,
/// and `tmpdir` the `$TMPDIR` a `tmpdir` entry names.
pub fn policy_from_permission_profile(
    json: &str,
    policy_cwd: &Path,
    tmpdir: Option<&Path>,
) -> Result<SandboxPolicy, ProfileError> {
    // Read straight into the types, never through a map that keeps the last of two equal keys:
    // `"network":"restricted","network":"enabled"` is an error, as it is for Codex.
    let profile = serde_json::from_str::<Profile>(json).map_err(|error| {
        if error.to_string().starts_with("missing field `type`") {
            ProfileError::Untyped
        } else {
            ProfileError::Json(error)
        }
    })?;
    let policy_cwd = &normalize(policy_cwd);
    let (file_system, network) = match profile {
        Profile::Disabled {} => return Ok(SandboxPolicy::DangerFullAccess {}),
        Profile::External { network } => (FileSystem::Unrestricted {}, network),
        Profile::Managed { file_system, network } => (file_system, network),
    };
    let entries = match file_system {
        FileSystem::Unrestricted {} => return write_everywhere(network),
        FileSystem::Restricted { entries, .. } => entries,
    };
    let places = places(&entries, policy_cwd)?;
    if places.root_write {
        // Write everywhere, unless an entry narrows it: then Codex mounts `/` writable with
        // the narrowed places carved out, which cordon's mount view cannot.
        if places.root_deny || places.paths.iter().any(|(_, a)| *a != Access::Write) {
            return Err(ProfileError::WriteEverywhereNarrowed);
        }
        return write_everywhere(network);
    }
    if !places.root_read || places.root_deny {
        return Err(ProfileError::RestrictedReads);
    }
    let writable: Vec<&PathBuf> =
        places.paths.iter().filter(|(_, a)| *a == Access::Write).map(|(p, _)| p).collect();
    // Every place the command may write: the write entries, `/tmp` and `$TMPDIR`.
    let mut writable_places: Vec<PathBuf> = writable.iter().map(|p| (*p).clone()).collect();
    writable_places.extend(places.slash_tmp.then(|| PathBuf::from("/tmp")));
    writable_places.extend(tmpdir.filter(|_| places.tmpdir).map(normalize));
    for (path, access) in &places.paths {
        if *access != Access::Write {
            continue;
        }
        // A writable place under a hidden one, or under a read-only one inside a place the
        // command may write: Codex reopens it; cordon's mount view would leave it hidden or
        // read-only.
        let outer = places.paths.iter().find(|(outer, outer_access)| {
            outer != path
                && path.starts_with(outer)
                && (*outer_access == Access::Deny
                    || (*outer_access == Access::Read
                        && writable_places.iter().any(|w| outer.starts_with(w) && w != outer)))
        });
        if let Some((outer, outer_access)) = outer {
            let what = if *outer_access == Access::Deny { "hidden" } else { "read-only" };
            return Err(ProfileError::Reopened { path: path.clone(), outer: outer.clone(), what });
        }
    }
    let mut protected: Vec<String> =
        DEFAULT_PROTECTED_PATHS.iter().map(|p| (*p).to_owned()).collect();
    protected.extend(CODEX_PROTECTED_NAMES.iter().map(|p| (*p).to_owned()));
    let mut hidden: Vec<String> = DEFAULT_HIDDEN_PATHS.iter().map(|p| (*p).to_owned()).collect();
    // Every read entry stays read-only wherever a writable root (`/tmp` and `$TMPDIR`
    // included) holds it; outside them everything is read-only anyway.
    for (path, access) in &places.paths {
        match access {
            Access::Read => protected.push(path.to_string_lossy().into_owned()),
            Access::Write => {}
            Access::Deny => hidden.push(path.to_string_lossy().into_owned()),
        }
    }
    protected.dedup();
    hidden.dedup();
    let network_access = network == Network::Enabled;
    if writable.is_empty() && !places.slash_tmp && !places.tmpdir && !network_access {
        return Ok(SandboxPolicy::ReadOnly { hidden_paths: Some(hidden) });
    }
    let cwd_writable = writable.iter().any(|w| w.as_path() == policy_cwd);
    Ok(SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
        writable_roots: writable
            .into_iter()
            .filter(|w| w.as_path() != policy_cwd)
            .cloned()
            .collect(),
        network_access,
        exclude_policy_cwd: !cwd_writable,
        exclude_tmpdir_env_var: !places.tmpdir,
        exclude_slash_tmp: !places.slash_tmp,
        protected_paths: Some(protected),
        hidden_paths: Some(hidden),
        ..WorkspaceWrite::default()
    }))
}

/// Write access to the whole file system: no sandbox at all, as Codex's helper runs it, when the
/// network is on; refused when it is off (Codex keeps only its network filter then).
fn write_everywhere(network: Network) -> Result<SandboxPolicy, ProfileError> {
    match network {
        Network::Enabled => Ok(SandboxPolicy::DangerFullAccess {}),
        Network::Restricted => Err(ProfileError::WriteEverywhereWithoutNetwork),
    }
}

fn places(entries: &[Entry], policy_cwd: &Path) -> Result<Places, ProfileError> {
    let mut places = Places {
        root_read: false,
        root_write: false,
        root_deny: false,
        slash_tmp: false,
        tmpdir: false,
        paths: Vec::new(),
    };
    for entry in entries {
        let path = match &entry.path {
            EntryPath::Path { path } => path.clone(),
            EntryPath::GlobPattern { pattern } => return Err(ProfileError::Glob(pattern.clone())),
            EntryPath::Special { value } => match value {
                Special::Root {} => {
                    match entry.access {
                        Access::Read => places.root_read = true,
                        Access::Write => places.root_write = true,
                        Access::Deny => places.root_deny = true,
                    }
                    continue;
                }
                Special::Minimal {} => match entry.access {
                    // The system directories, readable anyway when the root is.
                    Access::Read => continue,
                    Access::Write => return Err(ProfileError::Minimal("write")),
                    Access::Deny => return Err(ProfileError::Minimal("deny")),
                },
                Special::ProjectRoots { subpath } => match subpath {
                    Some(subpath) => normalize(&policy_cwd.join(subpath)),
                    None => policy_cwd.to_path_buf(),
                },
                Special::SlashTmp {} | Special::Tmpdir {} if entry.access == Access::Write => {
                    match value {
                        Special::SlashTmp {} => places.slash_tmp = true,
                        _ => places.tmpdir = true,
                    }
                    continue;
                }
                Special::SlashTmp {} => PathBuf::from("/tmp"),
                // `$TMPDIR` read or hidden: read is the default; hiding it would need the
                // caller's TMPDIR, which the user view carries, not the profile.
                Special::Tmpdir {} if entry.access == Access::Read => continue,
                Special::Tmpdir {} => return Err(ProfileError::UnknownPlace("tmpdir".to_owned())),
                // Resolves to nothing: less access, never more.
                Special::Unknown { .. } if entry.access == Access::Write => continue,
                Special::Unknown { path, .. } => {
                    return Err(ProfileError::UnknownPlace(path.clone()));
                }
            },
        };
        if path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(ProfileError::Nul(path.to_string_lossy().into_owned()));
        }
        if !path.is_absolute() {
            return Err(ProfileError::Relative(path));
        }
        let path = normalize(&path);
        if path == Path::new("/") {
            // `/` named as a path is the root as the special place names it.
            match entry.access {
                Access::Read => places.root_read = true,
                Access::Write => places.root_write = true,
                Access::Deny => places.root_deny = true,
            }
            continue;
        }
        match places.paths.iter_mut().find(|(known, _)| *known == path) {
            // The same place twice: the stronger access decides (deny, then write, then read).
            Some((_, access)) => *access = (*access).max(entry.access),
            None => places.paths.push((path, entry.access)),
        }
    }
    Ok(places)
}

/// `path` resolved lexically, as Codex's helper resolves it: no `.`, each `..` taking the
/// component before it (never above `/`), no trailing slash. A `..` the kernel would resolve
/// after a symbolic link could lead elsewhere; cordon judges the place Codex names.
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other.as_os_str()),
        }
    }
    normal
}

#[cfg(test)]
#[path = "permission_profile_tests.rs"]
mod tests;

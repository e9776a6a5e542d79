//! The Seatbelt profile for a resolved policy: the base text plus generated rules, with every
//! policy path passed as a parameter.

use std::path::{Path, PathBuf};

use cordon_policies::ResolvedPolicy;

use crate::paths::{lexical_join, macos_real_path};

/// The fixed part of every profile: deny by default, processes, sysctls, services, devices and
/// `(allow file-read*)`.
pub const BASE_PROFILE: &str = include_str!("base.sbpl");
const NETWORK_ON: &str = include_str!("network_on.sbpl");
const NETWORK_OFF: &str = include_str!("network_off.sbpl");
/// Width of the `; --- Section ---` comment lines.
const HEADING_WIDTH: usize = 97;

/// The environment variable (and its value) that tells the command, and everything it starts,
/// that it runs under cordon's Seatbelt sandbox (`linux` under the Linux helper).
pub const SANDBOX_ENV: (&str, &str) = ("CORDON_SANDBOX", "seatbelt");
/// Added to the command's environment when the network is off, as on Linux.
pub const NETWORK_DISABLED_ENV: (&str, &str) = ("CORDON_SANDBOX_NETWORK_DISABLED", "1");

/// A Seatbelt profile and the parameters it refers to: what `sandbox-exec` needs besides the
/// command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatbeltProfile {
    /// The SBPL text. Contains no policy path: it names them as `(param "NAME")`.
    pub text: String,
    /// One `(NAME, PATH)` per `(param "NAME")` in `text`, in order of first use; passed to
    /// `sandbox-exec` as `-DNAME=PATH`.
    pub params: Vec<(String, PathBuf)>,
    /// Variables to add to the command's environment: [`SANDBOX_ENV`] and, when the network is
    /// off, [`NETWORK_DISABLED_ENV`].
    pub env: Vec<(&'static str, &'static str)>,
}

/// Builds the Seatbelt profile for `policy`. Pure: no file system access (see
/// [`with_real_paths`](crate::with_real_paths) for the facts only the file system knows).
///
/// Rules, in order (Seatbelt applies the *last* matching rule, so order is meaning):
///
/// 1. [`BASE_PROFILE`], ending in `(allow file-read*)`;
/// 2. per writable root `i`, one `(allow file-write* file-clone file-link (require-all (subpath ROOT) ...))`
///    with two kinds of exclusions, so that no later rule is needed to take anything back:
///    - `(require-not (subpath PROTECTED))` for every protected path inside (or containing) the
///      root: relative entries joined to *any* root and absolute entries, so a nested root's
///      `.git/hooks` is excluded from the enclosing root's rule too;
///    - `(require-not (literal ANCESTOR))` for every directory inside the root on the way to a
///      protected or hidden path (the root itself, `.git`, ...). Path rules do not follow
///      renames: without this, `mv .git g`, editing `g/hooks`, `mv g .git` would get around
///      the protection, and `mv ~/.config c` would expose a hidden `~/.config/gcloud`.
///
///    `file-link` is allowed only here: a hard link to a file outside the roots would make it
///    writable under a new name;
/// 3. the network rules: all IP networking when `network_access`, else only UNIX sockets;
/// 4. `(deny file-read* file-write* file-clone file-link ...)` and a deny of UNIX-socket connects for
///    every hidden path, overriding steps 1 to 3;
/// 5. last, a connect to (and a look at) each allowed UNIX socket, overriding step 4 for
///    exactly those sockets.
///
/// Every path is mapped with [`macos_real_path`] (`/tmp` -> `/private/tmp`, ...) so that it
/// matches what the kernel reports. Paths must be absolute, as [`ResolvedPolicy`] guarantees
/// (Seatbelt compares against absolute, resolved paths). `DangerFullAccess` is not a profile:
/// its caller runs the command directly.
pub fn seatbelt_profile(policy: &ResolvedPolicy) -> SeatbeltProfile {
    let mut profile = SeatbeltProfile {
        text: String::from(BASE_PROFILE),
        params: Vec::new(),
        env: vec![SANDBOX_ENV],
    };
    let roots = unique(policy.writable_roots.iter().map(|r| macos_real_path(r)));
    let hidden = unique(policy.hidden_paths.iter().map(|p| macos_real_path(p)));

    profile.text.push_str(&heading("Writable roots (cordon policy)"));
    if roots.is_empty() {
        profile.text.push_str("; None: nothing but the devices above is writable.\n");
    }
    let protected = protected_paths(policy, &roots);
    let ancestors = ancestors_in_roots(protected.iter().chain(&hidden), &roots);
    for (i, root) in roots.iter().enumerate() {
        let touches_root = |p: &&PathBuf| p.starts_with(root) || root.starts_with(p);
        let root_protected: Vec<&PathBuf> = protected.iter().filter(touches_root).collect();
        let root_ancestors: Vec<&PathBuf> =
            ancestors.iter().filter(|a| a.starts_with(root)).collect();
        push_root_rule(&mut profile, i, root, &root_protected, &root_ancestors);
    }

    profile.text.push('\n');
    profile.text.push_str(if policy.network_access { NETWORK_ON } else { NETWORK_OFF });
    if !policy.network_access {
        profile.env.push(NETWORK_DISABLED_ENV);
    }

    if !hidden.is_empty() {
        push_hidden_rules(&mut profile, hidden);
    }
    let sockets = unique(policy.allowed_sockets.iter().map(|p| macos_real_path(p)));
    if !sockets.is_empty() {
        push_allowed_sockets(&mut profile, sockets);
    }
    profile
}

/// For a domain allow-list: the command may reach cordon's proxy at `127.0.0.1:port` and
/// nothing else of the network (the profile was built with the network off). The port is a
/// number, the one value written into the text rather than passed as a parameter: Seatbelt
/// takes no parameter inside `(remote ip "…")`, and a `u16` cannot break out of the string.
/// TCP sockets may be created for it; the connect rule is what confines them.
pub fn allow_proxy_port(profile: &mut SeatbeltProfile, port: u16) {
    profile.text.push_str(&heading("Network proxy (domain allow-list)"));
    profile.text.push_str(&format!(
        "(allow system-socket (socket-domain AF_INET))\n\
         (allow network-outbound (remote ip \"localhost:{port}\"))\n"
    ));
    profile.env.retain(|(name, _)| *name != NETWORK_DISABLED_ENV.0);
}

/// After the hidden paths, which they override: a connect to each allowed UNIX socket
/// (`ALLOWED_SOCKET_k`; `allow_unix_sockets`), and a look at the socket file itself, even inside
/// a hidden directory or with the network off. Nothing else of a hidden directory opens up.
fn push_allowed_sockets(profile: &mut SeatbeltProfile, sockets: Vec<PathBuf>) {
    profile.text.push_str(&heading("Allowed UNIX sockets (cordon policy)"));
    let names: Vec<String> = (0..sockets.len()).map(|k| format!("ALLOWED_SOCKET_{k}")).collect();
    profile.text.push_str("(allow network-outbound");
    for name in &names {
        profile
            .text
            .push_str(&format!("\n  (remote unix-socket (path-literal (param \"{name}\")))"));
    }
    profile.text.push_str(")\n(allow file-read-metadata file-read-data");
    for name in &names {
        profile.text.push_str(&format!("\n  (literal (param \"{name}\"))"));
    }
    profile.text.push_str(")\n");
    profile.params.extend(names.into_iter().zip(sockets));
}

/// `(allow file-write* file-clone file-link ...)` for writable root `index`, minus its
/// protected paths (and everything below them) and the ancestor directories themselves.
/// `file-clone` (clonefile(2)) is its own operation, not part of `file-write*`: without it
/// Rust's `std::fs::copy`, which clones on APFS and does not fall back on EPERM, fails in
/// every build script. It gets the same scope as writes, never wider: a clone creates a file.
fn push_root_rule(
    profile: &mut SeatbeltProfile,
    index: usize,
    root: &Path,
    protected: &[&PathBuf],
    ancestors: &[&PathBuf],
) {
    let root_param = format!("WRITABLE_ROOT_{index}");
    profile.params.push((root_param.clone(), root.to_path_buf()));
    if protected.is_empty() && ancestors.is_empty() {
        profile.text.push_str(&format!(
            "(allow file-write* file-clone file-link (subpath (param \"{root_param}\")))\n"
        ));
        return;
    }
    profile.text.push_str(&format!(
        "(allow file-write* file-clone file-link\n  (require-all\n    (subpath (param \"{root_param}\"))"
    ));
    let exclusions = [("PROTECTED", "subpath", protected), ("ANCESTOR", "literal", ancestors)];
    for (kind, filter, paths) in exclusions {
        for (j, path) in paths.iter().enumerate() {
            let name = format!("{root_param}_{kind}_{j}");
            profile.text.push_str(&format!("\n    (require-not ({filter} (param \"{name}\")))"));
            profile.params.push((name, (*path).clone()));
        }
    }
    profile.text.push_str("))\n");
}

/// The closing denies for the hidden paths (`HIDDEN_k`).
fn push_hidden_rules(profile: &mut SeatbeltProfile, hidden: Vec<PathBuf>) {
    profile.text.push_str(&heading("Hidden paths (cordon policy)"));
    profile.text.push_str(concat!(
        "; Last, so they override every allow above: not readable, writable, clonable or\n",
        "; linkable even inside a writable root, and their UNIX sockets (container engines)\n",
        "; refuse connections.\n",
    ));
    let names: Vec<String> = (0..hidden.len()).map(|k| format!("HIDDEN_{k}")).collect();
    profile.text.push_str("(deny file-read* file-write* file-clone file-link");
    for name in &names {
        profile.text.push_str(&format!("\n  (subpath (param \"{name}\"))"));
    }
    profile.text.push_str(")\n(deny network-outbound");
    for name in &names {
        profile.text.push_str(&format!("\n  (remote unix-socket (subpath (param \"{name}\")))"));
    }
    profile.text.push_str(")\n");
    profile.params.extend(names.into_iter().zip(hidden));
}

/// The proper ancestors of `paths` that lie inside (or are) a writable root, deduplicated.
fn ancestors_in_roots<'a>(
    paths: impl IntoIterator<Item = &'a PathBuf>,
    roots: &[PathBuf],
) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for path in paths {
        for ancestor in path.ancestors().skip(1) {
            if roots.iter().any(|root| ancestor.starts_with(root)) {
                found.push(ancestor.to_path_buf());
            }
        }
    }
    unique(found)
}

/// Every protected path of the policy as an absolute, macOS-spelled path: relative entries
/// joined to each root, absolute entries as they are. Deduplicated, in root-then-entry order.
fn protected_paths(policy: &ResolvedPolicy, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for root in roots {
        for entry in &policy.protected_paths {
            let entry = Path::new(entry);
            all.push(if entry.is_absolute() {
                macos_real_path(entry)
            } else {
                lexical_join(root, entry)
            });
        }
    }
    unique(all)
}

/// A blank line and `; --- TITLE ---...`, as wide as the section headings of the `.sbpl` files.
fn heading(title: &str) -> String {
    let mut line = format!("\n; --- {title} ");
    while line.len() < 1 + HEADING_WIDTH {
        line.push('-');
    }
    line.push('\n');
    line
}

/// `paths` without repeats, first occurrence kept (profiles must be deterministic).
fn unique(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut seen = Vec::new();
    for path in paths {
        if !seen.contains(&path) {
            seen.push(path);
        }
    }
    seen
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;

//! How one hidden path becomes the absolute paths to hide.
//!
//! Tools keep their secrets where the user's variables say, not only in their default places:
//! `~` is `$HOME` and the account's home from the password database (an agent harness may point
//! `HOME` elsewhere); `~/.config/…`, `~/.local/share/…`, `~/.cache/…` and `~/.local/state/…` are
//! also looked for under `$XDG_CONFIG_HOME`, `$XDG_DATA_HOME`, `$XDG_CACHE_HOME` and
//! `$XDG_STATE_HOME`; and an entry spelled `$GNUPGHOME`, `$CARGO_HOME/credentials.toml`,
//! `$KUBECONFIG` … is where that variable puts it. The variables are read from cordon's own
//! environment (the user view), never the command's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::PolicyEnv;
use crate::paths::expand_path;
use crate::secret_files::RELOCATING_VARIABLES;

/// The relocating variables that are set: name → the absolute paths it names (one, or the
/// `:`-separated list of `KUBECONFIG`).
pub type Relocations = BTreeMap<String, Vec<PathBuf>>;

/// The XDG base directories and the default each one moves.
const XDG_DEFAULTS: [(&str, &str); 4] = [
    ("~/.config/", "XDG_CONFIG_HOME"),
    ("~/.local/share/", "XDG_DATA_HOME"),
    ("~/.cache/", "XDG_CACHE_HOME"),
    ("~/.local/state/", "XDG_STATE_HOME"),
];

/// Reads [`RELOCATING_VARIABLES`] through `lookup`: absolute paths only (a relative one names
/// nothing cordon could resolve the way the tool will).
pub(crate) fn relocations(lookup: impl Fn(&str) -> Option<std::ffi::OsString>) -> Relocations {
    let mut found = Relocations::new();
    for name in RELOCATING_VARIABLES {
        let Some(value) = lookup(name) else { continue };
        let value = PathBuf::from(value);
        let paths: Vec<PathBuf> = if *name == "KUBECONFIG" {
            std::env::split_paths(&value).collect()
        } else {
            vec![value]
        };
        let paths: Vec<PathBuf> = paths.into_iter().filter(|p| p.is_absolute()).collect();
        if !paths.is_empty() {
            found.insert((*name).to_owned(), paths);
        }
    }
    found
}

pub(crate) fn is_under_home(path: &str) -> bool {
    path == "~" || path.starts_with("~/")
}

/// A hidden path as absolute paths: a `~` path under `$HOME`, under the account's home when
/// that is another, and under the XDG base directory that moves it; a `$VARIABLE` path where
/// the variable puts it. None when a `$TOKEN` it names is not set.
pub fn expand_hidden_path(path: &str, env: &PolicyEnv<'_>) -> Vec<PathBuf> {
    if let Some((name, rest)) = relocated(path) {
        return relocated_bases(name, env).map(|base| join(base, rest)).collect();
    }
    let mut paths: Vec<PathBuf> = expand_path(path, env).into_iter().collect();
    if is_under_home(path) {
        if let Some(account) = env.account_home.filter(|account| Some(*account) != env.home) {
            paths.extend(expand_path(path, &PolicyEnv { home: Some(account), ..*env }));
        }
        for (prefix, name) in XDG_DEFAULTS {
            if let Some(rest) = path.strip_prefix(prefix) {
                paths.extend(relocated_bases(name, env).map(|base| join(base, rest)));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    paths.retain(|p| seen.insert(p.clone()));
    paths
}

/// `$NAME` or `$NAME/rest` for a relocating variable: its name and the rest.
fn relocated(path: &str) -> Option<(&str, &str)> {
    let spelled = path.strip_prefix('$')?;
    let (name, rest) = spelled.split_once('/').unwrap_or((spelled, ""));
    RELOCATING_VARIABLES.iter().find(|known| **known == name).map(|known| (*known, rest))
}

/// Where `name` points, without a value that would cover a home directory whole (`/`,
/// `GNUPGHOME=$HOME`): a broken setting must not hide everything.
fn relocated_bases<'a>(name: &str, env: &PolicyEnv<'a>) -> impl Iterator<Item = &'a Path> {
    let homes = [env.home, env.account_home];
    env.relocations
        .and_then(|found| found.get(name))
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .filter(move |base| !homes.iter().flatten().any(|home| home.starts_with(base)))
}

fn join(base: &Path, rest: &str) -> PathBuf {
    if rest.is_empty() { base.to_path_buf() } else { base.join(rest) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn paths(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn variables_move_entries_and_xdg_directories_move_their_defaults() {
        let vars: &[(&str, &str)] = &[
            ("GNUPGHOME", "/keys/gnupg"),
            ("CARGO_HOME", "/opt/cargo"),
            ("KUBECONFIG", "/k/a.yaml:/k/b.yaml:relative.yaml"),
            ("XDG_CONFIG_HOME", "/home/u/dotconfig"),
            ("PASSWORD_STORE_DIR", "relative"),
            ("HISTFILE", "/home/u"),
        ];
        let found = relocations(|name| {
            vars.iter().find(|(k, _)| *k == name).map(|(_, v)| std::ffi::OsString::from(v))
        });
        let env = PolicyEnv {
            home: Some(Path::new("/home/u")),
            relocations: Some(&found),
            ..PolicyEnv::default()
        };
        assert_eq!(expand_hidden_path("$GNUPGHOME", &env), paths(&["/keys/gnupg"]));
        assert_eq!(
            expand_hidden_path("$CARGO_HOME/credentials.toml", &env),
            paths(&["/opt/cargo/credentials.toml"])
        );
        assert_eq!(expand_hidden_path("$KUBECONFIG", &env), paths(&["/k/a.yaml", "/k/b.yaml"]));
        assert_eq!(
            expand_hidden_path("~/.config/gh", &env),
            paths(&["/home/u/.config/gh", "/home/u/dotconfig/gh"])
        );
        assert_eq!(expand_hidden_path("~/.local/share/keyrings", &env).len(), 1);
        // Unset, relative, or covering the home directory whole: nothing.
        assert_eq!(expand_hidden_path("$PASSWORD_STORE_DIR", &env), Vec::<PathBuf>::new());
        assert_eq!(expand_hidden_path("$HISTFILE", &env), Vec::<PathBuf>::new());
        assert_eq!(expand_hidden_path("$DOCKER_CONFIG/config.json", &env), Vec::<PathBuf>::new());
        // Not a relocating variable: left to `expand_path` (a relative path, dropped later).
        assert_eq!(expand_hidden_path("$OTHER/x", &env), paths(&["$OTHER/x"]));
    }
}

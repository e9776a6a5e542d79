//! `shell_environment_policy` (DESIGN §7 "Environment"): which variables a command sees.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use wildmatch::WildMatch;

/// The variables kept by `inherit = "core"`: enough for programs to find each other, the user,
/// a temp dir, the locale and the terminal.
const CORE_VARS: [&str; 10] =
    ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TERM"];

/// Names dropped unless `ignore_default_excludes`: the usual spellings of credentials.
const DEFAULT_EXCLUDES: [&str; 4] = ["*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*"];

/// Which of the caller's variables a command starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnvInherit {
    /// Every variable.
    #[default]
    All,
    /// Only the core variables (PATH HOME USER LOGNAME SHELL TMPDIR LANG LC_ALL LC_CTYPE TERM).
    Core,
    /// Nothing.
    None,
}

/// The `[shell_environment_policy]` config table.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShellEnvironmentPolicy {
    pub inherit: EnvInherit,
    /// Keep names that match `*KEY*`, `*SECRET*`, `*TOKEN*`, `*PASSWORD*`.
    pub ignore_default_excludes: bool,
    /// Glob patterns (`*`, `?`, case-insensitive, whole name) of names to drop.
    pub exclude: Vec<String>,
    /// Variables to set (after the excludes, so they are never dropped by them).
    pub set: BTreeMap<String, String>,
    /// If non-empty, only names matching one of these patterns are kept (applied last).
    pub include_only: Vec<String>,
}

impl ShellEnvironmentPolicy {
    /// Order: inherit (all / core / none) -> default excludes (unless
    /// `ignore_default_excludes`) -> `exclude` patterns -> `set` -> `include_only` (if non-empty,
    /// keep only matching names). Patterns: `*` and `?` globs, case-insensitive, whole name.
    pub fn apply(
        &self,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = match self.inherit {
            EnvInherit::All => vars.into_iter().collect(),
            EnvInherit::Core => {
                vars.into_iter().filter(|(name, _)| CORE_VARS.contains(&name.as_str())).collect()
            }
            EnvInherit::None => BTreeMap::new(),
        };
        if !self.ignore_default_excludes {
            let defaults = patterns(DEFAULT_EXCLUDES);
            env.retain(|name, _| !matches_any(&defaults, name));
        }
        let excludes = patterns(&self.exclude);
        env.retain(|name, _| !matches_any(&excludes, name));
        env.extend(self.set.iter().map(|(name, value)| (name.clone(), value.clone())));
        if !self.include_only.is_empty() {
            let includes = patterns(&self.include_only);
            env.retain(|name, _| matches_any(&includes, name));
        }
        env
    }
}

fn patterns<S: AsRef<str>>(globs: impl IntoIterator<Item = S>) -> Vec<WildMatch> {
    globs.into_iter().map(|glob| WildMatch::new_case_insensitive(glob.as_ref())).collect()
}

fn matches_any(patterns: &[WildMatch], name: &str) -> bool {
    patterns.iter().any(|pattern| pattern.matches(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        vars(pairs).into_iter().collect()
    }

    const CALLER: &[(&str, &str)] = &[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("TERM", "xterm"),
        ("EDITOR", "vi"),
        ("AWS_SECRET_ACCESS_KEY", "s"),
        ("github_token", "t"),
        ("DB_Password", "p"),
        ("MONKEY", "m"),
        ("CARGO_HOME", "/c"),
    ];

    #[test]
    fn the_default_inherits_everything_but_credentials() {
        assert_eq!(
            ShellEnvironmentPolicy::default().apply(vars(CALLER)),
            map(&[
                ("CARGO_HOME", "/c"),
                ("EDITOR", "vi"),
                ("HOME", "/home/u"),
                ("PATH", "/usr/bin"),
                ("TERM", "xterm"),
            ])
        );
    }

    #[test]
    fn core_keeps_only_core_names_and_none_keeps_nothing() {
        let core = ShellEnvironmentPolicy { inherit: EnvInherit::Core, ..Default::default() };
        assert_eq!(
            core.apply(vars(CALLER)),
            map(&[("HOME", "/home/u"), ("PATH", "/usr/bin"), ("TERM", "xterm")])
        );
        let none = ShellEnvironmentPolicy { inherit: EnvInherit::None, ..Default::default() };
        assert_eq!(none.apply(vars(CALLER)), BTreeMap::new());
    }

    #[test]
    fn default_excludes_can_be_turned_off_and_exclude_globs_are_case_insensitive() {
        let policy = ShellEnvironmentPolicy {
            ignore_default_excludes: true,
            exclude: vec!["cargo_*".to_owned(), "?ERM".to_owned(), "EDIT".to_owned()],
            ..Default::default()
        };
        assert_eq!(
            policy.apply(vars(CALLER)),
            map(&[
                ("AWS_SECRET_ACCESS_KEY", "s"),
                ("DB_Password", "p"),
                ("EDITOR", "vi"),
                ("HOME", "/home/u"),
                ("MONKEY", "m"),
                ("PATH", "/usr/bin"),
                ("github_token", "t"),
            ])
        );
    }

    #[test]
    fn set_comes_after_excludes_and_include_only_comes_last() {
        let policy = ShellEnvironmentPolicy {
            inherit: EnvInherit::Core,
            set: map(&[("API_TOKEN", "kept"), ("PATH", "/opt/bin"), ("FOO", "dropped")]),
            include_only: vec!["path".to_owned(), "*_TOKEN".to_owned(), "H?ME".to_owned()],
            ..Default::default()
        };
        assert_eq!(
            policy.apply(vars(CALLER)),
            map(&[("API_TOKEN", "kept"), ("HOME", "/home/u"), ("PATH", "/opt/bin")])
        );
    }

    #[test]
    fn config_toml_parses_with_defaults_and_rejects_unknown_keys() {
        let policy: ShellEnvironmentPolicy =
            toml::from_str("inherit = \"core\"\nexclude = [\"AWS_*\"]\n[set]\nCI = \"1\"\n")
                .unwrap();
        assert_eq!(
            policy,
            ShellEnvironmentPolicy {
                inherit: EnvInherit::Core,
                exclude: vec!["AWS_*".to_owned()],
                set: map(&[("CI", "1")]),
                ..Default::default()
            }
        );
        assert_eq!(
            toml::from_str::<ShellEnvironmentPolicy>("").unwrap(),
            ShellEnvironmentPolicy::default()
        );
        assert!(toml::from_str::<ShellEnvironmentPolicy>("inherit = \"some\"").is_err());
        assert!(toml::from_str::<ShellEnvironmentPolicy>("includeonly = []").is_err());
    }
}

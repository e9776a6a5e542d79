//! `shell_environment_policy`: which variables a command sees (`inherit`, the default
//! credential excludes, `exclude`, `set`, `include_only`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use wildmatch::WildMatch;

use crate::env_secrets::{
    DEFAULT_EXCLUDE_EXCEPTIONS, DEFAULT_EXCLUDES, ValueVerdict, classify_value,
};

/// The variables kept by `inherit = "core"`: enough for programs to find each other, the user,
/// a temp dir, the locale and the terminal.
const CORE_VARS: [&str; 10] =
    ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TERM"];

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
    /// Turn off the default excludes: the credential name patterns
    /// ([`DEFAULT_EXCLUDES`](crate::DEFAULT_EXCLUDES)) and the credential value rules.
    pub ignore_default_excludes: bool,
    /// Glob patterns (`*`, `?`, case-insensitive, whole name) of names to drop.
    pub exclude: Vec<String>,
    /// Variables to set (after the excludes, so they are never dropped by them).
    pub set: BTreeMap<String, String>,
    /// If non-empty, only names matching one of these patterns are kept (applied last).
    pub include_only: Vec<String>,
}

/// Why [`ShellEnvironmentPolicy::apply`] took a variable out (or a part of its value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RemovalReason {
    /// The name matched a default exclude pattern.
    SecretName,
    /// The value holds a known token shape or a private key.
    SecretValue,
    /// The value held `scheme://user:password@`; the variable stays without that part.
    UrlCredentials,
    /// The name matched one of the policy's own `exclude` patterns.
    Excluded,
}

/// A variable the policy removed or redacted. Carries the name only, never the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemovedVar {
    pub name: String,
    pub reason: RemovalReason,
}

/// The result of [`ShellEnvironmentPolicy::apply`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilteredEnv {
    /// The command's environment.
    pub vars: BTreeMap<String, String>,
    /// What the exclude rules took out, in name order. Variables that `inherit` or
    /// `include_only` simply did not select are not listed: those settings name what to keep.
    pub removed: Vec<RemovedVar>,
}

impl ShellEnvironmentPolicy {
    /// Order: inherit (all / core / none) -> default excludes by name and by value (unless
    /// `ignore_default_excludes`) -> `exclude` patterns -> `set` -> `include_only` (if
    /// non-empty, keep only matching names). Patterns: `*` and `?` globs, case-insensitive,
    /// whole name. `set` comes after the excludes: what the user sets on purpose is kept.
    pub fn apply(&self, vars: impl IntoIterator<Item = (String, String)>) -> FilteredEnv {
        let mut env: BTreeMap<String, String> = match self.inherit {
            EnvInherit::All => vars.into_iter().collect(),
            EnvInherit::Core => {
                vars.into_iter().filter(|(name, _)| CORE_VARS.contains(&name.as_str())).collect()
            }
            EnvInherit::None => BTreeMap::new(),
        };
        let mut removed = Vec::new();
        if !self.ignore_default_excludes {
            let defaults = patterns(DEFAULT_EXCLUDES);
            for (name, value) in std::mem::take(&mut env) {
                let (kept, reason) = screen(&name, value, &defaults);
                if let Some(reason) = reason {
                    removed.push(RemovedVar { name: name.clone(), reason });
                }
                if let Some(value) = kept {
                    env.insert(name, value);
                }
            }
        }
        let excludes = patterns(&self.exclude);
        env.retain(|name, _| {
            let excluded = matches_any(&excludes, name);
            if excluded {
                removed.push(RemovedVar { name: name.clone(), reason: RemovalReason::Excluded });
            }
            !excluded
        });
        env.extend(self.set.iter().map(|(name, value)| (name.clone(), value.clone())));
        if !self.include_only.is_empty() {
            let includes = patterns(&self.include_only);
            env.retain(|name, _| matches_any(&includes, name));
        }
        removed.sort_by(|a, b| a.name.cmp(&b.name));
        FilteredEnv { vars: env, removed }
    }
}

/// The default excludes for one variable: the value it keeps (none when dropped) and, when
/// something was taken, why. A name rule decides before the value is looked at.
fn screen(
    name: &str,
    value: String,
    defaults: &[NamePattern],
) -> (Option<String>, Option<RemovalReason>) {
    if matches_any(defaults, name) && !DEFAULT_EXCLUDE_EXCEPTIONS.contains(&name) {
        return (None, Some(RemovalReason::SecretName));
    }
    match classify_value(&value) {
        ValueVerdict::Clean => (Some(value), None),
        ValueVerdict::Secret => (None, Some(RemovalReason::SecretValue)),
        ValueVerdict::Redacted(without) => (Some(without), Some(RemovalReason::UrlCredentials)),
    }
}

fn patterns<S: AsRef<str>>(globs: impl IntoIterator<Item = S>) -> Vec<NamePattern> {
    globs.into_iter().map(|glob| NamePattern::new(glob.as_ref())).collect()
}

fn matches_any(patterns: &[NamePattern], name: &str) -> bool {
    // Upper-cased once per name for the literal shapes; `None` for a name that is not ASCII,
    // which only the glob matcher compares (some non-ASCII letters lower-case to ASCII ones).
    let upper = name.is_ascii().then(|| name.to_ascii_uppercase());
    patterns.iter().any(|pattern| pattern.matches(name, upper.as_deref()))
}

/// A case-insensitive, whole-name glob (`*`, `?`), matched exactly as
/// `WildMatch::new_case_insensitive` matches it. The shapes the default excludes use, `*LIT*`
/// and `*LIT`, compare an ASCII name with the literal directly: every launch screens the whole
/// environment, and a substring search per pattern is far cheaper than a glob walk.
struct NamePattern {
    glob: WildMatch,
    literal: Option<Literal>,
}

enum Literal {
    /// `*LIT*`, LIT upper-cased.
    Contains(String),
    /// `*LIT`, LIT upper-cased.
    EndsWith(String),
}

impl NamePattern {
    fn new(glob: &str) -> Self {
        let plain = |lit: &str| {
            (!lit.is_empty() && lit.is_ascii() && !lit.contains(['*', '?']))
                .then(|| lit.to_ascii_uppercase())
        };
        let literal = match glob.strip_prefix('*') {
            Some(rest) => match rest.strip_suffix('*') {
                Some(middle) => plain(middle).map(Literal::Contains),
                None => plain(rest).map(Literal::EndsWith),
            },
            None => None,
        };
        NamePattern { glob: WildMatch::new_case_insensitive(glob), literal }
    }

    /// `upper`: the name upper-cased when it is ASCII.
    fn matches(&self, name: &str, upper: Option<&str>) -> bool {
        match (&self.literal, upper) {
            (Some(Literal::Contains(lit)), Some(upper)) => upper.contains(lit.as_str()),
            (Some(Literal::EndsWith(lit)), Some(upper)) => upper.ends_with(lit.as_str()),
            _ => self.glob.matches(name),
        }
    }
}

#[cfg(test)]
#[path = "env_policy_tests.rs"]
mod table_tests;

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

    /// The literal fast path decides exactly as the glob matcher: ASCII names of every case,
    /// names that only end or start with the literal, and non-ASCII names (the Kelvin sign
    /// lower-cases to `k`, so `\u{212A}EY` matches `*KEY*` through the glob).
    #[test]
    fn name_patterns_match_exactly_as_the_glob_matcher() {
        let globs: Vec<&str> = DEFAULT_EXCLUDES
            .iter()
            .copied()
            .chain(["*", "**", "*x*y*", "A*", "*a?", "?", "PATH", "*_pat", "*Key", "*é*", ""])
            .collect();
        let names = [
            "KEY",
            "key",
            "MonKeY",
            "API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "GH_PAT",
            "gh_pat",
            "PATH",
            "PAT",
            "_PAT_",
            "MY_PWD",
            "PWD",
            "xoy",
            "x_y",
            "A",
            "a",
            "",
            "\u{212A}EY",
            "\u{212A}",
            "caf\u{e9}",
            "CAF\u{c9}",
            "s\u{17f}ession",
            "TOKEN\u{e9}",
            "a1",
        ];
        for glob in globs {
            let reference = WildMatch::new_case_insensitive(glob);
            let pattern = NamePattern::new(glob);
            for name in names {
                let upper = name.is_ascii().then(|| name.to_ascii_uppercase());
                assert_eq!(
                    pattern.matches(name, upper.as_deref()),
                    reference.matches(name),
                    "{glob:?} against {name:?}"
                );
            }
        }
    }

    #[test]
    fn the_default_inherits_everything_but_credentials() {
        assert_eq!(
            ShellEnvironmentPolicy::default().apply(vars(CALLER)).vars,
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
            core.apply(vars(CALLER)).vars,
            map(&[("HOME", "/home/u"), ("PATH", "/usr/bin"), ("TERM", "xterm")])
        );
        let none = ShellEnvironmentPolicy { inherit: EnvInherit::None, ..Default::default() };
        assert_eq!(none.apply(vars(CALLER)).vars, BTreeMap::new());
    }

    #[test]
    fn default_excludes_can_be_turned_off_and_exclude_globs_are_case_insensitive() {
        let policy = ShellEnvironmentPolicy {
            ignore_default_excludes: true,
            exclude: vec!["cargo_*".to_owned(), "?ERM".to_owned(), "EDIT".to_owned()],
            ..Default::default()
        };
        assert_eq!(
            policy.apply(vars(CALLER)).vars,
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
            policy.apply(vars(CALLER)).vars,
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

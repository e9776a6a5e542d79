//! `$CORDON_HOME/config.toml` (`docs/config.md`) and `-c key=value` overrides. No file is
//! needed: every key has a default, and flags override the file.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use cordon_policies::{
    AskForApproval, DomainRules, EnvSnapshot, SandboxMode, ShellEnvironmentPolicy, WorkspaceWrite,
};
use cordon_policies::{LimitKey, Limits, MountViewRequirement};
use serde::{Deserialize, Serialize};

/// The config file's keys. Unknown keys are an error, so a typo never silently weakens the
/// sandbox.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub sandbox_mode: Option<SandboxMode>,
    pub approval_policy: Option<AskForApproval>,
    /// `[sandbox_workspace_write]`: the policy's own fields, in the shape of Codex's
    /// `workspace-write` policy JSON.
    #[serde(default)]
    pub sandbox_workspace_write: WorkspaceWrite,
    #[serde(default)]
    pub shell_environment_policy: ShellEnvironmentPolicy,
    /// `network = "off" | "on" | { allow = [...], deny = [...] }`; absent keeps
    /// `[sandbox_workspace_write] network_access` (which means "on").
    pub network: Option<NetworkSetting>,
    /// Replaces the default protected paths.
    pub protected_paths: Option<Vec<String>>,
    /// Replaces the default hidden paths.
    pub hidden_paths: Option<Vec<String>>,
    /// UNIX sockets reachable despite the hidden paths (added to
    /// `[sandbox_workspace_write] allow_unix_sockets`).
    #[serde(default)]
    pub allow_unix_sockets: Vec<String>,
    /// `"auto" | "required" | "off"`; also spelled `mount_view`.
    #[serde(default, alias = "mount_view")]
    pub sandbox_mount_view: MountViewRequirement,
    #[serde(default)]
    pub sandbox_best_effort: bool,
    /// `false` lets sandboxed commands read every entry of the home directory (the hidden paths
    /// stay hidden); by default only the entries on the allow-list are readable.
    pub home_allow_list: Option<bool>,
    /// Entries of the home directory readable besides the allow-list (`~/…` or absolute).
    #[serde(default)]
    pub home_readable: Vec<String>,
    /// Allow a writable root that is `$HOME` or an ancestor of it.
    #[serde(default)]
    pub allow_home_root: bool,
    /// The helper executable (defaults to this binary).
    pub linux_sandbox_exe: Option<PathBuf>,
    /// Package-manager presets every run gets (`--preset` adds to them; docs/presets.md).
    #[serde(default)]
    pub presets: Vec<String>,
    /// Settings of the presets' hidden configuration files (`~/.npmrc`, pip's user files) the
    /// user says hold no secret, so their values may reach sandboxed commands:
    /// `"npm.registry"`, `"npm.@scope:registry"`, `"pip.index-url"`, `"pip.extra-index-url"`,
    /// `"pip.trusted-host"`.
    #[serde(default)]
    pub preset_settings_not_secret: Vec<String>,
    /// `"auto" | "transaction" | "direct"`: how one-shot runs write their roots (`--writes`).
    pub writes: Option<cordon_exec_core::WriteChoice>,
    /// `[undo]`: `days = 7`, `runs = 50` — how long and how many transactional runs that
    /// applied changes stay undoable (`cordon diff`, `cordon undo`).
    pub undo: Option<cordon_exec_core::UndoRetention>,
    /// `[limits]`: `memory = "2G"`, `pids = 512`, … (the keys of `--limit`).
    #[serde(default)]
    pub limits: ConfigLimits,
}

/// The `[limits]` table, read and checked as `--limit` reads its values, so a bad one is an
/// error with its line.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConfigLimits(pub Limits);

/// As the raw numbers the file could hold (`cordon config show`).
impl Serialize for ConfigLimits {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.0.iter() {
            map.serialize_entry(key.as_str(), &value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ConfigLimits {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Value {
            Number(u64),
            Text(String),
        }
        let table = std::collections::BTreeMap::<String, Value>::deserialize(deserializer)?;
        let mut limits = Limits::default();
        for (name, value) in table {
            let key: LimitKey = name.parse().map_err(D::Error::custom)?;
            let text = match value {
                Value::Number(number) => number.to_string(),
                Value::Text(text) => text,
            };
            limits.set_text(key, &text).map_err(D::Error::custom)?;
        }
        Ok(ConfigLimits(limits))
    }
}

/// The `network` key.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "toml::Value", into = "toml::Value")]
pub enum NetworkSetting {
    Switch(NetworkSwitch),
    Domains(DomainRules),
}

/// What `network` may be, for the error that names a value it may not.
const NETWORK_FORMS: &str = "network must be \"off\", \"on\" or a table \
    { allow = [\"host\", \"*.suffix\", \"host:port\"], deny = [...] }";

/// `a` or `an`, for a TOML type's name.
fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" }
}

impl From<NetworkSetting> for toml::Value {
    fn from(setting: NetworkSetting) -> toml::Value {
        match setting {
            NetworkSetting::Switch(NetworkSwitch::Off) => toml::Value::String("off".into()),
            NetworkSetting::Switch(NetworkSwitch::On) => toml::Value::String("on".into()),
            NetworkSetting::Domains(rules) => {
                let list = |items: Vec<String>| {
                    toml::Value::Array(items.into_iter().map(toml::Value::String).collect())
                };
                let mut table = toml::Table::new();
                table.insert("allow".into(), list(rules.allow));
                table.insert("deny".into(), list(rules.deny));
                toml::Value::Table(table)
            }
        }
    }
}

impl TryFrom<toml::Value> for NetworkSetting {
    type Error = String;

    fn try_from(value: toml::Value) -> Result<Self, Self::Error> {
        match value {
            toml::Value::String(text) => match text.as_str() {
                "off" => Ok(NetworkSetting::Switch(NetworkSwitch::Off)),
                "on" => Ok(NetworkSetting::Switch(NetworkSwitch::On)),
                other => Err(format!("{NETWORK_FORMS}, not {other:?}")),
            },
            table @ toml::Value::Table(_) => table
                .try_into::<DomainRules>()
                .map(NetworkSetting::Domains)
                .map_err(|error| format!("{NETWORK_FORMS}: {}", one_line(error.message()))),
            other => Err(format!(
                "{NETWORK_FORMS}, not {} {}",
                article(other.type_str()),
                other.type_str()
            )),
        }
    }
}

/// `network = "off"` or `"on"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkSwitch {
    Off,
    On,
}

/// `$CORDON_HOME`, default `~/.cordon` (the user view's `cordon_home`).
pub fn cordon_home() -> Option<PathBuf> {
    read_user_view().cordon_home
}

/// The user view: HOME, TMPDIR, XDG_RUNTIME_DIR, SSH_AUTH_SOCK, the session bus's socket
/// (DBUS_SESSION_BUS_ADDRESS), the variables that move a secret, CORDON_HOME and the uid, from
/// cordon's own environment, and the uid's home in the password database. The one source for every decision about paths (hidden paths, the
/// `$TMPDIR` writable root, CORDON_HOME outside the writable roots), on every entry point; the
/// command's environment, which `shell_environment_policy` shapes, never feeds them.
pub fn user_view() -> anyhow::Result<EnvSnapshot> {
    let view = read_user_view();
    // It travels to the helper as JSON, which holds only UTF-8 paths; refusing here gives a
    // clearer message than the helper's exit 125.
    serde_json::to_string(&view).context(
        "HOME, TMPDIR, XDG_RUNTIME_DIR, SSH_AUTH_SOCK, DBUS_SESSION_BUS_ADDRESS, CORDON_HOME, a \
         variable that moves a secret (XDG_CONFIG_HOME, GNUPGHOME, KUBECONFIG, ...) or the home \
         directory in the password database is not valid UTF-8",
    )?;
    Ok(view)
}

fn read_user_view() -> EnvSnapshot {
    let uid = nix::unistd::getuid();
    let mut view = EnvSnapshot::from_lookup(|k| std::env::var_os(k), Some(uid.as_raw()));
    view.account_home = nix::unistd::User::from_uid(uid).ok().flatten().map(|user| user.dir);
    view
}

/// Loads `config.toml` from `home` (absent = defaults) and applies `-c key=value` overrides.
pub fn load(home: Option<&Path>, overrides: &[String]) -> anyhow::Result<Config> {
    let path = home.map(|h| h.join("config.toml"));
    let text = match &path {
        Some(path) => crate::state_files::read(path)?,
        None => None,
    };
    let file_error = |path: &Path, text: &str, error: toml::de::Error| {
        anyhow::anyhow!("{}: {}", path.display(), toml_error(text, &error))
    };
    // Read as the config shape straight from the text first, so a bad key or value is reported
    // with its line.
    if let (Some(path), Some(text)) = (&path, &text) {
        toml::from_str::<Config>(text).map_err(|error| file_error(path, text, error))?;
    }
    let mut table = match (&path, &text) {
        (Some(path), Some(text)) => {
            toml::from_str::<toml::Table>(text).map_err(|error| file_error(path, text, error))?
        }
        _ => toml::Table::new(),
    };
    for item in overrides {
        apply_override(&mut table, item)?;
    }
    let without_overrides = overrides.is_empty();
    Config::deserialize(toml::Value::Table(table)).map_err(|error| {
        // The file's line is known only when no `-c` changed the table.
        let place = match (&path, &text) {
            (Some(path), Some(_)) if without_overrides => format!("{}: ", path.display()),
            (Some(path), Some(_)) => format!("{} with -c overrides: ", path.display()),
            _ => "-c overrides: ".to_owned(),
        };
        anyhow::anyhow!("{place}{}", one_line(error.message()))
    })
}

/// `line N: message` on one line (toml's own rendering is a multi-line caret diagram).
pub fn toml_error(text: &str, error: &toml::de::Error) -> String {
    let line = error
        .span()
        .and_then(|span| text.get(..span.start))
        .map(|before| format!("line {}: ", before.matches('\n').count() + 1))
        .unwrap_or_default();
    format!("{line}{}", one_line(error.message()))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `-c key=value` overrides alone, as the table they make.
pub fn overrides_table(overrides: &[String]) -> anyhow::Result<toml::Table> {
    let mut table = toml::Table::new();
    for item in overrides {
        apply_override(&mut table, item)?;
    }
    Ok(table)
}

/// The config file's own table (empty when there is none); `load` has checked it.
pub fn file_table(home: Option<&Path>) -> anyhow::Result<toml::Table> {
    let Some(path) = home.map(|h| h.join("config.toml")) else { return Ok(toml::Table::new()) };
    let Some(text) = crate::state_files::read(&path)? else { return Ok(toml::Table::new()) };
    toml::from_str::<toml::Table>(&text)
        .map_err(|error| anyhow::anyhow!("{}: {}", path.display(), toml_error(&text, &error)))
}

/// `a.b=value`: the value is read as TOML (`true`, `3`, `["x"]`, `"s"`), or as a plain string
/// when it is not valid TOML (`-c sandbox_mode=read-only`).
fn apply_override(table: &mut toml::Table, item: &str) -> anyhow::Result<()> {
    let Some((key, raw)) = item.split_once('=') else {
        bail!("-c {item:?}: expected key=value");
    };
    let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()));
    let mut parts: Vec<&str> = key.trim().split('.').collect();
    let Some(last) = parts.pop().filter(|k| !k.is_empty()) else {
        bail!("-c {item:?}: empty key");
    };
    let mut node = table;
    for part in parts {
        let entry =
            node.entry(part.to_owned()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        node = match entry {
            toml::Value::Table(t) => t,
            _ => bail!("-c {item:?}: {part} is not a table"),
        };
    }
    node.insert(last.to_owned(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_toml_values_and_plain_strings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "approval_policy = \"never\"\n").unwrap();
        let config = load(
            Some(dir.path()),
            &[
                "sandbox_mode=read-only".into(),
                "sandbox_workspace_write.network_access=true".into(),
                "shell_environment_policy.inherit=core".into(),
            ],
        )
        .unwrap();
        assert_eq!(config.approval_policy, Some(AskForApproval::Never));
        assert_eq!(config.sandbox_mode, Some(SandboxMode::ReadOnly));
        assert!(config.sandbox_workspace_write.network_access);
    }

    #[test]
    fn network_is_off_on_or_a_domain_list() {
        let on = load(None, &["network=on".into()]).unwrap();
        assert_eq!(on.network, Some(NetworkSetting::Switch(NetworkSwitch::On)));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "network = { allow = [\"pkg.example.com\", \"*.example.org\"], deny = [\"x.example.org\"] }\n",
        )
        .unwrap();
        let domains = load(Some(dir.path()), &[]).unwrap();
        assert_eq!(
            domains.network,
            Some(NetworkSetting::Domains(DomainRules {
                allow: vec!["pkg.example.com".into(), "*.example.org".into()],
                deny: vec!["x.example.org".into()],
            }))
        );
        let error = load(None, &["network=sometimes".into()]).unwrap_err().to_string();
        assert!(error.contains(r#"network must be "off", "on" or a table"#), "{error}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "\nnetwork = 5\n").unwrap();
        let error = load(Some(dir.path()), &[]).unwrap_err().to_string();
        assert!(error.contains("line 2: network must be"), "{error}");
        assert!(!error.contains("untagged"), "{error}");
    }

    #[test]
    fn unknown_keys_and_bad_overrides_are_errors() {
        assert!(load(None, &["sandbox_mood=read-only".into()]).is_err());
        assert!(load(None, &["nokey".into()]).is_err());
        assert!(load(None, &["approval_policy=sometimes".into()]).is_err());
        assert!(load(None, &[]).is_ok());
    }
}

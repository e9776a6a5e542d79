//! `$CORDON_HOME/config.toml` (DESIGN §8) and `-c key=value` overrides. No file is needed: every
//! key has a default, and flags override the file.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use cordon_policies::{AskForApproval, SandboxMode, ShellEnvironmentPolicy};
use serde::Deserialize;

/// The config file's keys. Unknown keys are an error, so a typo never silently weakens the
/// sandbox.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub sandbox_mode: Option<SandboxMode>,
    pub approval_policy: Option<AskForApproval>,
    #[serde(default)]
    pub sandbox_workspace_write: WorkspaceWriteConfig,
    #[serde(default)]
    pub shell_environment_policy: ShellEnvironmentPolicy,
    /// Replaces the default protected paths.
    pub protected_paths: Option<Vec<String>>,
    /// Replaces the default hidden paths.
    pub hidden_paths: Option<Vec<String>>,
    #[serde(default)]
    pub sandbox_mount_view: MountViewSetting,
    #[serde(default)]
    pub sandbox_best_effort: bool,
    /// The helper executable (defaults to this binary).
    pub linux_sandbox_exe: Option<PathBuf>,
}

/// `[sandbox_workspace_write]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceWriteConfig {
    #[serde(default)]
    pub writable_roots: Vec<PathBuf>,
    #[serde(default)]
    pub network_access: bool,
    #[serde(default)]
    pub exclude_tmpdir_env_var: bool,
    #[serde(default)]
    pub exclude_slash_tmp: bool,
}

/// `sandbox_mount_view = "auto" | "required" | "off"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MountViewSetting {
    #[default]
    Auto,
    Required,
    Off,
}

/// `$CORDON_HOME`, default `~/.cordon`.
pub fn cordon_home() -> Option<PathBuf> {
    match std::env::var_os("CORDON_HOME") {
        Some(home) if !home.is_empty() => Some(PathBuf::from(home)),
        _ => std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cordon")),
    }
}

/// Loads `config.toml` from `home` (absent = defaults) and applies `-c key=value` overrides.
pub fn load(home: Option<&Path>, overrides: &[String]) -> anyhow::Result<Config> {
    let mut table = match home.map(|h| h.join("config.toml")) {
        Some(path) if path.exists() => {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            toml::from_str::<toml::Table>(&text)
                .with_context(|| format!("invalid TOML in {}", path.display()))?
        }
        _ => toml::Table::new(),
    };
    for item in overrides {
        apply_override(&mut table, item)?;
    }
    toml::Value::Table(table).try_into().context("invalid configuration")
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
    fn unknown_keys_and_bad_overrides_are_errors() {
        assert!(load(None, &["sandbox_mood=read-only".into()]).is_err());
        assert!(load(None, &["nokey".into()]).is_err());
        assert!(load(None, &["approval_policy=sometimes".into()]).is_err());
        assert!(load(None, &[]).is_ok());
    }
}

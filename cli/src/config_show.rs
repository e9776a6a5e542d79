//! `cordon config show`: the config file's path and every effective setting, each with where
//! it came from (`-c`, the file, or the default).

use std::fmt::Write as _;
use std::process::ExitCode;

use cordon_policies::{DEFAULT_HIDDEN_PATHS, DEFAULT_PROTECTED_PATHS};
use serde::Serialize;

use crate::config;
use crate::flags::ConfigShowArgs;

/// One effective setting.
#[derive(Debug, Serialize)]
struct Setting {
    /// Dotted key, as `-c` takes it.
    key: String,
    /// The value in TOML.
    value: String,
    /// `-c`, `file`, `environment` or `default`.
    source: &'static str,
}

/// What a key that is absent means (keys whose absence the types cannot show).
fn absent_defaults() -> Vec<(&'static str, String)> {
    vec![
        ("sandbox_mode", "\"workspace-write\"".to_owned()),
        ("approval_policy", "\"on-request\"".to_owned()),
        ("network", "\"off\" (unless sandbox_workspace_write.network_access)".to_owned()),
        (
            "protected_paths",
            format!(
                "{} entries: {}",
                DEFAULT_PROTECTED_PATHS.len(),
                DEFAULT_PROTECTED_PATHS.join(", ")
            ),
        ),
        (
            "hidden_paths",
            format!(
                "the catalogue of {} entries (docs/secrets.md; `cordon doctor` lists those that \
                 exist here)",
                DEFAULT_HIDDEN_PATHS.len()
            ),
        ),
        ("linux_sandbox_exe", "this cordon binary".to_owned()),
        (
            "home_allow_list",
            format!(
                "true (a sandboxed command reads {} listed entries of the home directory and its \
                 plain entries; docs/secrets.md)",
                cordon_policies::HOME_READABLE.len()
            ),
        ),
    ]
}

pub fn run(args: &ConfigShowArgs) -> anyhow::Result<ExitCode> {
    let home = config::cordon_home();
    let effective = config::load(home.as_deref(), &args.overrides)?;
    let file = config::file_table(home.as_deref())?;
    let overrides = config::overrides_table(&args.overrides)?;
    let path = home.as_ref().map(|h| h.join("config.toml"));
    let exists = path.as_ref().is_some_and(|p| p.is_file());
    let mut leaves = Vec::new();
    flatten("", &toml::Value::try_from(&effective)?, &mut leaves);
    let mut settings: Vec<Setting> = leaves
        .into_iter()
        .map(|(key, value)| {
            let source = if lookup(&overrides, &key) {
                "-c"
            } else if lookup(&file, &key) {
                "file"
            } else {
                "default"
            };
            Setting { key, value: value.to_string(), source }
        })
        .collect();
    for (key, meaning) in absent_defaults() {
        if !settings.iter().any(|s| s.key == key || s.key.starts_with(&format!("{key}."))) {
            settings.push(Setting { key: key.to_owned(), value: meaning, source: "default" });
        }
    }
    if let Some(exe) = std::env::var_os("CORDON_LINUX_SANDBOX_EXE").filter(|v| !v.is_empty()) {
        settings.retain(|s| s.key != "linux_sandbox_exe");
        settings.push(Setting {
            key: "linux_sandbox_exe".into(),
            value: format!("{:?}", exe.to_string_lossy()),
            source: "environment",
        });
    }
    settings.sort_by(|a, b| a.key.cmp(&b.key));
    let text = if args.json {
        let document = serde_json::json!({
            "schema_version": crate::output::JSON_SCHEMA_VERSION,
            "cordon_home": home,
            "config_file": path,
            "config_file_exists": exists,
            "settings": settings,
        });
        format!("{}\n", serde_json::to_string_pretty(&document)?)
    } else {
        let mut text = String::new();
        let shown =
            |p: &std::path::Path| cordon_policies::render_text(&p.display().to_string()).text;
        match &path {
            Some(p) if exists => {
                let _ = writeln!(text, "# config file: {}", shown(p));
            }
            Some(p) => {
                let _ = writeln!(
                    text,
                    "# config file: {} (none: every setting is a default)",
                    shown(p)
                );
            }
            None => {
                let _ = writeln!(text, "# no CORDON_HOME and no HOME: every setting is a default");
            }
        }
        let _ = writeln!(text, "# flags given to a command override these (docs/config.md)");
        let width = settings.iter().map(|s| s.key.len()).max().unwrap_or(0);
        for setting in &settings {
            let value = cordon_policies::render_text(&setting.value).text;
            let _ = writeln!(text, "{:width$} = {value}  # {}", setting.key, setting.source);
        }
        text
    };
    crate::output::write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Every leaf of `value` as (dotted key, value); arrays and empty tables are leaves.
fn flatten(prefix: &str, value: &toml::Value, out: &mut Vec<(String, toml::Value)>) {
    match value {
        toml::Value::Table(table) if !table.is_empty() => {
            for (key, child) in table {
                let dotted =
                    if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                flatten(&dotted, child, out);
            }
        }
        _ if prefix.is_empty() => {}
        other => out.push((prefix.to_owned(), other.clone())),
    }
}

/// Whether `table` sets `key` (dotted) or a table above it.
fn lookup(table: &toml::Table, key: &str) -> bool {
    let mut node = table;
    let mut parts = key.split('.').peekable();
    while let Some(part) = parts.next() {
        match node.get(part) {
            None => return false,
            Some(toml::Value::Table(child)) if parts.peek().is_some() => node = child,
            Some(_) => return true,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_are_dotted_and_looked_up_through_tables() {
        let value: toml::Value =
            toml::from_str("a = 1\n[b]\nc = [\"x\"]\nd = { e = true }\n").unwrap();
        let mut leaves = Vec::new();
        flatten("", &value, &mut leaves);
        let keys: Vec<&str> = leaves.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b.c", "b.d.e"]);
        let table = value.as_table().unwrap();
        assert!(lookup(table, "b.d.e"));
        assert!(lookup(table, "a"));
        assert!(!lookup(table, "b.x"));
    }
}

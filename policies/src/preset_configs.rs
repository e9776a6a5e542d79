//! Reading the package managers' user-level configuration for the presets: `~/.npmrc` (npm's
//! ini), pip's `pip.conf` (Python's configparser format), cargo's `config.toml`, and the
//! registry URLs they name. Only what decides where a client connects is read; everything else
//! is left to the client.

use std::collections::BTreeMap;

/// A configuration file a preset cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigReadError {
    #[error("line {line}: ${{{name}}} is not set")]
    UnsetVariable { line: usize, name: String },
    #[error("line {line}: neither a section nor `key = value`")]
    NotKeyValue { line: usize },
    /// The first line of the TOML parser's message (the next lines quote the file, which may
    /// hold a token).
    #[error("{first_line}")]
    Toml { first_line: String },
    #[error("the configuration cannot be written back as TOML: {reason}")]
    TomlWrite { reason: String },
}

/// A registry or index URL: where a client connects, and the URL without credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryUrl {
    /// Lower case; an IPv6 address in brackets.
    pub host: String,
    pub port: u16,
    /// The URL with any `user:password@` taken out.
    pub without_credentials: String,
    pub had_credentials: bool,
}

impl RegistryUrl {
    /// Reads an `http`/`https` URL (cargo's `sparse+` and `registry+` prefixes allowed).
    /// `None` for anything else: cordon's proxy carries HTTP and HTTPS only.
    pub fn parse(url: &str) -> Option<RegistryUrl> {
        let url = url.trim();
        let url =
            url.strip_prefix("sparse+").or_else(|| url.strip_prefix("registry+")).unwrap_or(url);
        let (scheme, rest) = url.split_once("://")?;
        let default_port = match scheme.to_ascii_lowercase().as_str() {
            "https" => 443,
            "http" => 80,
            _ => return None,
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        let (had_credentials, host_port) = match authority.rsplit_once('@') {
            Some((_, host_port)) => (true, host_port),
            None => (false, authority),
        };
        let (host, port) = split_host_port(host_port)?;
        let port = match port {
            Some(text) => text.parse::<u16>().ok().filter(|p| *p != 0)?,
            None => default_port,
        };
        let host = host.to_ascii_lowercase();
        let valid = if host.starts_with('[') {
            host.len() > 2
                && host[1..host.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        } else {
            !host.is_empty()
                && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        };
        if !valid {
            return None;
        }
        Some(RegistryUrl {
            without_credentials: format!("{scheme}://{host_port}{path}"),
            host,
            port,
            had_credentials,
        })
    }

    /// The allow-list pattern for it: `host:port`.
    pub fn host_pattern(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

fn split_host_port(text: &str) -> Option<(&str, Option<&str>)> {
    if text.starts_with('[') {
        let close = text.find(']')?;
        let (host, rest) = text.split_at(close + 1);
        return match rest.strip_prefix(':') {
            Some(port) => Some((host, Some(port))),
            None if rest.is_empty() => Some((host, None)),
            None => None,
        };
    }
    Some(match text.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    })
}

/// What `~/.npmrc` says about registries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NpmConfig {
    pub registry: Option<String>,
    /// `@scope:registry` entries: (`@scope`, URL).
    pub scoped: Vec<(String, String)>,
    /// Registry URLs (as expanded) that took a `${VAR}` from the environment: a token kept in a
    /// variable must not reach the command inside a URL, so these are not passed on.
    pub expanded: Vec<String>,
}

/// Reads npm's ini: `key = value` lines, `;` and `#` comments, `${VAR}` taken from `env` as
/// npm does.
pub fn parse_npmrc(
    text: &str,
    env: &BTreeMap<String, String>,
) -> Result<NpmConfig, ConfigReadError> {
    let mut config = NpmConfig::default();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with([';', '#']) {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let key = key.trim();
        let value = unquote(value.trim());
        let expanded = value.contains("${");
        let value = expand_variables(value, env).map_err(|UnsetVariable(name)| {
            ConfigReadError::UnsetVariable { line: number + 1, name }
        })?;
        if expanded && (key == "registry" || key.ends_with(":registry")) {
            config.expanded.push(value.clone());
        }
        if key == "registry" {
            config.registry = Some(value);
        } else if let Some(scope) = key.strip_suffix(":registry").filter(|s| s.starts_with('@')) {
            config.scoped.retain(|(s, _)| s != scope);
            config.scoped.push((scope.to_owned(), value));
        }
    }
    Ok(config)
}

/// The name of a variable a value takes but the environment does not have.
struct UnsetVariable(String);

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|v| v.strip_suffix(quote)) {
            return inner;
        }
    }
    value
}

/// `${NAME}` replaced by its value in `env`; the name of the first unset one as the error.
fn expand_variables(value: &str, env: &BTreeMap<String, String>) -> Result<String, UnsetVariable> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else { break };
        let name = &rest[start + 2..start + 2 + len];
        out.push_str(&rest[..start]);
        out.push_str(env.get(name).ok_or_else(|| UnsetVariable(name.to_owned()))?);
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// What pip's files say about indexes, the later files overriding the earlier.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipConfig {
    pub index_url: Option<String>,
    pub extra_index_urls: Vec<String>,
    pub trusted_hosts: Vec<String>,
}

/// The sections whose index settings apply to downloads: `[global]` and the commands that
/// fetch packages (a command's section overrides `[global]` for it; their indexes are taken
/// together).
const PIP_SECTIONS: [&str; 4] = ["global", "install", "download", "wheel"];

/// Reads one `pip.conf` into `config`: configparser's `[section]`, `key = value` or `key:
/// value`, indented continuation lines, `#`/`;` comments; `index-url` and `index_url` alike.
pub fn parse_pip_conf(text: &str, config: &mut PipConfig) -> Result<(), ConfigReadError> {
    let mut values: BTreeMap<(usize, String), String> = BTreeMap::new();
    let mut section: Option<usize> = None;
    let mut last_key: Option<(usize, String)> = None;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(key) = &last_key
                && let Some(value) = values.get_mut(key)
            {
                value.push('\n');
                value.push_str(trimmed);
            }
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            section = PIP_SECTIONS.iter().position(|s| *s == name.trim());
            last_key = None;
            continue;
        }
        let Some(split) = trimmed.find(['=', ':']) else {
            return Err(ConfigReadError::NotKeyValue { line: number + 1 });
        };
        let (key, value) = trimmed.split_at(split);
        last_key = None;
        if let Some(section) = section {
            let key = (section, key.trim().replace('_', "-").to_ascii_lowercase());
            values.insert(key.clone(), value[1..].trim().to_owned());
            last_key = Some(key);
        }
    }
    let mut extras_here = Vec::new();
    for ((_, key), value) in &values {
        let words = value.split_whitespace().map(str::to_owned);
        match key.as_str() {
            "index-url" => config.index_url = Some(value.trim().to_owned()),
            "extra-index-url" => extras_here.extend(words),
            "trusted-host" => config.trusted_hosts = words.collect(),
            _ => {}
        }
    }
    if !extras_here.is_empty() {
        extras_here.dedup();
        config.extra_index_urls = extras_here;
    }
    Ok(())
}

/// What cargo's configuration says about registries, and the part of it carried into the
/// preset's `CARGO_HOME`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CargoConfig {
    /// Index URLs of `[registries.*]`, and the registries and git repositories `[source.*]`
    /// replaces sources with.
    pub registry_indexes: Vec<String>,
    /// `[source.crates-io] replace-with`: crates.io itself is not reached.
    pub crates_io_replaced: bool,
    /// `[registries.crates-io] protocol = "git"`: the index is a git repository on GitHub.
    pub crates_io_git_index: bool,
    /// The configuration as TOML, without the keys in `dropped`.
    pub carried: String,
    /// Keys left out of `carried`: tokens, and a proxy of the user's own (the command has to
    /// use cordon's).
    pub dropped: Vec<String>,
}

/// Reads cargo's `config.toml`.
pub fn parse_cargo(text: &str) -> Result<CargoConfig, ConfigReadError> {
    let mut table: toml::Table =
        text.parse().map_err(|e: toml::de::Error| ConfigReadError::Toml {
            first_line: e.to_string().lines().next().unwrap_or("not TOML").to_owned(),
        })?;
    let mut config = CargoConfig::default();
    if let Some(registries) = table.get("registries").and_then(toml::Value::as_table) {
        for (name, registry) in registries {
            if let Some(index) = registry.get("index").and_then(toml::Value::as_str) {
                config.registry_indexes.push(index.to_owned());
            }
            if name == "crates-io"
                && registry.get("protocol").and_then(toml::Value::as_str) == Some("git")
            {
                config.crates_io_git_index = true;
            }
        }
    }
    if let Some(sources) = table.get("source").and_then(toml::Value::as_table) {
        for (name, source) in sources {
            for key in ["registry", "git"] {
                if let Some(url) = source.get(key).and_then(toml::Value::as_str) {
                    config.registry_indexes.push(url.to_owned());
                }
            }
            if name == "crates-io" && source.get("replace-with").is_some() {
                config.crates_io_replaced = true;
            }
        }
    }
    drop_key(&mut table, &["registry", "token"], &mut config.dropped);
    drop_key(&mut table, &["http", "proxy"], &mut config.dropped);
    let names: Vec<String> = table
        .get("registries")
        .and_then(toml::Value::as_table)
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default();
    for name in names {
        drop_key(&mut table, &["registries", &name, "token"], &mut config.dropped);
    }
    config.carried = toml::to_string(&table)
        .map_err(|e| ConfigReadError::TomlWrite { reason: e.to_string() })?;
    Ok(config)
}

fn drop_key(table: &mut toml::Table, path: &[&str], dropped: &mut Vec<String>) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut current = table;
    for name in parents {
        match current.get_mut(*name).and_then(toml::Value::as_table_mut) {
            Some(next) => current = next,
            None => return,
        }
    }
    if current.remove(*last).is_some() {
        dropped.push(path.join("."));
    }
}

//! Package-manager presets (`--preset npm`, config `presets = ["pip"]`): what a client needs to
//! download packages in the sandbox, decided from the user's own configuration.
//!
//! A preset gives its client two things:
//!
//! - **the registry hosts it is configured for, and no others**, added to the network's domain
//!   allow-list. They are read from user-level configuration only (`~/.npmrc`, pip's user and
//!   site-wide `pip.conf`, `$CARGO_HOME/config.toml`, the user's own environment), which the
//!   caller reads from outside every writable root. A workspace `.npmrc`, `.cargo/config.toml`
//!   or a virtual environment's `pip.conf` is never read: an earlier sandboxed run could have
//!   written it, and it would then decide where the next run may connect.
//! - **a cache of its own that only sandboxed runs write**: the client's own variable
//!   (`npm_config_cache`, `PIP_CACHE_DIR`, `CARGO_HOME`) points at a directory under
//!   `$CORDON_HOME/cache/`. A package cache is code that runs later (cargo does not check an
//!   extracted crate's `build.rs` again, pip reuses the wheels it built), so the sandbox never
//!   writes the user's own cache; what one sandboxed run puts in the preset's cache only ever
//!   reaches later *sandboxed* runs, which get the variables (an unsandboxed run never does).
//!
//! Credentials never travel: the user's configuration files that hold them stay hidden from the
//! command, and what a preset passes on (a registry URL in a variable, cargo's configuration
//! carried into its cache) has passwords, tokens and token-shaped values taken out.
//!
//! Pure: the caller hands in the files' text; parsing is in `preset_configs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::env_secrets::{ValueVerdict, classify_value};
use crate::preset_configs::{
    CargoConfig, NpmConfig, PipConfig, RegistryUrl, parse_cargo, parse_npmrc, parse_pip_conf,
};

/// A client cordon has a preset for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Preset {
    Npm,
    Pip,
    Cargo,
}

impl Preset {
    /// Every preset, in the order `cordon doctor` and `--help` list them.
    pub const ALL: [Preset; 3] = [Preset::Npm, Preset::Pip, Preset::Cargo];

    /// Its name on the command line and in the config.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Npm => "npm",
            Preset::Pip => "pip",
            Preset::Cargo => "cargo",
        }
    }

    /// The preset called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|preset| preset.name() == name)
    }

    /// The hosts the client reaches when nothing configures it otherwise.
    pub fn default_hosts(self) -> &'static [&'static str] {
        match self {
            Preset::Npm => &["registry.npmjs.org"],
            Preset::Pip => &["pypi.org", "files.pythonhosted.org"],
            Preset::Cargo => &["crates.io", "index.crates.io", "static.crates.io"],
        }
    }

    /// The client's default index URLs as its configuration spells them (with or without the
    /// final slash).
    pub fn default_index_urls(self) -> &'static [&'static str] {
        match self {
            Preset::Npm => &["https://registry.npmjs.org/", "https://registry.npmjs.org"],
            Preset::Pip => &["https://pypi.org/simple", "https://pypi.org/simple/"],
            Preset::Cargo => &[],
        }
    }

    /// The variable that points the client at its cache.
    pub fn cache_variable(self) -> &'static str {
        match self {
            Preset::Npm => "npm_config_cache",
            Preset::Pip => "PIP_CACHE_DIR",
            Preset::Cargo => "CARGO_HOME",
        }
    }

    /// The user's own cache directories of this client under `home`, which a sandboxed
    /// command must not write (the advice for a denied write there names the preset).
    pub fn user_caches(self, home: &Path) -> Vec<PathBuf> {
        match self {
            Preset::Npm => vec![home.join(".npm")],
            Preset::Pip => vec![home.join(".cache/pip")],
            Preset::Cargo => vec![home.join(".cargo/registry"), home.join(".cargo/git")],
        }
    }
}

/// The preset whose client keeps its cache at `path` (a directory the sandbox refused to
/// write), judged by the user's own cache directories under `home`.
pub fn preset_for_cache_path(path: &Path, home: &Path) -> Option<Preset> {
    Preset::ALL
        .into_iter()
        .find(|preset| preset.user_caches(home).iter().any(|cache| path.starts_with(cache)))
}

/// One user-level configuration file, as read from outside every writable root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    pub path: PathBuf,
    pub text: String,
    pub visibility: Visibility,
}

/// Whether sandboxed commands can read a configuration file themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// Hidden from them (it is where the tool keeps credentials): nothing read from it enters
    /// the sandbox, whatever it looks like, unless the user named the setting as not secret.
    Hidden,
    /// Readable by them anyway (a site-wide file): its values may be passed on.
    Readable,
}

/// What the presets are decided from: the user's configuration files that exist (the caller
/// leaves out every file inside a writable root) and cordon's own environment.
#[derive(Debug, Clone, Default)]
pub struct ClientConfigs {
    /// `$NPM_CONFIG_USERCONFIG`, else `~/.npmrc`.
    pub npmrc: Option<ConfigFile>,
    /// pip's site-wide and user files, lowest precedence first (`/etc/xdg/pip/pip.conf`,
    /// `/etc/pip.conf`, `~/.pip/pip.conf`, `~/.config/pip/pip.conf`, `$PIP_CONFIG_FILE`).
    pub pip_confs: Vec<ConfigFile>,
    /// `$CARGO_HOME/config.toml` (or its older name `config`).
    pub cargo_config: Option<ConfigFile>,
    /// cordon's own environment (the user's `npm_config_registry`, `PIP_INDEX_URL`, …).
    pub env: BTreeMap<String, String>,
    /// Settings of hidden files the user named as not secret (config
    /// `preset_settings_not_secret`): `npm.registry`, `npm.@scope:registry`, `pip.index-url`,
    /// `pip.extra-index-url`, `pip.trusted-host`.
    pub not_secret: std::collections::BTreeSet<String>,
}

/// The settings `preset_settings_not_secret` may name.
pub fn known_hidden_setting(name: &str) -> bool {
    matches!(name, "npm.registry" | "pip.index-url" | "pip.extra-index-url" | "pip.trusted-host")
        || name
            .strip_prefix("npm.@")
            .and_then(|rest| rest.strip_suffix(":registry"))
            .is_some_and(|scope| !scope.is_empty())
}

/// What one preset adds to a sandboxed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresetPlan {
    pub preset: Preset,
    /// Domain patterns (`host:port`) for the allow-list.
    pub hosts: Vec<String>,
    /// The sandbox-only cache: a writable root, created (0700) by the caller.
    pub cache: PathBuf,
    /// Variables the sandboxed command gets on top of its environment.
    pub env: Vec<(String, String)>,
    /// cargo's configuration, without secrets, to write as `<cache>/config.toml` before each
    /// run (`CARGO_HOME` moves cargo's configuration with its cache).
    pub carried_config: Option<String>,
    /// What the user should know (credentials left out, a host cordon cannot know).
    pub notes: Vec<String>,
}

/// A configuration file a preset cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {detail}", path.display())]
pub struct PresetError {
    pub path: PathBuf,
    pub detail: String,
}

/// The plan for `preset` from `configs`, with its cache at `cache_root/<preset>`.
pub fn plan_preset(
    preset: Preset,
    configs: &ClientConfigs,
    cache_root: &Path,
) -> Result<PresetPlan, PresetError> {
    let cache = cache_root.join(preset.name());
    let mut plan = PresetPlan {
        preset,
        hosts: Vec::new(),
        cache: cache.clone(),
        env: vec![(preset.cache_variable().to_owned(), cache.display().to_string())],
        carried_config: None,
        notes: Vec::new(),
    };
    match preset {
        Preset::Npm => plan_npm(&mut plan, configs)?,
        Preset::Pip => plan_pip(&mut plan, configs)?,
        Preset::Cargo => plan_cargo(&mut plan, configs)?,
    }
    let mut seen = std::collections::BTreeSet::new();
    plan.hosts.retain(|host| seen.insert(host.clone()));
    Ok(plan)
}

fn plan_npm(plan: &mut PresetPlan, configs: &ClientConfigs) -> Result<(), PresetError> {
    let mut npm = match &configs.npmrc {
        Some(file) => parse_npmrc(&file.text, &configs.env)
            .map_err(|error| PresetError { path: file.path.clone(), detail: error.to_string() })?,
        None => NpmConfig::default(),
    };
    let file_visibility = configs.npmrc.as_ref().map_or(Visibility::Readable, |f| f.visibility);
    let mut registry_from = npm.registry.as_ref().map_or(Visibility::Readable, |_| file_visibility);
    // npm reads its settings from `npm_config_*` variables first, in any case.
    if let Some(url) = env_value(&configs.env, "npm_config_registry") {
        npm.registry = Some(url);
        registry_from = Visibility::Readable;
    }
    let registry = npm.registry.unwrap_or_else(|| "https://registry.npmjs.org/".to_owned());
    // `~/.npmrc` is hidden from the command (it holds tokens): the registries reach npm as
    // variables instead, without credentials, when the user said they hold no secret.
    let mut urls =
        vec![("npm_config_registry".to_owned(), "registry".to_owned(), registry, registry_from)];
    urls.extend(npm.scoped.into_iter().map(|(scope, url)| {
        (format!("npm_config_{scope}:registry"), format!("{scope}:registry"), url, file_visibility)
    }));
    for (variable, setting, url, from) in urls {
        let parsed = RegistryUrl::parse(&url)
            .ok_or_else(|| npm_error(configs, format!("{variable}: not an http or https URL")))?;
        plan.hosts.push(parsed.host_pattern());
        let source = configs.npmrc.as_ref().map(|file| file.path.as_path());
        if withheld(plan, configs, &setting, (from, source), &[&parsed]) {
            continue;
        }
        if npm.expanded.contains(&url) {
            plan.notes.push(format!(
                "npm: the registry URL for {} takes a ${{VARIABLE}} from your environment, which \
                 may hold a token: it is not passed to the command (set {variable} for it)",
                parsed.host
            ));
            continue;
        }
        pass_url(plan, &variable, &parsed);
    }
    Ok(())
}

fn npm_error(configs: &ClientConfigs, detail: String) -> PresetError {
    let path = configs.npmrc.as_ref().map_or_else(
        || PathBuf::from("the npm_config_registry variable"),
        |file| file.path.clone(),
    );
    PresetError { path, detail }
}

fn plan_pip(plan: &mut PresetPlan, configs: &ClientConfigs) -> Result<(), PresetError> {
    let mut pip = PipConfig::default();
    // Which file set each of the three settings last (none: the environment or the default).
    let mut from: [Option<&ConfigFile>; 3] = [None; 3];
    for file in &configs.pip_confs {
        let before = pip.clone();
        parse_pip_conf(&file.text, &mut pip)
            .map_err(|error| PresetError { path: file.path.clone(), detail: error.to_string() })?;
        let changed = [
            pip.index_url != before.index_url,
            pip.extra_index_urls != before.extra_index_urls,
            pip.trusted_hosts != before.trusted_hosts,
        ];
        for (slot, changed) in from.iter_mut().zip(changed) {
            if changed {
                *slot = Some(file);
            }
        }
    }
    if let Some(url) = env_value(&configs.env, "PIP_INDEX_URL") {
        pip.index_url = Some(url);
        from[0] = None;
    }
    if let Some(urls) = env_value(&configs.env, "PIP_EXTRA_INDEX_URL") {
        pip.extra_index_urls = urls.split_whitespace().map(str::to_owned).collect();
        from[1] = None;
    }
    fn origin(slot: Option<&ConfigFile>) -> (Visibility, Option<&Path>) {
        slot.map_or((Visibility::Readable, None), |f| (f.visibility, Some(f.path.as_path())))
    }
    // The URL itself is not shown: it may hold a password.
    let bad = |_: &str| PresetError {
        path: PathBuf::from("pip's configuration"),
        detail: "an index URL is not an http or https URL".to_owned(),
    };
    let index = pip.index_url.clone().unwrap_or_else(|| "https://pypi.org/simple".to_owned());
    let index_url = RegistryUrl::parse(&index).ok_or_else(|| bad(&index))?;
    let mut extras = Vec::new();
    for url in &pip.extra_index_urls {
        extras.push(RegistryUrl::parse(url).ok_or_else(|| bad(url))?);
    }
    for url in std::iter::once(&index_url).chain(&extras) {
        plan.hosts.push(url.host_pattern());
        // PyPI's index links to its files on another host.
        if url.host == "pypi.org" {
            plan.hosts.push("files.pythonhosted.org:443".to_owned());
        }
    }
    // pip's user files are hidden from the command (index URLs may carry passwords): what it
    // is configured for reaches it as variables, without credentials.
    if pip.index_url.is_some()
        && !withheld(plan, configs, "index-url", origin(from[0]), &[&index_url])
    {
        pass_url(plan, "PIP_INDEX_URL", &index_url);
    }
    // The list is one setting: judged whole, so that a default index first carries nothing
    // after it.
    let all_extras: Vec<&RegistryUrl> = extras.iter().collect();
    let extras_withheld = !extras.is_empty()
        && withheld(plan, configs, "extra-index-url", origin(from[1]), &all_extras);
    if !extras.is_empty() && !extras_withheld {
        let kept: Vec<String> = extras.iter().filter_map(|url| shown_url(plan, url)).collect();
        if !kept.is_empty() {
            plan.env.push(("PIP_EXTRA_INDEX_URL".to_owned(), kept.join(" ")));
        }
    }
    let hidden_hosts = origin(from[2]);
    if !pip.trusted_hosts.is_empty()
        && !withheld_setting(plan, configs, "trusted-host", hidden_hosts, "its trusted hosts")
    {
        plan.env.push(("PIP_TRUSTED_HOST".to_owned(), pip.trusted_hosts.join(" ")));
    }
    Ok(())
}

fn plan_cargo(plan: &mut PresetPlan, configs: &ClientConfigs) -> Result<(), PresetError> {
    let cargo = match &configs.cargo_config {
        Some(file) => parse_cargo(&file.text)
            .map_err(|error| PresetError { path: file.path.clone(), detail: error.to_string() })?,
        None => CargoConfig::default(),
    };
    let mut registries: Vec<String> = cargo.registry_indexes.clone();
    // `CARGO_REGISTRIES_<NAME>_INDEX` in the user's environment names a registry too.
    registries.extend(
        configs
            .env
            .iter()
            .filter(|(name, _)| name.starts_with("CARGO_REGISTRIES_") && name.ends_with("_INDEX"))
            .map(|(_, url)| url.clone()),
    );
    if cargo.crates_io_replaced {
        plan.notes.push(
            "cargo: crates.io is replaced by the source your configuration names; a download \
             host its index names elsewhere needs --allow-domain"
                .to_owned(),
        );
    } else {
        plan.hosts.extend(Preset::Cargo.default_hosts().iter().map(|h| format!("{h}:443")));
        if cargo.crates_io_git_index {
            plan.hosts.push("github.com:443".to_owned());
        }
    }
    for url in &registries {
        let parsed = RegistryUrl::parse(url).ok_or_else(|| PresetError {
            path: configs
                .cargo_config
                .as_ref()
                .map_or_else(|| PathBuf::from("the environment"), |f| f.path.clone()),
            detail: "a registry URL is not an http or https URL".to_owned(),
        })?;
        plan.hosts.push(parsed.host_pattern());
    }
    plan.notes.extend(cargo.dropped.iter().map(|key| {
        format!("cargo: {key} from your configuration stays outside the sandbox (a secret or a proxy of its own)")
    }));
    plan.carried_config = Some(cargo.carried);
    Ok(())
}

/// The value of `name` in the user's environment, compared without case as npm and pip do
/// for their own variables.
fn env_value(env: &BTreeMap<String, String>, name: &str) -> Option<String> {
    env.get(name)
        .or_else(|| env.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v))
        .filter(|value| !value.is_empty())
        .cloned()
}

/// Whether the value of `setting`, read from a file as `origin` says, stays out of the
/// sandbox: a value from a hidden file does, whatever its shape, unless the user named the
/// setting as not secret. Says so, with how to pass it on purpose.
fn withheld(
    plan: &mut PresetPlan,
    configs: &ClientConfigs,
    setting: &str,
    origin: (Visibility, Option<&Path>),
    urls: &[&RegistryUrl],
) -> bool {
    // The client's own default index, named again exactly under its own setting: it tells
    // nothing the client does not know. Anything more — a path, a query, another port, a
    // scope's name in the variable — may be a secret.
    let default_setting = matches!(setting, "registry" | "index-url" | "extra-index-url");
    if default_setting
        && urls
            .iter()
            .all(|url| plan.preset.default_index_urls().contains(&url.without_credentials.as_str()))
    {
        return false;
    }
    let hosts: Vec<&str> = urls.iter().map(|url| url.host.as_str()).collect();
    withheld_setting(plan, configs, setting, origin, &format!("its URLs for {}", hosts.join(", ")))
}

fn withheld_setting(
    plan: &mut PresetPlan,
    configs: &ClientConfigs,
    setting: &str,
    (visibility, path): (Visibility, Option<&Path>),
    what: &str,
) -> bool {
    let name = plan.preset.name();
    let key = format!("{name}.{setting}");
    if visibility == Visibility::Readable || configs.not_secret.contains(&key) {
        return false;
    }
    let file = path.map_or_else(|| "a hidden file".to_owned(), |p| p.display().to_string());
    plan.notes.push(format!(
        "{name}: {setting} in {file} ({what}) is not passed to the command: the file is hidden \
         from sandboxed commands, and nothing read from it enters the sandbox; if it holds no \
         secret, add \"{key}\" to preset_settings_not_secret in your config (docs/presets.md)"
    ));
    true
}

/// Sets `variable` to `url` without its credentials, unless what is left still looks like a
/// secret (a token in the path): then the variable is left out, with a note.
fn pass_url(plan: &mut PresetPlan, variable: &str, url: &RegistryUrl) {
    if let Some(text) = shown_url(plan, url) {
        plan.env.push((variable.to_owned(), text));
    }
}

fn shown_url(plan: &mut PresetPlan, url: &RegistryUrl) -> Option<String> {
    let name = plan.preset.name();
    if url.had_credentials {
        plan.notes.push(format!(
            "{name}: the credentials in the URL for {} stay outside the sandbox",
            url.host
        ));
    }
    let verdict = match classify_value(&url.without_credentials) {
        ValueVerdict::Clean if holds_a_token(&url.without_credentials) => ValueVerdict::Secret,
        verdict => verdict,
    };
    match verdict {
        ValueVerdict::Clean => Some(url.without_credentials.clone()),
        ValueVerdict::Secret | ValueVerdict::Redacted(_) => {
            plan.notes.push(format!(
                "{name}: the URL for {} looks like it holds a token; it is not passed to the \
                 command",
                url.host
            ));
            None
        }
    }
}

/// Whether a registry URL carries a token where hosted registries put one — a path segment
/// or a query value that reads as random (Gemfury's `/TOKEN/acme/`, Cloudsmith's
/// `dl.cloudsmith.io/TOKEN/…`, `/t/TOKEN/simple/`), or a query key that names a secret —
/// which no vendor prefix would catch. Registry paths are words (`simple`, `npm-remote`,
/// `_packaging`); a run of twelve or more letters and digits, both present, with no
/// separator, is not one.
fn holds_a_token(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let random = |word: &str| {
        word.len() >= 12
            && word.chars().all(|c| c.is_ascii_alphanumeric())
            && word.chars().any(|c| c.is_ascii_digit())
            && word.chars().any(|c| c.is_ascii_alphabetic())
    };
    const SECRET_KEYS: [&str; 7] =
        ["key", "token", "auth", "secret", "password", "pass", "access_token"];
    let query_secret = query.split('&').any(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        SECRET_KEYS.iter().any(|k| key.eq_ignore_ascii_case(k)) || random(value)
    });
    // The host is the first segment: a name, never a token place.
    path.split('/').skip(1).any(random) || query_secret
}

#[cfg(test)]
#[path = "presets_tests.rs"]
mod tests;

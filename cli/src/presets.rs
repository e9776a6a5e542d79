//! `--preset NAME` and config `presets = [...]`: the I/O around the package-manager presets
//! (`cordon_policies::plan_preset` decides). Reads the user's own client configuration from
//! outside every writable root, creates the sandbox-only caches under `$CORDON_HOME/cache/`,
//! writes cargo's carried configuration into its cache, and adds the caches, the registry
//! hosts and the clients' variables to a workspace-write policy.
//!
//! The caches are writable roots inside `$CORDON_HOME`, whose other entries stay read-only:
//! nothing makes `$CORDON_HOME` itself writable, and the helper only binds it read-only when it
//! lies inside a writable root — which is refused here, since a cache below a read-only bind
//! could not be written.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use cordon_exec_core::Workspace;
use cordon_policies::{
    ClientConfigs, ConfigFile, DomainMatcher, DomainRules, EnvSnapshot, Preset, PresetPlan,
    SandboxPolicy, Visibility, plan_preset,
};

/// A `--preset` name cordon does not know: a usage error (exit 2), like any bad flag.
#[derive(Debug)]
pub struct UnknownPreset {
    name: String,
}

impl std::fmt::Display for UnknownPreset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown preset {:?} for --preset: known presets are {} (docs/presets.md)",
            self.name,
            known()
        )
    }
}

impl std::error::Error for UnknownPreset {}

fn known() -> String {
    Preset::ALL.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
}

/// The presets of a run and where they were asked for.
#[derive(Debug, Clone, Default)]
pub struct Requested {
    pub presets: Vec<Preset>,
    /// Whether any was named with `--preset`: a config's presets are a default for every run
    /// and do not apply where nothing can be written (read-only), a flag's must.
    pub on_command_line: OnCommandLine,
    /// Config `preset_settings_not_secret`.
    pub not_secret: std::collections::BTreeSet<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnCommandLine {
    Yes,
    #[default]
    No,
}

/// The presets asked for: `--preset` (a usage error when unknown) and config `presets`, with
/// the config's `preset_settings_not_secret` (each checked against the settings it may name).
pub fn requested(
    flags: &[String],
    config: &[String],
    not_secret: &[String],
) -> anyhow::Result<Requested> {
    for name in not_secret {
        if !cordon_policies::known_hidden_setting(name) {
            bail!(
                "config preset_settings_not_secret: {name:?} is not a setting a preset reads \
                 from a hidden file: \"npm.registry\", \"npm.@scope:registry\", \
                 \"pip.index-url\", \"pip.extra-index-url\" or \"pip.trusted-host\" \
                 (docs/presets.md)"
            );
        }
    }
    let mut presets = Vec::new();
    for name in flags {
        presets.push(Preset::from_name(name).ok_or_else(|| UnknownPreset { name: name.clone() })?);
    }
    for name in config {
        presets.push(Preset::from_name(name).ok_or_else(|| {
            anyhow::anyhow!(
                "config presets: unknown preset {name:?}: known presets are {} \
                 (docs/presets.md)",
                known()
            )
        })?);
    }
    presets.sort();
    presets.dedup();
    let on_command_line = if flags.is_empty() { OnCommandLine::No } else { OnCommandLine::Yes };
    Ok(Requested { presets, on_command_line, not_secret: not_secret.iter().cloned().collect() })
}

/// Set by commands that only look (`--dry-run`, `policy check`): the caches are planned and
/// shown, never created. One process runs one command, so a flag for the process will do.
static LOOK_ONLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on, [`apply`] creates and writes nothing.
pub fn look_only() {
    LOOK_ONLY.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Adds `presets` to `policy` (a workspace-write policy resolved against `cwd`): each cache as
/// a writable root, created now; the registry hosts to the domain allow-list unless the
/// network is on anyway. Returns the variables only a sandboxed command gets. A
/// workspace-write policy with a root inside the workspaces' state is refused, presets or not.
pub fn apply(
    requested: &Requested,
    policy: &mut SandboxPolicy,
    cwd: &Path,
    user_view: &EnvSnapshot,
) -> anyhow::Result<Vec<(OsString, OsString)>> {
    // The writable roots as the helper will resolve them, once: a workspace-write run's,
    // with or without presets, must keep out of the workspaces' state.
    let roots = match &*policy {
        SandboxPolicy::WorkspaceWrite(_) => {
            let roots = policy
                .resolve(cwd, &user_view.view(), |p| std::fs::canonicalize(p))?
                .writable_roots;
            refuse_roots_in_workspace_state(&roots, user_view)?;
            Some(roots)
        }
        SandboxPolicy::ReadOnly { .. } | SandboxPolicy::DangerFullAccess {} => None,
    };
    let presets = &requested.presets;
    if presets.is_empty() {
        return Ok(Vec::new());
    }
    match &*policy {
        // No sandbox: the command uses the user's own caches and configuration, as it would
        // without cordon.
        SandboxPolicy::DangerFullAccess {} => return Ok(Vec::new()),
        SandboxPolicy::ReadOnly { .. } if requested.on_command_line == OnCommandLine::No => {
            return Ok(Vec::new());
        }
        SandboxPolicy::ReadOnly { .. } => bail!(
            "--preset (config presets) needs -s workspace-write: the client must write its \
             cache and reach its registry"
        ),
        SandboxPolicy::WorkspaceWrite(_) => {}
    }
    let Some(roots) = roots else { return Ok(Vec::new()) };
    let Some(cordon_home) = user_view.cordon_home.clone().filter(|h| h.is_absolute()) else {
        bail!("--preset keeps its caches in $CORDON_HOME, which is not set (set HOME)");
    };
    let home_canonical = canonical_even_if_missing(&cordon_home);
    if let Some(root) = roots.iter().find(|root| home_canonical.starts_with(root)) {
        bail!(
            "--preset keeps its caches in $CORDON_HOME ({}), which lies inside the writable \
             root {}, where cordon keeps it read-only; set CORDON_HOME outside the writable \
             roots",
            cordon_home.display(),
            root.display()
        );
    }
    let mut configs = read_client_configs(user_view, &roots)?;
    configs.not_secret = requested.not_secret.clone();
    // Each workspace has caches of its own: what one project's sandboxed runs put there never
    // reaches another project's build.
    let workspace = Workspace::of(cwd, &cordon_home)
        .with_context(|| format!("cannot resolve the workspace {}", cwd.display()))?;
    let cache_root = workspace.cache_root();
    let mut plans = Vec::new();
    for preset in presets {
        let plan = plan_preset(*preset, &configs, &cache_root)?;
        for note in &plan.notes {
            crate::terminal::say(std::slice::from_ref(note));
        }
        plans.push(plan);
    }
    if !LOOK_ONLY.load(std::sync::atomic::Ordering::Relaxed) {
        prepare_caches(&cordon_home, &workspace, &plans)?;
    }
    let SandboxPolicy::WorkspaceWrite(ww) = policy else { return Ok(Vec::new()) };
    ww.writable_roots.extend(plans.iter().map(|plan| plan.cache.clone()));
    if !(ww.network_access && ww.network_domains.is_none()) {
        let rules = ww.network_domains.get_or_insert_with(DomainRules::default);
        for host in plans.iter().flat_map(|plan| &plan.hosts) {
            if !rules.allow.contains(host) {
                rules.allow.push(host.clone());
            }
        }
        DomainMatcher::new(rules)?;
    }
    let env = plans.iter().flat_map(|plan| &plan.env);
    Ok(env.map(|(k, v)| (OsString::from(k), OsString::from(v))).collect())
}

/// Refuses a writable root (the working directory, an `--add-dir`) inside
/// `$CORDON_HOME/workspaces`, where each workspace's preset caches and state live: a command
/// there could plant code in another workspace's cache, or a link where cordon makes a
/// workspace's directory.
fn refuse_roots_in_workspace_state(
    roots: &[PathBuf],
    user_view: &EnvSnapshot,
) -> anyhow::Result<()> {
    let Some(cordon_home) = user_view.cordon_home.as_ref().filter(|h| h.is_absolute()) else {
        return Ok(());
    };
    let state = canonical_even_if_missing(&cordon_home.join("workspaces"));
    if let Some(root) = roots.iter().find(|root| root.starts_with(&state)) {
        bail!(
            "the writable root {} lies inside {}, where cordon keeps each workspace's preset \
             caches: a command there could plant code in another workspace's cache; run it \
             from the workspace itself",
            root.display(),
            state.display()
        );
    }
    Ok(())
}

/// The user-level configuration of the clients, each file read only when it lies outside every
/// writable root (where a sandboxed command could have written it), with one warning line
/// for a file left out.
fn read_client_configs(view: &EnvSnapshot, roots: &[PathBuf]) -> anyhow::Result<ClientConfigs> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let var = |name: &str| {
        env.iter()
            .find(|(k, v)| k.eq_ignore_ascii_case(name) && !v.is_empty())
            .map(|(_, v)| PathBuf::from(v))
    };
    let home = view.home.clone().filter(|h| h.is_absolute());
    let in_home = |rest: &str| home.as_ref().map(|h| h.join(rest));
    let npmrc = var("NPM_CONFIG_USERCONFIG").or_else(|| in_home(".npmrc"));
    let config_home = env
        .get("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| in_home(".config"));
    let pip_files = [
        Some(PathBuf::from("/etc/xdg/pip/pip.conf")),
        Some(PathBuf::from("/etc/pip.conf")),
        in_home(".pip/pip.conf"),
        config_home.map(|dir| dir.join("pip/pip.conf")),
        env.get("PIP_CONFIG_FILE").map(PathBuf::from),
    ];
    let cargo_home = env
        .get("CARGO_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| in_home(".cargo"));
    let mut configs = ClientConfigs { env: env.clone(), ..ClientConfigs::default() };
    // npm's and pip's user files are hidden from sandboxed commands (they hold tokens and
    // index passwords); the site-wide pip files and cargo's configuration (its credentials
    // are a file of their own) are not.
    if let Some(path) = npmrc {
        configs.npmrc = read_outside(&path, roots, Visibility::Hidden)?;
    }
    for (at, path) in pip_files.into_iter().enumerate() {
        let Some(path) = path else { continue };
        // The two site-wide files, by their place in the list (never by how a path is spelled).
        let visibility = if at < 2 { Visibility::Readable } else { Visibility::Hidden };
        configs.pip_confs.extend(read_outside(&path, roots, visibility)?);
    }
    if let Some(dir) = cargo_home {
        let readable = Visibility::Readable;
        configs.cargo_config = match read_outside(&dir.join("config.toml"), roots, readable)? {
            Some(file) => Some(file),
            None => read_outside(&dir.join("config"), roots, readable)?,
        };
    }
    Ok(configs)
}

/// `path`'s text when it exists and neither it nor what it links to lies inside a root.
fn read_outside(
    path: &Path,
    roots: &[PathBuf],
    visibility: Visibility,
) -> anyhow::Result<Option<ConfigFile>> {
    if !path.is_absolute() {
        return Ok(None);
    }
    let target = match std::fs::canonicalize(path) {
        Ok(target) => target,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", path.display())),
    };
    // Where the name itself lies (a link there could be changed), and where it leads.
    let place = match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => canonical_even_if_missing(parent).join(name),
        _ => target.clone(),
    };
    if let Some(root) =
        roots.iter().find(|root| place.starts_with(root) || target.starts_with(root))
    {
        crate::terminal::say(&[format!(
            "--preset ignores {}: it lies inside the writable root {}, where a sandboxed \
             command could have written it",
            path.display(),
            root.display()
        )]);
        return Ok(None);
    }
    // A readable file that is a link elsewhere is only as readable as where it leads, which
    // may be hidden.
    let visibility = if target == cordon_policies::lexically_normal(path) {
        visibility
    } else {
        Visibility::Hidden
    };
    Ok(crate::state_files::read(&target)?.map(|text| ConfigFile {
        path: path.to_path_buf(),
        text,
        visibility,
    }))
}

/// Creates the workspace's caches, `$CORDON_HOME/workspaces/<id>/cache/<tool>` (0700, owned
/// by this user, never through a link), marks them as caches, and writes cargo's carried
/// configuration. Every cache is writable by sandboxed commands, so nothing in it is trusted:
/// files are replaced by rename (which replaces a planted link, never follows it), never
/// opened for writing in place, and whatever a command left at a name cordon writes is
/// removed, or moved aside when it cannot be, so the run goes on.
fn prepare_caches(
    cordon_home: &Path,
    workspace: &Workspace,
    plans: &[PresetPlan],
) -> anyhow::Result<()> {
    // `$CORDON_HOME` itself is the user's (a link to elsewhere is theirs to make): created
    // private when missing, otherwise left as it is.
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(cordon_home)
        .with_context(|| format!("cannot create {}", cordon_home.display()))?;
    workspace.prepare().with_context(|| format!("cannot create {}", workspace.dir().display()))?;
    let trash = Trash { dir: workspace.trash(), deadline: std::time::Instant::now() + UPKEEP_TIME };
    let cache_root = workspace.cache_root();
    private_dir(&cache_root)?;
    // Marked too: the search for repositories skips a cache that is a writable root only when
    // its parent, which no sandboxed command can write, says it holds caches.
    replace_file(&cache_root, "CACHEDIR.TAG", CACHEDIR_TAG, &trash)?;
    for plan in plans {
        if let Err(error) = prepare_cache(plan, &trash) {
            // What a command made of the cache cannot be undone name by name (another run of
            // the workspace keeps remaking it, or it cannot be removed): the cache starts
            // afresh, its old contents moved aside whole.
            private_dir(&plan.cache)?;
            let aside = cordon_exec_core::move_aside(&plan.cache, &trash.dir)
                .with_context(|| format!("cannot move {} aside", plan.cache.display()))?;
            crate::terminal::say(&[format!(
                "cordon could not restore {} ({error:#}): it starts afresh; what it held is in {}",
                plan.cache.display(),
                aside.display()
            )]);
            prepare_cache(plan, &trash)?;
        }
    }
    let left = cordon_exec_core::empty_trash(&trash.dir, trash.deadline);
    if left > 0 {
        crate::terminal::say(&[format!(
            "{left} entries sandboxed commands left in this workspace's preset caches \
             wait in {} and go at the next preset runs",
            trash.dir.display()
        )]);
    }
    Ok(())
}

/// How long a preset run's upkeep spends removing what sandboxed commands left (about 140,000
/// files here): what is left waits in the trash for the next runs, so a command that leaves
/// millions of files slows no run by more than this.
const UPKEEP_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// Where upkeep puts what it does not remove now, and until when it removes.
struct Trash {
    dir: PathBuf,
    deadline: std::time::Instant,
}

/// Makes one preset's cache ready: private, marked, with cargo's carried configuration and
/// without the older name that would hide it.
fn prepare_cache(plan: &PresetPlan, trash: &Trash) -> anyhow::Result<()> {
    private_dir(&plan.cache)?;
    // Keeps the sandbox's search for repositories, and backup tools, out of the cache.
    replace_file(&plan.cache, "CACHEDIR.TAG", CACHEDIR_TAG, trash)?;
    if let Some(config) = &plan.carried_config {
        replace_file(&plan.cache, "config.toml", config, trash)?;
        // The older name wins over `config.toml` in cargo: one a sandboxed run left there
        // would hide the user's configuration.
        let planted = plan.cache.join("config");
        remove_planted(&planted, trash)
            .with_context(|| format!("cannot remove {}", planted.display()))?;
    }
    Ok(())
}

const CACHEDIR_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# A package cache that cordon's --preset gives sandboxed commands (docs/presets.md).\n";

/// `dir` as a directory of this user's, created 0700 when missing; a link, another file type
/// or another owner is an error.
fn private_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => {
            return Err(error).with_context(|| format!("cannot create {}", dir.display()));
        }
    }
    let meta = std::fs::symlink_metadata(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    if !meta.is_dir() {
        bail!("{} is not a directory (a preset keeps its cache there)", dir.display());
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        bail!("{} belongs to another user (a preset keeps its cache there)", dir.display());
    }
    // A sandboxed command may change the mode of the cache it writes (the root of its own
    // writable directory): back to private, so no other user plants code for the next run.
    if meta.mode() & 0o7777 != 0o700 {
        std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .with_context(|| format!("cannot make {} private", dir.display()))?;
    }
    Ok(())
}

/// Removes whatever a sandboxed run left at `path` — a file, a link (not followed), a
/// directory with its contents, however it set their modes — or moves it into the trash when
/// it cannot, or not in the upkeep's time, so that a name cordon writes cannot be blocked for
/// good.
fn remove_planted(path: &Path, trash: &Trash) -> std::io::Result<()> {
    if let Some(aside) = cordon_exec_core::remove_or_move_aside(path, &trash.dir, trash.deadline)? {
        crate::terminal::say(&[format!(
            "cordon could not remove {} (a sandboxed command made it) now; moved it to {}",
            path.display(),
            aside.display()
        )]);
    }
    Ok(())
}

/// Writes `text` as `dir/name` through a new file renamed over it (a directory planted at the
/// name is removed first: a rename cannot replace one).
fn replace_file(dir: &Path, name: &str, text: &str, trash: &Trash) -> anyhow::Result<()> {
    let path = dir.join(name);
    if std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_dir()) {
        remove_planted(&path, trash)
            .with_context(|| format!("cannot remove {}", path.display()))?;
    }
    crate::state_files::write_replacing(&path, text, 0o600)
        .map_err(|error| anyhow::anyhow!("cannot write {}: {error}", path.display()))
}

/// `path` with its nearest existing ancestor canonicalized and the missing rest appended.
fn canonical_even_if_missing(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = cordon_policies::lexically_normal(path);
    loop {
        if let Ok(canonical) = std::fs::canonicalize(&existing) {
            return missing.iter().rev().fold(canonical, |out: PathBuf, name| out.join(name));
        }
        match (existing.file_name().map(ToOwned::to_owned), existing.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                existing = parent.to_path_buf();
            }
            _ => return existing,
        }
    }
}

/// What `cordon doctor` says about the presets here: for each, the hosts it would allow (from
/// this user's configuration as it reads now), its variable and its cache.
pub fn doctor_report(config_presets: &[String]) -> serde_json::Value {
    let view = crate::config::user_view().unwrap_or_default();
    let configs = read_client_configs(&view, &[]);
    let cordon_home = view.cordon_home.unwrap_or_default();
    let cache_root = std::env::current_dir()
        .and_then(|cwd| Workspace::of(&cwd, &cordon_home))
        .map_or_else(|_| cordon_home.join("workspaces/…/cache"), |w| w.cache_root());
    let presets: Vec<serde_json::Value> = Preset::ALL
        .iter()
        .map(|preset| {
            let plan = configs
                .as_ref()
                .map_err(|e| format!("{e:#}"))
                .and_then(|c| plan_preset(*preset, c, &cache_root).map_err(|e| e.to_string()));
            serde_json::json!({
                "name": preset.name(),
                "in_config": config_presets.iter().any(|n| n == preset.name()),
                "hosts": plan.as_ref().map(|p| p.hosts.clone()).unwrap_or_default(),
                "variable": preset.cache_variable(),
                "cache": cache_root.join(preset.name()),
                "error": plan.err(),
            })
        })
        .collect();
    serde_json::json!(presets)
}

/// The text form of [`doctor_report`].
pub fn render_doctor(out: &mut String, report: &serde_json::Value) {
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "\npresets (--preset NAME: the registry hosts below, a cache only this workspace's \
         sandboxed runs write; docs/presets.md):"
    );
    for preset in report.as_array().into_iter().flatten() {
        let hosts: Vec<&str> =
            preset["hosts"].as_array().into_iter().flatten().filter_map(|h| h.as_str()).collect();
        let config = if preset["in_config"] == true { " (on in the config)" } else { "" };
        let _ = writeln!(
            out,
            "  {:<6} {}{config}\n         {}={}",
            preset["name"].as_str().unwrap_or_default(),
            hosts.join(", "),
            preset["variable"].as_str().unwrap_or_default(),
            preset["cache"].as_str().unwrap_or_default(),
        );
        if let Some(error) = preset["error"].as_str() {
            let _ = writeln!(out, "         error: {error}");
        }
    }
}

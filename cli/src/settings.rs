//! The high layer of the CLI (ripgrep's `hiargs`): clap's flags plus the config file turned,
//! in this one module, into validated settings — the sandbox policy, its cwd, the approval
//! policy, the helper and the user view, the command's environment, the rules. Subcommand
//! modules depend on this layer and on `flags`, never on each other.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use cordon_exec_core::{
    HELLO_TIMEOUT, LinkEvents, RemoteLink, RemoteSessions, RemoteTarget, SessionDefaults,
};
use cordon_exec_core::{
    HelperLaunch, HelperSettings, Orchestrator, PinnedDir, PinnedExe, WriteChoice,
};
use cordon_policies::{
    AskForApproval, DEFAULT_HIDDEN_PATHS, DEFAULT_PROTECTED_PATHS, HomeReading, Limits,
    MountViewRequirement, PolicyEnv, RemovedVar, RuleSet, RuleSource, SandboxMode, SandboxPolicy,
    SandboxRequest, ShellEnvironmentPolicy, Strictness, WorkspaceWrite, expand_hidden_path,
    expand_path,
};

use crate::config::{self, Config, NetworkSetting, NetworkSwitch};
use crate::flags::{ExecutorArgs, PolicyFlags, RemoteFlags, SandboxFlags, WritesFlag};

/// `--dangerously-bypass-approvals-and-sandbox` or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bypass {
    No,
    ApprovalsAndSandbox,
}

/// Where the workspace (and the command) is.
#[derive(Debug, Clone, Copy)]
pub enum Workspace<'a> {
    /// This machine: `-C` is resolved here.
    Local,
    /// Another machine: `-C` must be absolute there (it is never resolved here); without it
    /// the remote executor's directory.
    Remote { default_cwd: &'a Path },
}

/// Everything a subcommand needs to run something, validated.
pub struct Settings {
    pub config: Config,
    /// What the sandbox enforces; its `policy_cwd` is `cwd`.
    pub sandbox: SandboxRequest,
    /// The workspace: the policy cwd and the command's cwd.
    pub cwd: PathBuf,
    /// `cwd` held open since start-up (a local workspace only).
    pub cwd_pin: Option<PinnedDir>,
    /// `--allow-home-root` or config `allow_home_root`.
    allow_home_root: bool,
    pub approval: AskForApproval,
    pub helper: HelperSettings,
    /// `$CORDON_HOME`, from the user view.
    pub home: Option<PathBuf>,
    /// Whether `<workspace>/.cordon/rules.toml` can be read here.
    workspace_rules: WorkspaceRules,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WorkspaceRules {
    Read,
    /// The workspace is on another machine: only `$CORDON_HOME/rules.toml` applies.
    Elsewhere,
}

impl Settings {
    /// Flags override the config; `default_mode` applies when neither names a mode.
    pub fn load(
        flags: &SandboxFlags,
        policy: &PolicyFlags,
        default_mode: SandboxMode,
        bypass: Bypass,
    ) -> anyhow::Result<Settings> {
        Settings::load_in(flags, policy, (default_mode, bypass), Workspace::Local)
    }

    /// [`Settings::load`] for a workspace that may be on another machine.
    pub fn load_in(
        flags: &SandboxFlags,
        policy: &PolicyFlags,
        (default_mode, bypass): (SandboxMode, Bypass),
        workspace: Workspace<'_>,
    ) -> anyhow::Result<Settings> {
        let user_view = config::user_view()?;
        let home = user_view.cordon_home.clone();
        let config = config::load(home.as_deref(), &policy.overrides)?;
        // A local workspace is held open from here on: questions show where it is now, and the
        // command starts in that directory whatever happens to its path meanwhile.
        let cwd_pin = match (workspace, &flags.cd) {
            (Workspace::Local, Some(dir)) => Some(
                PinnedDir::open(dir).with_context(|| format!("cannot use -C {}", dir.display()))?,
            ),
            (Workspace::Local, None) => {
                Some(PinnedDir::open(Path::new(".")).context("cannot open the current directory")?)
            }
            (Workspace::Remote { .. }, _) => None,
        };
        let (cwd, workspace_rules) = match (workspace, &flags.cd) {
            (Workspace::Local, _) => (
                cwd_pin.as_ref().map(|pin| pin.path().to_path_buf()).unwrap_or_default(),
                WorkspaceRules::Read,
            ),
            (Workspace::Remote { .. }, Some(dir)) if dir.is_absolute() => {
                (dir.clone(), WorkspaceRules::Elsewhere)
            }
            (Workspace::Remote { .. }, Some(dir)) => bail!(
                "-C {} is relative: on another machine -C takes an absolute path there",
                dir.display()
            ),
            (Workspace::Remote { default_cwd }, None) => {
                (default_cwd.to_path_buf(), WorkspaceRules::Elsewhere)
            }
        };
        let (sandbox_policy, approval) = match bypass {
            Bypass::ApprovalsAndSandbox => {
                (SandboxPolicy::DangerFullAccess {}, AskForApproval::Never)
            }
            Bypass::No => (
                sandbox_policy(flags, &config, (&cwd, workspace), default_mode, &user_view.view())?,
                policy.approval.or(config.approval_policy).unwrap_or(AskForApproval::OnRequest),
            ),
        };
        let mut presets = crate::presets::requested(
            &flags.presets,
            &config.presets,
            &config.preset_settings_not_secret,
        )?;
        if matches!(workspace, Workspace::Remote { .. }) {
            if presets.on_command_line == crate::presets::OnCommandLine::Yes {
                bail!(
                    "--preset is not available on another machine yet: its caches and its proxy \
                     would have to be there"
                );
            }
            // The config's presets are this machine's default.
            presets.presets.clear();
        }
        let mut sandbox_policy = sandbox_policy;
        let sandboxed_env = crate::presets::apply(&presets, &mut sandbox_policy, &cwd, &user_view)?;
        let allow_home_root = flags.allow_home_root || config.allow_home_root;
        let own = PinnedExe::own().context("cannot open the cordon executable")?;
        let (exe, launch) = helper_exe(&config, &own)?;
        let mut user_view = user_view;
        user_view.cordon_executables = cordon_executables(&own, &exe);
        let sandbox = SandboxRequest {
            policy: sandbox_policy,
            policy_cwd: cwd.clone(),
            strictness: if flags.best_effort || config.sandbox_best_effort {
                Strictness::BestEffort
            } else {
                Strictness::FailClosed
            },
            mount_view: if flags.require_mount_view {
                MountViewRequirement::Required
            } else if flags.no_mount_view {
                MountViewRequirement::Disabled
            } else {
                config.sandbox_mount_view
            },
            limits: config.limits.0.overridden_by(&flag_limits(flags)),
            home_reads: home_reading(&config, &flags.unhide),
            // cordon makes the write layers itself, where the run gets them (`helper.writes`).
            writes: cordon_policies::WriteChoice::Direct,
        };
        // A transaction asked for by name (flag or config) needs a sandbox to make it in.
        let named = match flags.writes {
            Some(flag) => flag == WritesFlag::Transaction,
            None => config.writes == Some(WriteChoice::Transaction),
        };
        if named && matches!(sandbox.policy, SandboxPolicy::DangerFullAccess {}) {
            bail!(
                "--writes transaction needs a sandbox: danger-full-access writes directly \
                 (--writes direct, or a sandbox mode)"
            );
        }
        // On another machine the helper there makes a transaction of its own, asked for in
        // the request; here, cordon makes the layers itself.
        let writes = write_choice(flags, &config)?;
        let mut sandbox = sandbox;
        let writes = match workspace {
            Workspace::Remote { .. } => {
                sandbox.writes = writes;
                WriteChoice::Direct
            }
            Workspace::Local => writes,
        };
        let helper = HelperSettings {
            exe,
            launch,
            user_view,
            proxy_test_resolve: cordon_exec_core::test_hook_proxy_resolve()?,
            sandboxed_env,
            writes,
            undo: config.undo.unwrap_or_default(),
        };
        Ok(Settings {
            config,
            sandbox,
            cwd,
            cwd_pin,
            allow_home_root,
            approval,
            helper,
            home,
            workspace_rules,
        })
    }

    /// The orchestrator: these settings plus the rules files.
    pub fn orchestrator(&self) -> anyhow::Result<Orchestrator> {
        let workspace = match self.workspace_rules {
            WorkspaceRules::Read => Some(self.cwd.as_path()),
            WorkspaceRules::Elsewhere => None,
        };
        let rules = load_rules(self.home.as_deref(), workspace)?;
        let user_rules = self.home.as_ref().map(|h| h.join("rules.toml"));
        Ok(Orchestrator::new(rules, user_rules, self.helper.clone()))
    }

    /// The environment the command gets, after the environment policy, and what the policy
    /// removed (names only).
    ///
    /// A name or value that is not UTF-8 is judged by the policy as its lossy text (patterns
    /// and secret shapes are ASCII) and, when kept unchanged, passed on as the bytes it was.
    pub fn command_env(&self) -> (Vec<(OsString, OsString)>, Vec<RemovedVar>) {
        filter_own_env(&self.config.shell_environment_policy)
    }

    /// What every session of `cordon executor`/`cordon mcp-server` starts from, with this
    /// process's environment as the base.
    pub fn session_defaults(&self) -> SessionDefaults {
        self.session_defaults_with(self.command_env().0)
    }

    /// [`Settings::session_defaults`] with `env` (already filtered) as the environment.
    fn session_defaults_with(&self, env: Vec<(OsString, OsString)>) -> SessionDefaults {
        SessionDefaults {
            cwd: self.cwd.clone(),
            sandbox: self.sandbox.clone(),
            approval: self.approval,
            env,
        }
    }

    /// [`Settings::command_env`] from another environment (a remote executor's).
    pub fn command_env_from(
        &self,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> (Vec<(OsString, OsString)>, Vec<RemovedVar>) {
        filter_env(&self.config.shell_environment_policy, vars)
    }
}

/// The limits named by `--limit`, the last one of a key winning.
pub fn flag_limits(flags: &SandboxFlags) -> Limits {
    let mut limits = Limits::default();
    for (key, value) in &flags.limits {
        limits.set(*key, Some(*value));
    }
    limits
}

/// `policy` applied to this process's environment: what a command gets, and what was removed
/// (names only).
///
/// A name or value that is not UTF-8 is judged by the policy as its lossy text (patterns and
/// secret shapes are ASCII) and, when kept unchanged, passed on as the bytes it was.
pub fn filter_own_env(
    policy: &ShellEnvironmentPolicy,
) -> (Vec<(OsString, OsString)>, Vec<RemovedVar>) {
    let mut not_utf8: Vec<(String, String, OsString, OsString)> = Vec::new();
    let vars: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| match (k.to_str(), v.to_str()) {
            (Some(name), Some(value)) => (name.to_owned(), value.to_owned()),
            _ => {
                let lossy = (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned());
                not_utf8.push((lossy.0.clone(), lossy.1.clone(), k, v));
                lossy
            }
        })
        .collect();
    let (mut env, mut removed) = filter_env(policy, vars);
    env.retain_mut(|(name, value)| {
        let Some((lossy_name, _, original_name, original_value)) =
            not_utf8.iter().find(|(n, v, ..)| *name == **n && *value == **v)
        else {
            return true;
        };
        // The value rules read text: an invalid byte where a separator stood (`Bearer`,
        // a non-breaking space, a token) must not hide a secret from them, so the value is
        // judged a second time with every invalid byte read as a space.
        let spaced =
            spaced_text(std::os::unix::ffi::OsStrExt::as_bytes(original_value.as_os_str()));
        let again = policy.apply([(lossy_name.clone(), spaced.clone())]);
        if again.vars.get(lossy_name) != Some(&spaced) {
            removed.push(RemovedVar {
                name: lossy_name.clone(),
                reason: cordon_policies::RemovalReason::SecretValue,
            });
            return false;
        }
        *name = original_name.clone();
        *value = original_value.clone();
        true
    });
    (env, removed)
}

fn filter_env(
    policy: &ShellEnvironmentPolicy,
    vars: impl IntoIterator<Item = (String, String)>,
) -> (Vec<(OsString, OsString)>, Vec<RemovedVar>) {
    let filtered = policy.apply(vars);
    let env = filtered.vars.into_iter().map(|(k, v)| (OsString::from(k), OsString::from(v)));
    (env.collect(), filtered.removed)
}

/// The sandbox policy from the flags and the config.
fn sandbox_policy(
    flags: &SandboxFlags,
    config: &Config,
    (cwd, workspace): (&Path, Workspace<'_>),
    default_mode: SandboxMode,
    env: &PolicyEnv<'_>,
) -> anyhow::Result<SandboxPolicy> {
    let mode = if flags.full_auto {
        SandboxMode::WorkspaceWrite
    } else {
        flags.mode.or(config.sandbox_mode).unwrap_or(default_mode)
    };
    let hidden_paths = hidden_paths(flags, config, env);
    let ww = &config.sandbox_workspace_write;
    // On another machine `--add-dir` names a path there: the far end judges it.
    let local = matches!(workspace, Workspace::Local);
    if local {
        warn_missing_dirs(&flags.add_dirs, cwd);
    }
    let policy = match mode {
        SandboxMode::DangerFullAccess => SandboxPolicy::DangerFullAccess {},
        SandboxMode::ReadOnly => {
            if flags.network
                || !flags.add_dirs.is_empty()
                || !flags.allow_domains.is_empty()
                || !flags.allow_unix_sockets.is_empty()
            {
                bail!(
                    "--network, --allow-domain, --allow-unix-socket and --add-dir need -s \
                     workspace-write (or --full-auto)"
                );
            }
            SandboxPolicy::ReadOnly { hidden_paths }
        }
        SandboxMode::WorkspaceWrite => SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
            writable_roots: ww
                .writable_roots
                .iter()
                // An `--add-dir` that is not a directory is not a root, as its warning says.
                .chain(flags.add_dirs.iter().filter(|d| {
                    let full = cwd.join(d);
                    !local || full.is_dir() || !full.exists()
                }))
                .map(|d| cwd.join(d))
                .collect(),
            network_access: flags.network
                || match &config.network {
                    Some(NetworkSetting::Switch(NetworkSwitch::On)) => true,
                    Some(NetworkSetting::Switch(NetworkSwitch::Off)) => false,
                    Some(NetworkSetting::Domains(_)) | None => ww.network_access,
                },
            network_domains: network_domains(flags, config)?,
            exclude_policy_cwd: false,
            exclude_tmpdir_env_var: ww.exclude_tmpdir_env_var,
            exclude_slash_tmp: ww.exclude_slash_tmp,
            protected_paths: protected_paths(flags, config),
            hidden_paths,
            allow_unix_sockets: ww
                .allow_unix_sockets
                .iter()
                .chain(&config.allow_unix_sockets)
                .chain(&flags.allow_unix_sockets)
                .cloned()
                .collect(),
        }),
    };
    // A usage error here, not a sandbox that cannot be set up later.
    policy.allowed_sockets(env)?;
    Ok(policy)
}

/// One warning line per `--add-dir` that does not exist: the sandbox skips a missing root, so
/// the command would fail later with nothing to say why.
fn warn_missing_dirs(dirs: &[PathBuf], cwd: &Path) {
    for dir in dirs {
        let full = cwd.join(dir);
        if !full.is_dir() {
            let what = if full.exists() { "is not a directory" } else { "does not exist" };
            crate::terminal::say(&[format!(
                "warning: --add-dir {}: {} {what}; it is not a writable root for this run",
                dir.display(),
                full.display()
            )]);
        }
    }
}

/// The domain allow-list: config `network = { allow, deny }` plus `--allow-domain`. `--network`
/// (everything) and `network = "on"|"off"` without `--allow-domain` mean no list. Patterns are
/// checked here so a typo is an error before anything runs.
fn network_domains(
    flags: &SandboxFlags,
    config: &Config,
) -> anyhow::Result<Option<cordon_policies::DomainRules>> {
    if flags.network {
        return Ok(None);
    }
    let mut rules = match &config.network {
        Some(NetworkSetting::Domains(rules)) => rules.clone(),
        Some(NetworkSetting::Switch(_)) | None if flags.allow_domains.is_empty() => {
            return Ok(None);
        }
        Some(NetworkSetting::Switch(_)) | None => cordon_policies::DomainRules::default(),
    };
    rules.allow.extend(flags.allow_domains.iter().cloned());
    cordon_policies::DomainMatcher::new(&rules)?;
    Ok(Some(rules))
}

/// The config's list (or the defaults) plus `--protect`. `None` keeps the helper's defaults.
fn protected_paths(flags: &SandboxFlags, config: &Config) -> Option<Vec<String>> {
    let configured =
        config.protected_paths.clone().or(config.sandbox_workspace_write.protected_paths.clone());
    if flags.protect.is_empty() && configured.is_none() {
        return None;
    }
    let base = configured
        .unwrap_or_else(|| DEFAULT_PROTECTED_PATHS.iter().map(|p| (*p).to_owned()).collect());
    Some(base.into_iter().chain(flags.protect.iter().cloned()).collect())
}

/// The hidden paths the config puts in force (its own list, else the catalogue's), before any
/// `--hide` or `--unhide`.
pub fn configured_hidden_paths(config: &Config) -> Vec<String> {
    config
        .hidden_paths
        .clone()
        .or(config.sandbox_workspace_write.hidden_paths.clone())
        .unwrap_or_else(|| DEFAULT_HIDDEN_PATHS.iter().map(|p| (*p).to_owned()).collect())
}

/// What a sandboxed command may read in the home directories: the allow-list, with the
/// config's `home_readable` and `unhide` besides, unless the config turns the list off.
pub fn home_reading(config: &Config, unhide: &[String]) -> HomeReading {
    if config.home_allow_list == Some(false) {
        return HomeReading::Everything;
    }
    HomeReading::AllowList { also: config.home_readable.iter().chain(unhide).cloned().collect() }
}

/// The config's list (or the defaults) plus `--hide`, minus `--unhide` (compared after `~`
/// expansion, since the shell has usually expanded the user's `~` already). `None` keeps the
/// helper's defaults.
fn hidden_paths(flags: &SandboxFlags, config: &Config, env: &PolicyEnv<'_>) -> Option<Vec<String>> {
    let configured =
        config.hidden_paths.is_some() || config.sandbox_workspace_write.hidden_paths.is_some();
    if flags.hide.is_empty() && flags.unhide.is_empty() && !configured {
        return None;
    }
    let unhidden: Vec<PathBuf> = flags.unhide.iter().filter_map(|p| expand_path(p, env)).collect();
    Some(
        configured_hidden_paths(config)
            .into_iter()
            .chain(flags.hide.iter().cloned())
            .filter(|p| !expand_hidden_path(p, env).iter().any(|p| unhidden.contains(p)))
            .collect(),
    )
}

/// The helper executable: `$CORDON_LINUX_SANDBOX_EXE`, else config `linux_sandbox_exe`, else
/// this very binary — which a spawner may then run in its forked child without an exec. Opened
/// now and started through that descriptor from then on (see [`PinnedExe`]).
fn helper_exe(config: &Config, own: &PinnedExe) -> anyhow::Result<(PinnedExe, HelperLaunch)> {
    let configured = match std::env::var_os("CORDON_LINUX_SANDBOX_EXE") {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ => config.linux_sandbox_exe.clone(),
    };
    match configured {
        Some(path) => {
            let exe = PinnedExe::open(&path)
                .with_context(|| format!("cannot use the helper executable {}", path.display()))?;
            Ok((exe, HelperLaunch::Exec))
        }
        None => Ok((own.clone(), HelperLaunch::InProcessWhenPossible)),
    }
}

impl Settings {
    /// Refuses (the caller exits 125) a local workspace whose writable roots include `$HOME`
    /// or an ancestor of it, unless allowed. For every entry point that runs commands under
    /// this machine's policy (not the far end of a link, which runs what it is sent).
    pub fn refuse_home_root(&self) -> anyhow::Result<()> {
        if self.cwd_pin.is_none() || self.allow_home_root {
            return Ok(());
        }
        refuse_home_root(&self.sandbox.policy, &self.cwd, &self.helper.user_view)
    }
}

/// Refuses a writable root that is `$HOME` or an ancestor of it unless the user allows it: the
/// helper then seals `$HOME` (its entries are writable one by one, nothing new can be created
/// at its top or on the way to a start-up path such as `~/.bash_profile`, `~/.config/…` or
/// `~/.local/bin`), which is stricter than what a user who names that root may expect, so it
/// is a choice made out loud.
fn refuse_home_root(
    policy: &SandboxPolicy,
    cwd: &Path,
    user_view: &cordon_policies::EnvSnapshot,
) -> anyhow::Result<()> {
    // Unset, empty, relative or missing, HOME is still where the user's shell starts: the
    // password database's.
    let canonical = |home: PathBuf| std::fs::canonicalize(home).ok();
    let home =
        user_view.home.clone().filter(|h| h.is_absolute()).and_then(canonical).or_else(|| {
            let user = nix::unistd::User::from_uid(nix::unistd::getuid()).ok().flatten()?;
            canonical(user.dir)
        });
    let Some(home) = home else {
        return Ok(());
    };
    let Ok(writable_roots) =
        policy.writable_roots(cwd, &user_view.view(), |p| std::fs::canonicalize(p))
    else {
        // The helper reports an unresolvable policy itself.
        return Ok(());
    };
    if let Some(root) = writable_roots.iter().find(|root| home.starts_with(root)) {
        // A temporary directory every workspace-write run gets (HOME under /tmp in a
        // container or CI): no -C helps, the way out is another place for temporary files.
        let temporary = [Some(PathBuf::from("/tmp")), user_view.tmpdir.clone()]
            .into_iter()
            .flatten()
            .filter_map(|dir| std::fs::canonicalize(dir).ok())
            .any(|dir| dir == *root);
        if temporary && *root != home {
            bail!(
                "your home directory {} lies in the temporary directory {}, which sandboxed \
                 commands may write: start-up files there would run outside the sandbox later; \
                 set HOME or TMPDIR elsewhere, or leave the directory out with -c \
                 sandbox_workspace_write.exclude_slash_tmp=true (for /tmp) or \
                 exclude_tmpdir_env_var=true (for $TMPDIR)",
                home.display(),
                root.display()
            );
        }
        let what =
            if *root == home { "is your home directory" } else { "contains your home directory" };
        bail!(
            "the writable root {} {what}, where start-up files (~/.bash_profile, ~/.zshenv, \
             ~/.config/…, ~/.local/bin/…) run outside the sandbox the next time you open a \
             shell or run git; use a project directory (-C DIR), or allow it with \
             --allow-home-root (config allow_home_root = true): $HOME is then sealed, its \
             plain entries writable, but nothing new at its top and no dot entry",
            root.display()
        );
    }
    Ok(())
}

/// The files a sandbox must not let a command replace: this binary (where it started from
/// and the path it was invoked by, as the shell found it) and the helper executable (the path
/// configured and where it leads).
fn cordon_executables(own: &PinnedExe, helper: &PinnedExe) -> Vec<PathBuf> {
    let mut paths = vec![own.canonical().to_path_buf()];
    paths.extend(invoked_path());
    for path in [helper.shown(), helper.canonical()] {
        if path.is_absolute() {
            paths.push(path.to_path_buf());
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// The path this process was started by: `argv[0]` when it names a path, else the first
/// executable of that name on `PATH` (what a shell ran).
fn invoked_path() -> Option<PathBuf> {
    let arg0 = PathBuf::from(std::env::args_os().next()?);
    if arg0.components().count() > 1 {
        return std::path::absolute(&arg0).ok();
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(&arg0))
        .find(|candidate| executable_file(candidate))
}

/// Whether `path` leads to a regular file someone may execute (what a PATH search takes).
fn executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// `$CORDON_HOME/rules.toml` alone: whether it can be read (for `cordon doctor`).
pub fn load_user_rules(home: Option<&Path>) -> anyhow::Result<RuleSet> {
    load_rules(home, None)
}

/// `$CORDON_HOME/rules.toml`, then `<workspace>/.cordon/rules.toml` (read safely: see
/// `state_files`).
fn load_rules(home: Option<&Path>, workspace: Option<&Path>) -> anyhow::Result<RuleSet> {
    let mut rules = RuleSet::default();
    let files = [
        home.map(|h| (h.join("rules.toml"), RuleSource::User)),
        workspace.map(|cwd| (cwd.join(".cordon").join("rules.toml"), RuleSource::Workspace)),
    ];
    for (path, source) in files.into_iter().flatten() {
        let Some(text) = crate::state_files::read(&path)? else { continue };
        let (parsed, warnings) = RuleSet::parse(&text, source)
            .map_err(|error| anyhow::anyhow!("{}: {}", path.display(), error.detail()))?;
        for warning in warnings {
            crate::terminal::say(&[format!("{}: {warning}", path.display())]);
        }
        rules.merge(parsed);
    }
    Ok(rules)
}

/// The ssh target of `--host`/`--connect`. The far end must answer within `--connect-timeout`
/// ([`HELLO_TIMEOUT`] by default), or within the run's `timeout` when that is shorter.
pub fn remote_target(
    host: &str,
    flags: &RemoteFlags,
    timeout: Option<std::time::Duration>,
) -> anyhow::Result<RemoteTarget> {
    let (destination, port) = RemoteTarget::parse_host(host)?;
    Ok(RemoteTarget {
        destination,
        port,
        ssh_options: flags.ssh_options.clone(),
        remote_cordon: flags.remote_cordon.clone(),
        ssh_program: ssh_program(flags.ssh_program.as_deref())?,
        hello_timeout: {
            let connect = flags.connect_timeout.unwrap_or(HELLO_TIMEOUT);
            timeout.map_or(connect, |t| t.min(connect))
        },
    })
}

/// The ssh client: `--ssh-program` as named, else `ssh` from the first system directory on
/// PATH that a sandboxed command cannot have written to — under `/usr`, `/bin` or `/sbin`,
/// owned by root, writable by no one else, and outside `$HOME` and the temporary directories.
/// Never simply the first `ssh` on PATH, which a sandboxed command could have planted in a
/// writable directory listed there.
fn ssh_program(named: Option<&Path>) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if let Some(path) = named {
        if !path.is_absolute() {
            bail!("--ssh-program {} must be an absolute path", path.display());
        }
        return Ok(path.to_path_buf());
    }
    let writable_places: Vec<PathBuf> = [std::env::var_os("HOME"), std::env::var_os("TMPDIR")]
        .into_iter()
        .flatten()
        .map(PathBuf::from)
        .chain(["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from))
        .chain(std::env::current_dir().ok())
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| p != Path::new("/"))
        .collect();
    let path = std::env::var_os("PATH").unwrap_or_default();
    // Under `/usr`, `/bin` or `/sbin` too: a sandboxed command run by root creates directories
    // owned by root, so ownership alone cannot tell the system's from a planted one.
    let system_dir = |dir: &Path| {
        ["/usr", "/bin", "/sbin"].iter().any(|top| dir.starts_with(top))
            && std::fs::metadata(dir).is_ok_and(|meta| {
                meta.is_dir() && meta.uid() == 0 && meta.permissions().mode() & 0o022 == 0
            })
            && !writable_places.iter().any(|place| dir.starts_with(place))
    };
    std::env::split_paths(&path)
        .filter_map(|dir| std::fs::canonicalize(dir).ok())
        .filter(|dir| system_dir(dir))
        .map(|dir| dir.join("ssh"))
        .find(|candidate| executable_file(candidate))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no ssh client in a system directory on PATH (under /usr, /bin or /sbin, owned by \
                 root, writable by root only); name one with --ssh-program PATH"
            )
        })
}

/// `cordon executor --connect` / `cordon mcp-server --connect`: opens the link, loads the
/// settings for the far end's workspace (`-C` is a path there), refuses what it cannot
/// enforce, and returns the sessions that run there, with its environment as the base.
/// The settings of a server that runs sessions here (`cordon executor`, `cordon mcp-server`):
/// workspace-write unless the flags or config say otherwise.
pub fn load_for_sessions(base: &ExecutorArgs) -> anyhow::Result<Settings> {
    if base.sandbox.writes == Some(WritesFlag::Transaction) {
        bail!(
            "--writes transaction is for one-shot runs (cordon exec, cordon sandbox): a session \
             outlives its call and writes directly"
        );
    }
    let mut settings =
        Settings::load(&base.sandbox, &base.policy, SandboxMode::WorkspaceWrite, Bypass::No)?;
    // A session outlives its call and has to stay live for the user's editor.
    settings.helper.writes = WriteChoice::Direct;
    Ok(settings)
}

/// `--writes` over config `writes`, where it can be kept: a transaction asked for by name
/// where none can be is refused.
fn write_choice(flags: &SandboxFlags, config: &Config) -> anyhow::Result<WriteChoice> {
    let choice = match flags.writes {
        Some(WritesFlag::Auto) => WriteChoice::Auto,
        Some(WritesFlag::Direct) => WriteChoice::Direct,
        Some(WritesFlag::Transaction) => WriteChoice::Transaction,
        None => config.writes.unwrap_or_default(),
    };
    match choice {
        WriteChoice::Transaction if !cfg!(target_os = "linux") => {
            bail!(
                "--writes transaction needs Linux's overlay file system; this platform writes directly"
            )
        }
        other => Ok(other),
    }
}

/// Says once on stderr, as `server`, what the sandboxed calls will miss on this machine.
pub fn announce_gaps(server: &str, policy: &SandboxPolicy) {
    for gap in cordon_exec_core::predicted_gaps(policy) {
        let required = if gap.required { " (required: sandboxed calls will fail)" } else { "" };
        eprintln!("{server}: not enforced here: {}{required}", gap.what);
    }
}

pub async fn connect_sessions(
    base: &ExecutorArgs,
    host: &str,
    remote: &RemoteFlags,
) -> anyhow::Result<RemoteSessions> {
    let (link, events) = RemoteLink::connect(&remote_target(host, remote, None)?).await?;
    print_link_events(events);
    let default_cwd = link.facts().cwd.clone();
    let settings = Settings::load_in(
        &base.sandbox,
        &base.policy,
        (SandboxMode::WorkspaceWrite, Bypass::No),
        Workspace::Remote { default_cwd: &default_cwd },
    )?;
    check_remote_enforcement(&link, &settings)?;
    let defaults =
        settings.session_defaults_with(settings.command_env_from(link.facts().env.clone()).0);
    let orchestrator = std::sync::Arc::new(settings.orchestrator()?);
    Ok(RemoteSessions::new(link, orchestrator, defaults))
}

/// Prints, one `cordon: …` line each, what the remote link reports while no call is waiting
/// for it (the connection lost with sessions running there, a line that is not the protocol),
/// for as long as the link lives.
pub fn print_link_events(mut events: LinkEvents) {
    tokio::spawn(async move {
        while let Some(event) = events.next().await {
            crate::terminal::say(&[event.to_string()]);
        }
    });
}

/// The far end's `$HOME` (from its environment) as a writable root: refused as on this machine
/// unless allowed. The roots are compared as the far end's paths, without resolving links
/// there; its helper seals `$HOME` whatever this check finds.
fn refuse_remote_home_root(link: &RemoteLink, settings: &Settings) -> anyhow::Result<()> {
    let facts = link.facts();
    let Some(home) = facts.env.iter().find(|(k, _)| k == "HOME").map(|(_, v)| PathBuf::from(v))
    else {
        return Ok(());
    };
    let mut roots = vec![settings.cwd.clone()];
    if let SandboxPolicy::WorkspaceWrite(ww) = &settings.sandbox.policy {
        roots.extend(ww.writable_roots.iter().cloned());
    }
    // The far end's paths cannot be resolved here: compared as written, with `.`, `..`,
    // repeated and trailing slashes taken out (links there are its helper's to seal).
    let home = cordon_policies::lexically_normal(&home);
    if let Some(root) = roots.iter().find(|root| {
        root.is_absolute() && home.starts_with(cordon_policies::lexically_normal(root))
    }) {
        bail!(
            "the writable root {} on {} is or contains the home directory there ({}), where \
             start-up files run outside the sandbox the next time a shell or git starts; use \
             a project directory (-C DIR), or allow it with --allow-home-root (config \
             allow_home_root = true): $HOME there is then sealed",
            root.display(),
            link.host(),
            home.display()
        );
    }
    Ok(())
}

/// Refuses (the caller exits 125) when the far end's `doctor` says it cannot enforce these
/// settings' policy, unless best effort was asked for; with best effort, says what is not
/// enforced there.
pub fn check_remote_enforcement(link: &RemoteLink, settings: &Settings) -> anyhow::Result<()> {
    if settings.sandbox.policy.network_domains().is_some() {
        bail!(
            "network by domain (--allow-domain, config network.allow) is not available on \
             another machine yet: its proxy would have to run there; use --network or no network"
        );
    }
    if !settings.allow_home_root {
        refuse_remote_home_root(link, settings)?;
    }
    match settings.sandbox.strictness {
        Strictness::FailClosed => {
            if let Some(refusal) = link.refusal(&settings.sandbox.policy) {
                return Err(refusal.into());
            }
        }
        Strictness::BestEffort => {
            for gap in link.gaps(&settings.sandbox.policy)? {
                crate::terminal::say(&[format!("not enforced on {}: {}", link.host(), gap.what)]);
            }
        }
    }
    Ok(())
}

/// `bytes` as text with every byte that is not UTF-8 read as a space.
fn spaced_text(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        text.extend(chunk.invalid().iter().map(|_| ' '));
    }
    text
}

//! `cordon sandbox linux|macos`: run one command in the platform sandbox, no approval step.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use cordon_policies::{
    DEFAULT_HIDDEN_PATHS, DEFAULT_PROTECTED_PATHS, EnvSnapshot, PolicyEnv, SandboxMode,
    SandboxPolicy, WorkspaceWrite, expand_path,
};
use cordon_sandbox_linux::{MountViewRequirement, Strictness};

use crate::config::{self, Config, MountViewSetting};
use crate::flags::{SandboxCommand, SandboxFlags, SandboxRunArgs};

pub fn run(cmd: SandboxCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SandboxCommand::Linux(args) => run_linux(args),
        SandboxCommand::Macos(args) => run_macos(args),
    }
}

/// The policy, its cwd and the helper's settings from the shared sandbox flags and the config.
pub struct SandboxRequest {
    pub policy: SandboxPolicy,
    pub cwd: PathBuf,
    pub strictness: Strictness,
    pub mount_view: MountViewRequirement,
}

/// Flags override the config; `default_mode` applies when neither names a mode.
pub fn sandbox_request(
    flags: &SandboxFlags,
    config: &Config,
    default_mode: SandboxMode,
) -> anyhow::Result<SandboxRequest> {
    let cwd = match &flags.cd {
        Some(dir) => std::fs::canonicalize(dir)
            .with_context(|| format!("cannot use -C {}", dir.display()))?,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let mode = if flags.full_auto {
        SandboxMode::WorkspaceWrite
    } else {
        flags.mode.map(SandboxMode::from).or(config.sandbox_mode).unwrap_or(default_mode)
    };
    let env = environment();
    let hidden_paths = hidden_paths(flags, config, &env.view());
    let ww = &config.sandbox_workspace_write;
    let policy = match mode {
        SandboxMode::DangerFullAccess => SandboxPolicy::DangerFullAccess {},
        SandboxMode::ReadOnly => {
            if flags.network || !flags.add_dirs.is_empty() {
                bail!("--network and --add-dir need -s workspace-write (or --full-auto)");
            }
            SandboxPolicy::ReadOnly { hidden_paths }
        }
        SandboxMode::WorkspaceWrite => SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
            writable_roots: ww
                .writable_roots
                .iter()
                .chain(&flags.add_dirs)
                .map(|d| cwd.join(d))
                .collect(),
            network_access: flags.network || ww.network_access,
            exclude_tmpdir_env_var: ww.exclude_tmpdir_env_var,
            exclude_slash_tmp: ww.exclude_slash_tmp,
            protected_paths: protected_paths(flags, config),
            hidden_paths,
        }),
    };
    let strictness = if flags.best_effort || config.sandbox_best_effort {
        Strictness::BestEffort
    } else {
        Strictness::FailClosed
    };
    let mount_view = if flags.require_mount_view {
        MountViewRequirement::Required
    } else if flags.no_mount_view {
        MountViewRequirement::Disabled
    } else {
        match config.sandbox_mount_view {
            MountViewSetting::Auto => MountViewRequirement::WhenAvailable,
            MountViewSetting::Required => MountViewRequirement::Required,
            MountViewSetting::Off => MountViewRequirement::Disabled,
        }
    };
    Ok(SandboxRequest { policy, cwd, strictness, mount_view })
}

/// The config's list (or the defaults) plus `--protect`. `None` keeps the helper's defaults.
fn protected_paths(flags: &SandboxFlags, config: &Config) -> Option<Vec<String>> {
    if flags.protect.is_empty() && config.protected_paths.is_none() {
        return None;
    }
    let base = config
        .protected_paths
        .clone()
        .unwrap_or_else(|| DEFAULT_PROTECTED_PATHS.iter().map(|p| (*p).to_owned()).collect());
    Some(base.into_iter().chain(flags.protect.iter().cloned()).collect())
}

/// The config's list (or the defaults) plus `--hide`, minus `--unhide` (compared after `~`
/// expansion, since the shell has usually expanded the user's `~` already). `None` keeps the
/// helper's defaults.
fn hidden_paths(flags: &SandboxFlags, config: &Config, env: &PolicyEnv<'_>) -> Option<Vec<String>> {
    if flags.hide.is_empty() && flags.unhide.is_empty() && config.hidden_paths.is_none() {
        return None;
    }
    let unhidden: Vec<PathBuf> = flags.unhide.iter().filter_map(|p| expand_path(p, env)).collect();
    let base = config
        .hidden_paths
        .clone()
        .unwrap_or_else(|| DEFAULT_HIDDEN_PATHS.iter().map(|p| (*p).to_owned()).collect());
    Some(
        base.into_iter()
            .chain(flags.hide.iter().cloned())
            .filter(|p| expand_path(p, env).is_none_or(|p| !unhidden.contains(&p)))
            .collect(),
    )
}

/// What hidden paths and writable roots depend on, read from this process's environment.
pub fn environment() -> EnvSnapshot {
    EnvSnapshot::from_lookup(|k| std::env::var_os(k), Some(nix::unistd::getuid().as_raw()))
}

/// The helper executable: `$CORDON_LINUX_SANDBOX_EXE`, else config `linux_sandbox_exe`, else
/// this very binary.
pub fn helper_exe(config: &Config) -> anyhow::Result<PathBuf> {
    match std::env::var_os("CORDON_LINUX_SANDBOX_EXE") {
        Some(path) if !path.is_empty() => Ok(PathBuf::from(path)),
        _ => match &config.linux_sandbox_exe {
            Some(path) => Ok(path.clone()),
            None => std::env::current_exe().context("cannot find the cordon executable"),
        },
    }
}

#[cfg(target_os = "linux")]
fn run_linux(args: SandboxRunArgs) -> anyhow::Result<ExitCode> {
    use std::os::unix::process::CommandExt;

    let config = config::load(config::cordon_home().as_deref(), &[])?;
    let request = sandbox_request(&args.sandbox, &config, SandboxMode::ReadOnly)?;
    let helper = cordon_sandbox_linux::HelperArgs {
        sandbox_policy_cwd: request.cwd.clone(),
        sandbox_policy: request.policy,
        command_cwd: Some(request.cwd),
        strictness: request.strictness,
        mount_view: request.mount_view,
        // cordon execs the helper: the command replaces cordon, there is no parent to follow.
        parent_death: cordon_sandbox_linux::ParentDeath::Ignore,
        command: args.command,
    };
    let exe = helper_exe(&config)?;
    // exec, not spawn: the helper (and then the command) replaces this process, so signals,
    // the terminal and the exit status are the command's own with nothing in between.
    let error = std::process::Command::new(&exe)
        .arg0(cordon_sandbox_linux::HELPER_ARG0)
        .args(cordon_sandbox_linux::helper_argv(&helper))
        .exec();
    Err(error).with_context(|| format!("cannot start the sandbox helper {}", exe.display()))
}

#[cfg(not(target_os = "linux"))]
fn run_linux(_args: SandboxRunArgs) -> anyhow::Result<ExitCode> {
    bail!("the Linux sandbox helper runs only on Linux")
}

#[cfg(target_os = "macos")]
fn run_macos(args: SandboxRunArgs) -> anyhow::Result<ExitCode> {
    use std::os::unix::process::CommandExt;

    let config = config::load(config::cordon_home().as_deref(), &[])?;
    let request = sandbox_request(&args.sandbox, &config, SandboxMode::ReadOnly)?;
    let mut command = if let SandboxPolicy::DangerFullAccess {} = request.policy {
        let mut command = std::process::Command::new(&args.command[0]);
        command.args(&args.command[1..]);
        command
    } else {
        let env = environment();
        let resolved =
            request.policy.resolve(&request.cwd, &env.view(), |p| std::fs::canonicalize(p))?;
        let resolved = cordon_sandbox_macos::with_real_paths(&resolved);
        let profile = cordon_sandbox_macos::seatbelt_profile(&resolved);
        cordon_sandbox_macos::sandbox_exec_command(&profile, &args.command)
    };
    // exec: the command's status, signals and terminal are its own.
    let error = command.current_dir(&request.cwd).exec();
    Err(error).context("cannot start /usr/bin/sandbox-exec")
}

#[cfg(not(target_os = "macos"))]
fn run_macos(_args: SandboxRunArgs) -> anyhow::Result<ExitCode> {
    bail!("Seatbelt (sandbox-exec) exists only on macOS; use `cordon sandbox linux` here")
}

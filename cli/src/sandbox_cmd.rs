//! `cordon sandbox linux|macos`: run one command in the platform sandbox, no approval step.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use cordon_policies::{
    DEFAULT_HIDDEN_PATHS, DEFAULT_PROTECTED_PATHS, SandboxMode, SandboxPolicy, WorkspaceWrite,
    expand_home,
};
use cordon_sandbox_linux::{MountViewRequirement, Strictness};

use crate::flags::{SandboxCommand, SandboxFlags, SandboxRunArgs};

pub fn run(cmd: SandboxCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SandboxCommand::Linux(args) => run_linux(args),
        SandboxCommand::Macos(args) => run_macos(args),
    }
}

/// The policy, its cwd and the helper's strictness from the shared sandbox flags.
#[cfg_attr(
    not(target_os = "linux"),
    expect(dead_code, reason = "strictness and the mount view are Linux helper settings")
)]
pub struct SandboxRequest {
    pub policy: SandboxPolicy,
    pub cwd: PathBuf,
    pub strictness: Strictness,
    pub mount_view: MountViewRequirement,
}

pub fn sandbox_request(
    flags: &SandboxFlags,
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
        flags.mode.map_or(default_mode, SandboxMode::from)
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let hidden_paths = hidden_paths(flags, home.as_deref());
    let policy = match mode {
        SandboxMode::DangerFullAccess => SandboxPolicy::DangerFullAccess {},
        SandboxMode::ReadOnly => {
            if flags.network || !flags.add_dirs.is_empty() {
                bail!("--network and --add-dir need -s workspace-write (or --full-auto)");
            }
            SandboxPolicy::ReadOnly { hidden_paths }
        }
        SandboxMode::WorkspaceWrite => SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
            writable_roots: flags.add_dirs.iter().map(|d| cwd.join(d)).collect(),
            network_access: flags.network,
            protected_paths: (!flags.protect.is_empty()).then(|| {
                DEFAULT_PROTECTED_PATHS
                    .iter()
                    .map(|p| (*p).to_owned())
                    .chain(flags.protect.iter().cloned())
                    .collect()
            }),
            hidden_paths,
            ..WorkspaceWrite::default()
        }),
    };
    let strictness =
        if flags.best_effort { Strictness::BestEffort } else { Strictness::FailClosed };
    let mount_view = if flags.require_mount_view {
        MountViewRequirement::Required
    } else if flags.no_mount_view {
        MountViewRequirement::Disabled
    } else {
        MountViewRequirement::WhenAvailable
    };
    Ok(SandboxRequest { policy, cwd, strictness, mount_view })
}

/// The defaults plus `--hide`, minus `--unhide` (compared after `~` expansion, since the shell
/// has usually expanded the user's `~` already). `None` keeps the helper's defaults.
fn hidden_paths(flags: &SandboxFlags, home: Option<&Path>) -> Option<Vec<String>> {
    if flags.hide.is_empty() && flags.unhide.is_empty() {
        return None;
    }
    let unhidden: Vec<PathBuf> = flags.unhide.iter().filter_map(|p| expand_home(p, home)).collect();
    Some(
        DEFAULT_HIDDEN_PATHS
            .iter()
            .map(|p| (*p).to_owned())
            .chain(flags.hide.iter().cloned())
            .filter(|p| expand_home(p, home).is_none_or(|p| !unhidden.contains(&p)))
            .collect(),
    )
}

/// The helper executable: `$CORDON_LINUX_SANDBOX_EXE`, else this very binary.
#[cfg(target_os = "linux")]
pub fn helper_exe() -> anyhow::Result<PathBuf> {
    match std::env::var_os("CORDON_LINUX_SANDBOX_EXE") {
        Some(path) if !path.is_empty() => Ok(PathBuf::from(path)),
        _ => std::env::current_exe().context("cannot find the cordon executable"),
    }
}

#[cfg(target_os = "linux")]
fn run_linux(args: SandboxRunArgs) -> anyhow::Result<ExitCode> {
    use std::os::unix::process::CommandExt;

    let request = sandbox_request(&args.sandbox, SandboxMode::ReadOnly)?;
    let helper = cordon_sandbox_linux::HelperArgs {
        sandbox_policy_cwd: request.cwd.clone(),
        sandbox_policy: request.policy,
        command_cwd: Some(request.cwd),
        strictness: request.strictness,
        mount_view: request.mount_view,
        command: args.command,
    };
    let exe = helper_exe()?;
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

    let request = sandbox_request(&args.sandbox, SandboxMode::ReadOnly)?;
    let mut command = if let SandboxPolicy::DangerFullAccess {} = request.policy {
        let mut command = std::process::Command::new(&args.command[0]);
        command.args(&args.command[1..]);
        command
    } else {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let tmpdir = std::env::var_os("TMPDIR").map(PathBuf::from);
        let env = cordon_policies::PolicyEnv { tmpdir: tmpdir.as_deref(), home: home.as_deref() };
        let resolved = request.policy.resolve(&request.cwd, &env, |p| std::fs::canonicalize(p))?;
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

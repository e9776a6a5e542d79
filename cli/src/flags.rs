//! The command line as clap structs. They are turned into validated request types
//! (`SandboxPolicy`, `HelperArgs`) before any library sees them.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use cordon_policies::SandboxMode;

#[derive(Debug, Parser)]
#[command(
    name = "cordon",
    version,
    about = "Run commands under an OS sandbox and an approval policy"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command under the approval policy and the sandbox (DESIGN §7, §8).
    Exec(ExecArgs),
    /// Serve interactive sandboxed sessions over JSON lines on stdin/stdout (DESIGN §10).
    Executor(ExecutorArgs),
    /// Policy tools.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Run a command in the platform sandbox, with no approval step.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Show what this kernel can enforce and what each sandbox mode enforces here.
    Doctor(DoctorArgs),
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Run through the Linux helper (Landlock, seccomp, mount view).
    Linux(SandboxRunArgs),
    /// Run through Seatbelt (`/usr/bin/sandbox-exec`); macOS only.
    Macos(SandboxRunArgs),
}

/// `-a` spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApprovalArg {
    Untrusted,
    OnFailure,
    OnRequest,
    Never,
}

impl From<ApprovalArg> for cordon_policies::AskForApproval {
    fn from(arg: ApprovalArg) -> Self {
        match arg {
            ApprovalArg::Untrusted => cordon_policies::AskForApproval::Untrusted,
            ApprovalArg::OnFailure => cordon_policies::AskForApproval::OnFailure,
            ApprovalArg::OnRequest => cordon_policies::AskForApproval::OnRequest,
            ApprovalArg::Never => cordon_policies::AskForApproval::Never,
        }
    }
}

/// `-s` spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

impl From<ModeArg> for SandboxMode {
    fn from(mode: ModeArg) -> Self {
        match mode {
            ModeArg::ReadOnly => SandboxMode::ReadOnly,
            ModeArg::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            ModeArg::DangerFullAccess => SandboxMode::DangerFullAccess,
        }
    }
}

/// The sandbox flags shared by every command that runs something.
#[derive(Debug, Clone, Args)]
pub struct SandboxFlags {
    /// Sandbox mode.
    #[arg(short = 's', long = "sandbox", value_enum, conflicts_with = "full_auto")]
    pub mode: Option<ModeArg>,
    /// Shorthand for `-s workspace-write`.
    #[arg(long)]
    pub full_auto: bool,
    /// Another writable directory (repeatable; workspace-write).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dirs: Vec<PathBuf>,
    /// Allow network access (workspace-write).
    #[arg(long)]
    pub network: bool,
    /// Working directory of the command (and the workspace root).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<PathBuf>,
    /// Keep PATH read-only inside writable roots (repeatable; added to the defaults).
    #[arg(long = "protect", value_name = "PATH")]
    pub protect: Vec<String>,
    /// Hide PATH from the command (repeatable; added to the defaults).
    #[arg(long = "hide", value_name = "PATH")]
    pub hide: Vec<String>,
    /// Do not hide PATH even though it is a default hidden path (repeatable).
    #[arg(long = "unhide", value_name = "PATH")]
    pub unhide: Vec<String>,
    /// Run with a weaker sandbox when the kernel cannot enforce everything, saying what is
    /// missing, instead of refusing (exit 125).
    #[arg(long)]
    pub best_effort: bool,
    /// Refuse to run (exit 125) when the mount view cannot be built.
    #[arg(long, conflicts_with = "no_mount_view")]
    pub require_mount_view: bool,
    /// Do not build the mount view (Landlock + seccomp only).
    #[arg(long)]
    pub no_mount_view: bool,
}

#[derive(Debug, Args)]
pub struct SandboxRunArgs {
    #[command(flatten)]
    pub sandbox: SandboxFlags,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// The approval policy and config overrides shared by `exec`, `executor` and `policy check`.
#[derive(Debug, Clone, Args)]
pub struct PolicyFlags {
    /// When to ask before running (default: config, else on-request); the executor asks over
    /// the protocol.
    #[arg(short = 'a', long = "ask-for-approval", value_enum)]
    pub approval: Option<ApprovalArg>,
    /// Override a config key: `-c sandbox_workspace_write.network_access=true`.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub policy: PolicyFlags,
    /// No sandbox and no approvals (`-s danger-full-access -a never`).
    #[arg(
        long = "dangerously-bypass-approvals-and-sandbox",
        visible_alias = "yolo",
        conflicts_with_all = ["approval", "mode", "full_auto"]
    )]
    pub yolo: bool,
    #[command(flatten)]
    pub sandbox: SandboxFlags,
    /// Kill the command (and everything it started) after this long: `10s`, `500ms`, `2m`.
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Print one JSON document with every attempt instead of streaming the output.
    #[arg(long)]
    pub json: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let with_unit =
        if text.chars().all(|c| c.is_ascii_digit()) { format!("{text}s") } else { text.to_owned() };
    match humantime::parse_duration(&with_unit) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("the timeout must be longer than zero".into()),
        Err(e) => Err(format!("{e} (e.g. 10s, 500ms, 2m)")),
    }
}

#[derive(Debug, Args)]
pub struct ExecutorArgs {
    #[command(flatten)]
    pub policy: PolicyFlags,
    #[command(flatten)]
    pub sandbox: SandboxFlags,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Print the decision for a command as JSON; runs nothing.
    Check(PolicyCheckArgs),
}

#[derive(Debug, Args)]
pub struct PolicyCheckArgs {
    #[command(flatten)]
    pub policy: PolicyFlags,
    #[command(flatten)]
    pub sandbox: SandboxFlags,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

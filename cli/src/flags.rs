//! The command line as clap structs. They are turned into validated request types
//! (`SandboxPolicy`, `HelperArgs`) before any library sees them.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use cordon_policies::{AskForApproval, LimitKey, Limits, SandboxMode};

/// `cordon --version`: the version, the commit it was built from, the sandbox backends.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CORDON_COMMIT"),
    "; sandboxes: ",
    backends!(),
    ")"
);

#[cfg(target_os = "linux")]
macro_rules! backends {
    () => {
        "linux helper (Landlock, seccomp, mount view), seatbelt profiles"
    };
}
#[cfg(not(target_os = "linux"))]
macro_rules! backends {
    () => {
        "seatbelt (sandbox-exec), linux helper argv only"
    };
}
use backends;

#[derive(Debug, Parser)]
#[command(
    name = "cordon",
    version = VERSION,
    about = "Run commands under an OS sandbox and an approval policy",
    after_help = "Docs: README.md and docs/ in the source tree (config, rules, executor protocol, \
                  exit codes, kernel support). Run `cordon doctor` to see what this machine \
                  enforces."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Log cordon's decisions to stderr: -v for debug events, -vv for trace events (and the
    /// libraries' info). RUST_LOG, when set, is the filter instead.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
// Each subcommand's arguments are built only when it is the one invoked (`Command::defer`):
// building every subcommand's arguments would be the largest part of `cordon exec`'s own
// start-up, which every sandboxed command pays.
#[command(defer = true)]
pub enum Command {
    /// Run a command under the approval policy and the sandbox.
    Exec(ExecArgs),
    /// Serve interactive sandboxed sessions over JSON lines on stdin/stdout
    /// (docs/executor-protocol.md).
    ///
    /// With `--connect HOST` the sessions run on another machine over ssh (decided and
    /// approved here, sandboxed there); `--serve-remote` is that machine's end of the link.
    Executor(ExecutorCmdArgs),
    /// Serve sandboxed command execution to MCP clients over stdio (Codex, Claude Code, …).
    #[command(
        long_about = "Serve sandboxed command execution to any MCP client over stdin/stdout \
(the Model Context Protocol, newline-delimited JSON-RPC).\n\n\
Tools: exec_command and write_stdin (the executor's sessions: every command runs in the \
sandbox given by -s, in a PTY when tty is true), list_sessions and close_session. When the \
approval policy (-a) asks, the client's user is asked through MCP elicitation; a client \
without elicitation gets a refusal, as with -a never. Cancelling a call kills its command.\n\n\
Add to Codex (~/.codex/config.toml):\n  [mcp_servers.cordon]\n  command = \"cordon\"\n  \
args = [\"mcp-server\", \"-a\", \"on-request\"]\n\
Add to Claude Code:\n  claude mcp add cordon -- cordon mcp-server\n\n\
Logs go to stderr; stdout carries only the protocol. EOF on stdin ends every session (exit 0); \
SIGTERM does too (exit 143).\n\n\
With --connect HOST the sessions run on HOST (ssh HOST cordon executor --serve-remote), \
sandboxed there, while rules, the approval policy and the elicitation stay here."
    )]
    McpServer(McpArgs),
    /// Policy tools.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Configuration tools: `cordon config show`.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Run a command in the platform sandbox, with no approval step.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Show what this kernel can enforce and what each sandbox mode enforces here (exit 1
    /// when the default policy cannot be enforced, or when the config is broken).
    Doctor(DoctorArgs),
    /// What transactional runs held back: list the runs that kept something, show one, take
    /// its held changes into the workspace after you looked (--take), or remove it (--drop).
    /// See docs/transactions.md.
    Held(HeldArgs),
    /// What a transactional run changed: each path it made, replaced or deleted (and whether
    /// it changed since), and what it held back. Without RUN, the newest run whose workspace
    /// holds the current directory. See docs/transactions.md.
    Diff(DiffArgs),
    /// Puts back what a transactional run replaced or deleted, and moves aside what it made —
    /// each path only while it still holds what the run put there (anything changed since is
    /// left and named). Nothing is deleted: what the run wrote goes to the run's `undone/`.
    /// Exit 1 when anything was left. Without RUN, the newest run whose workspace holds the
    /// current directory.
    Undo(UndoArgs),
    /// Print a shell completion script: `cordon completions bash > /etc/bash_completion.d/cordon`.
    Completions(CompletionsArgs),
    /// Print a man page (roff): `cordon man > cordon.1`, `cordon man exec`; or write every
    /// page to a directory: `cordon man --dir ~/.local/share/man/man1`.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write every page (cordon.1, cordon-exec.1, …) into DIR, creating it, and print their
    /// paths, instead of printing one page.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
    /// The command whose page to print: `exec`, `sandbox linux`, `policy check` (default: the
    /// top page, cordon(1)).
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Subcommand)]
// Each subcommand's arguments are built only when it is the one invoked (`Command::defer`):
// building every subcommand's arguments would be the largest part of `cordon exec`'s own
// start-up, which every sandboxed command pays.
#[command(defer = true)]
pub enum SandboxCommand {
    /// Run through the Linux helper (Landlock, seccomp, mount view).
    Linux(SandboxRunArgs),
    /// Run through Seatbelt (`/usr/bin/sandbox-exec`); macOS only.
    Macos(SandboxRunArgs),
}

// The sandbox flags shared by every command that runs something. (Plain comments on the
// flattened structs: clap would take a doc comment as the `about` of the subcommand that
// flattens them, which with deferred subcommands would replace the subcommand's own.)
#[derive(Debug, Clone, Args)]
pub struct SandboxFlags {
    /// Sandbox mode [default: config sandbox_mode, else workspace-write (read-only for
    /// `cordon sandbox`)].
    #[arg(short = 's', long = "sandbox", value_enum, conflicts_with = "full_auto")]
    pub mode: Option<SandboxMode>,
    /// Shorthand for `-s workspace-write`.
    #[arg(long)]
    pub full_auto: bool,
    /// Another writable directory (repeatable; workspace-write).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dirs: Vec<PathBuf>,
    /// Allow network access (workspace-write).
    #[arg(long, conflicts_with = "allow_domains")]
    pub network: bool,
    /// Network by domain: the command gets its own network namespace and reaches only these
    /// destinations, through cordon's HTTP/HTTPS proxy (HTTP_PROXY etc. are set for it).
    /// `host`, `*.suffix` or either with `:port`; repeatable; added to config `network.allow`.
    /// A loopback target with its port (`127.0.0.1:8080`, `localhost:8080`) is forwarded:
    /// the host's server on that port is reached at the same address inside.
    /// Linux only; see docs/network.md.
    #[arg(long = "allow-domain", value_name = "DOMAIN")]
    pub allow_domains: Vec<String>,
    /// A package manager's preset (repeatable; added to config `presets`): npm, pip or cargo.
    /// The command may reach the registry hosts your own configuration of that client names
    /// (~/.npmrc, pip.conf, ~/.cargo/config.toml; never a workspace file), and the client gets
    /// a cache of this workspace's own under $CORDON_HOME/workspaces/ that only its sandboxed
    /// runs write. Registry URLs from hidden files (~/.npmrc, pip's) reach it only when named
    /// in config preset_settings_not_secret. Needs workspace-write.
    /// See docs/presets.md; `cordon doctor` lists what each allows here.
    #[arg(long = "preset", value_name = "NAME")]
    pub presets: Vec<String>,
    /// Let the command connect to this UNIX socket although it is hidden or lies in a hidden
    /// directory (an ssh agent, a Docker socket); the rest stays hidden. Repeatable; added to
    /// config `allow_unix_sockets`. Needs --network or --allow-domain (workspace-write); with
    /// --allow-domain, Landlock ABI 9 (else exit 125 unless --best-effort; `cordon doctor`).
    #[arg(long = "allow-unix-socket", value_name = "PATH")]
    pub allow_unix_sockets: Vec<String>,
    /// Working directory of the command (and the workspace root).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<PathBuf>,
    /// Keep PATH read-only inside writable roots (repeatable; added to the defaults).
    #[arg(long = "protect", value_name = "PATH")]
    pub protect: Vec<String>,
    /// Hide PATH from the command (repeatable; added to the defaults).
    #[arg(long = "hide", value_name = "PATH")]
    pub hide: Vec<String>,
    /// Do not hide PATH (repeatable): a hidden path's entry, or an entry of the home directory
    /// that is not on the allow-list of what sandboxed commands may read there.
    #[arg(long = "unhide", value_name = "PATH")]
    pub unhide: Vec<String>,
    /// Run with a weaker sandbox when the kernel cannot enforce everything, saying what is
    /// missing, instead of refusing (exit 125).
    #[arg(long)]
    pub best_effort: bool,
    /// Refuse to run (exit 125) when the mount view cannot be built.
    #[arg(long, conflicts_with = "no_mount_view")]
    pub require_mount_view: bool,
    /// Do not build the mount view (Landlock + seccomp only): protected paths are then writable
    /// and hidden paths inside the writable roots readable, without a warning; Landlock keeps
    /// the other hidden paths (~/.ssh, …) unreadable, their names visible.
    #[arg(long)]
    pub no_mount_view: bool,
    /// Allow a writable root that is your home directory or contains it (refused otherwise,
    /// exit 125: start-up files such as ~/.bash_profile run outside the sandbox later). It is
    /// then sealed: its plain entries are writable, nothing new at its top, no dot entry.
    #[arg(long)]
    pub allow_home_root: bool,
    /// Limit the command's resources (repeatable; over config `[limits]`): memory=SIZE and
    /// pids=N for the command and everything it starts, cpu=SECONDS of CPU time for all of
    /// them, file-size=SIZE for any one file it writes, open-files=N per process. SIZE takes
    /// K, M, G. Where the kernel cannot hold memory or pids: exit 125 unless --best-effort.
    /// Exceeded: exit 122 naming the limit. See docs/limits.md and `cordon doctor`.
    #[arg(long = "limit", value_name = "KEY=VALUE", value_parser = parse_limit)]
    pub limits: Vec<(LimitKey, u64)>,
    /// How the command writes its writable roots [default: auto; config `writes`].
    /// `transaction` (Linux, `cordon exec` and `cordon sandbox`): its writes land in a layer of
    /// their own and reach the roots when it is over, through a gate that holds back what git,
    /// a shell or a tool would later run code from (kept under $CORDON_HOME/kept and named:
    /// `cordon held`); no search of the workspace before or after, whatever its size; its /tmp
    /// and $TMPDIR are the workspace's own. `auto`: a transaction where this machine can make
    /// the layer (`cordon doctor` says), else direct writes, said in --dry-run and --json.
    /// `direct`: the command writes its roots as it runs (terminal sessions always do; an
    /// executor call asks for a transaction with `writes`). See docs/transactions.md.
    #[arg(long = "writes", value_enum, value_name = "MODE")]
    pub writes: Option<WritesFlag>,
}

/// `--writes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WritesFlag {
    Auto,
    Direct,
    Transaction,
}

fn parse_limit(text: &str) -> Result<(LimitKey, u64), String> {
    Limits::parse_assignment(text).map_err(|error| error.to_string())
}

#[derive(Debug, Args)]
pub struct SandboxRunArgs {
    #[command(flatten)]
    pub sandbox: SandboxFlags,
    /// Pass cordon's whole environment to the command, credentials included, instead of
    /// applying `[shell_environment_policy]` from the config (which by default drops variables
    /// named like credentials and values shaped like tokens, as `cordon exec` does). Hidden
    /// paths and writable roots do not depend on it.
    #[arg(long)]
    pub inherit_env: bool,
    /// Override a config key: `-c sandbox_workspace_write.network_access=true`.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Kill the command (and everything it started) after this long, exit 124: `10s`, `500ms`,
    /// `2m`. cordon then stays as the command's parent instead of becoming it.
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Print one JSON document (the attempt, its output and exit) instead of streaming the
    /// output. cordon then stays as the command's parent instead of becoming it.
    #[arg(long)]
    pub json: bool,
    /// Print the sandbox the command would get and run nothing (`--json`: as data).
    #[arg(long)]
    pub dry_run: bool,
    /// The command and its arguments (`--` before it is optional).
    #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

// The approval policy and config overrides shared by `exec`, `executor`, `mcp-server` and
// `policy check`.
#[derive(Debug, Clone, Args)]
pub struct PolicyFlags {
    /// When to ask before running [default: config approval_policy, else on-request]; the
    /// executor asks over the protocol.
    #[arg(short = 'a', long = "ask-for-approval", value_enum)]
    pub approval: Option<AskForApproval>,
    /// Override a config key: `-c sandbox_workspace_write.network_access=true`.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub policy: PolicyFlags,
    /// No sandbox and no approvals (`-s danger-full-access -a never`). What the command
    /// starts still ends with it, or with cordon (see docs/limits.md).
    #[arg(
        long = "dangerously-bypass-approvals-and-sandbox",
        visible_alias = "yolo",
        conflicts_with_all = ["approval", "mode", "full_auto"]
    )]
    pub yolo: bool,
    #[command(flatten)]
    pub sandbox: SandboxFlags,
    /// Kill the command (and everything it started) after this long: `10s`, `500ms`, `2m`; a
    /// bare number is seconds.
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Print one JSON document with every attempt instead of streaming the output.
    #[arg(long)]
    pub json: bool,
    /// Print the decision and the sandbox the command would get — writable roots, protected
    /// and hidden paths, network, environment removed — and run nothing (`--json`: as data).
    #[arg(long, conflicts_with = "host")]
    pub dry_run: bool,
    /// Run the command on another machine, sandboxed there by its cordon (reached with
    /// `ssh HOST cordon executor --serve-remote`); approvals are asked here. `-C` is then a
    /// path there (default: the login directory); the command's output arrives merged on
    /// stdout and its stdin is /dev/null. See docs/remote.md.
    #[arg(long, value_name = "[USER@]HOST[:PORT]")]
    pub host: Option<String>,
    #[command(flatten)]
    pub remote: RemoteFlags,
    /// The command and its arguments (`--` before it is optional); any bytes.
    #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

// How to reach another machine (`exec --host`, `executor --connect`).
#[derive(Debug, Clone, Args)]
pub struct RemoteFlags {
    /// An ssh option for the connection, as `ssh -o` takes it (repeatable):
    /// `--ssh-option IdentityFile=~/.ssh/ci --ssh-option ControlPath=~/.ssh/cm-%C`.
    /// ~/.ssh/config applies as for any ssh.
    #[arg(long = "ssh-option", value_name = "KEY=VALUE")]
    pub ssh_options: Vec<String>,
    /// The cordon to run on the other machine.
    #[arg(long = "remote-cordon", value_name = "PATH", default_value = "cordon")]
    pub remote_cordon: String,
    /// The ssh client to run. Default: `ssh` from the first system directory on PATH (under
    /// /usr, /bin or /sbin, owned by root, writable by root only, outside $HOME and the
    /// temporary directories), never a directory a sandboxed command could have written.
    #[arg(long = "ssh-program", value_name = "PATH")]
    pub ssh_program: Option<PathBuf>,
    /// How long ssh's connection and login and the remote cordon's first answer may take
    /// together (a password typed at ssh's prompt counts); then ssh is killed, exit 125.
    /// `exec --timeout` bounds it too. Default 10s.
    #[arg(long = "connect-timeout", value_name = "DURATION", value_parser = parse_duration)]
    pub connect_timeout: Option<std::time::Duration>,
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

#[derive(Debug, Args)]
pub struct ExecutorCmdArgs {
    #[command(flatten)]
    pub base: ExecutorArgs,
    /// Run the sessions on another machine over ssh (`ssh HOST cordon executor
    /// --serve-remote`): rules, the approval policy and approvals stay here (asked of the
    /// harness), the sandbox is that machine's. `-C` is a path there.
    #[arg(long, value_name = "[USER@]HOST[:PORT]", conflicts_with = "serve_remote")]
    pub connect: Option<String>,
    /// The far end of `--connect`/`exec --host` (started by ssh, not by people): serve the
    /// resolved form (exec_resolved) to an orchestrator on the other end of stdin/stdout,
    /// deciding nothing but what this machine's sandbox enforces. Its `doctor` report and
    /// environment go back in `hello_response`.
    #[arg(long)]
    pub serve_remote: bool,
    #[command(flatten)]
    pub remote: RemoteFlags,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub base: ExecutorArgs,
    /// Run the sessions on another machine over ssh (as `cordon executor --connect`);
    /// approvals are still asked of this client through elicitation. `-C` is a path there.
    #[arg(long, value_name = "[USER@]HOST[:PORT]")]
    pub connect: Option<String>,
    #[command(flatten)]
    pub remote: RemoteFlags,
}

#[derive(Debug, Subcommand)]
// Each subcommand's arguments are built only when it is the one invoked (`Command::defer`):
// building every subcommand's arguments would be the largest part of `cordon exec`'s own
// start-up, which every sandboxed command pays.
#[command(defer = true)]
pub enum PolicyCommand {
    /// Print the decision for a command as JSON; runs nothing.
    Check(PolicyCheckArgs),
}

#[derive(Debug, Subcommand)]
// Each subcommand's arguments are built only when it is the one invoked (`Command::defer`).
#[command(defer = true)]
pub enum ConfigCommand {
    /// Print the config file's path and every effective setting, with where each came from
    /// (`-c`, the file, the environment, or the default).
    Show(ConfigShowArgs),
}

#[derive(Debug, Args)]
pub struct ConfigShowArgs {
    /// Override a config key, as for `cordon exec`: `-c sandbox_mode=read-only`.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PolicyCheckArgs {
    #[command(flatten)]
    pub policy: PolicyFlags,
    #[command(flatten)]
    pub sandbox: SandboxFlags,
    /// The command and its arguments (`--` before it is optional).
    #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct HeldArgs {
    /// The run, as `cordon held` lists it; without it, every kept run.
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// Take these held paths (absolute, as listed) into the workspace: each is copied from where
    /// the run kept it, without following a link on the way, set-id bits and write for group and
    /// others dropped; nothing is copied when any of it is a FIFO, socket or device.
    #[arg(long, value_name = "PATH", requires = "run", num_args = 1..)]
    pub take: Vec<PathBuf>,
    /// Remove the run and everything it kept.
    #[arg(long, requires = "run", conflicts_with = "take")]
    pub drop: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The run, as `cordon diff --list` or `cordon held` names it.
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// List every kept run instead (newest first).
    #[arg(long, conflicts_with = "run")]
    pub list: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The run, as `cordon diff --list` names it.
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every subcommand is deferred: clap's own consistency checks run on the built whole.
    #[test]
    fn the_command_line_is_consistent_once_every_subcommand_is_built() {
        let mut command = Cli::command();
        command.build();
        command.debug_assert();
    }

    /// A deferred subcommand applies its flattened structs after its own attributes; a doc
    /// comment on one of them would become the subcommand's description (`--help`, the man
    /// page, completions).
    #[test]
    fn deferred_subcommands_keep_their_own_descriptions() {
        let mut command = Cli::command();
        command.build();
        let about = |path: &[&str]| -> String {
            let mut cmd = &command;
            for name in path {
                cmd = cmd.find_subcommand(name).unwrap_or_else(|| panic!("no {name}"));
            }
            cmd.get_about().map(ToString::to_string).unwrap_or_default()
        };
        assert_eq!(about(&["exec"]), "Run a command under the approval policy and the sandbox");
        assert!(about(&["executor"]).starts_with("Serve interactive sandboxed sessions"));
        assert!(about(&["mcp-server"]).starts_with("Serve sandboxed command execution"));
        assert!(about(&["sandbox", "linux"]).starts_with("Run through the Linux helper"));
        assert_eq!(
            about(&["policy", "check"]),
            "Print the decision for a command as JSON; runs nothing"
        );
        // And the arguments of a deferred subcommand are there once built.
        let exec = command.find_subcommand("exec").unwrap();
        assert!(exec.get_arguments().any(|a| a.get_long() == Some("timeout")));
    }
}

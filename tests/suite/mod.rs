//! The suite's modules. Every module runs on Linux. On macOS the ones under
//! `cfg(target_os = "linux")` are left out — they test what exists only there (the mount view
//! and its namespaces, Landlock and seccomp through the helper's own flags, PID-namespace
//! containment, kernel probes, the remote executor over ssh, the rules oracle's mount
//! namespaces; writes and the network on and off are checked on macOS in `macos.rs`) — and the
//! rest run under Seatbelt with macOS expectations where the platforms differ (`SANDBOX`,
//! `PLATFORM` in `util.rs`; a single test under `cfg(target_os = "linux")` says why).

mod util;

mod approval_prompt;
mod auto_approval;
mod cli;
#[cfg(target_os = "linux")]
mod code_runs_later;
#[cfg(target_os = "linux")]
mod codex_conformance;
#[cfg(target_os = "linux")]
mod containment;
#[cfg(target_os = "linux")]
mod default_writes;
#[cfg(target_os = "linux")]
mod everyday;
mod exec;
mod executor;
mod exit_codes;
#[cfg(target_os = "linux")]
mod filesystem;
#[cfg(target_os = "linux")]
mod git_config_differential;
#[cfg(target_os = "linux")]
mod git_dirs_later;
#[cfg(target_os = "linux")]
mod hardening;
#[cfg(target_os = "linux")]
mod helper_after_run;
#[cfg(target_os = "linux")]
mod hidden_replaced;
#[cfg(target_os = "linux")]
mod home_allow_list;
#[cfg(target_os = "linux")]
mod launch_paths;
#[cfg(target_os = "linux")]
mod limits;
mod limits_delegated;
#[cfg(target_os = "linux")]
mod limits_named;
#[cfg(target_os = "macos")]
mod macos;
mod mcp;
mod mcp_ts;
mod messages;
#[cfg(target_os = "linux")]
mod mount_view;
#[cfg(target_os = "linux")]
mod namespace_init;
#[cfg(target_os = "linux")]
mod network;
#[cfg(target_os = "linux")]
mod own_transactions;
#[cfg(target_os = "linux")]
mod preset_workspaces;
#[cfg(target_os = "linux")]
mod presets;
mod process;
mod proxy;
#[cfg(target_os = "linux")]
mod remote;
#[cfg(target_os = "linux")]
mod remote_peers;
mod robustness;
#[cfg(target_os = "linux")]
mod rules_oracle;
#[cfg(target_os = "linux")]
mod run_leftovers;
mod secret_files;
mod secrets;
#[cfg(target_os = "linux")]
mod self_protection;
#[cfg(target_os = "linux")]
mod session_gate;
#[cfg(target_os = "linux")]
mod stalled_start;
mod terminal;
#[cfg(target_os = "linux")]
mod transactions;
mod trust_boundary;
#[cfg(target_os = "linux")]
mod unsandboxed_containment;

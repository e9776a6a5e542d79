//! Policies for cordon: pure data and decisions.
//!
//! - [`SandboxPolicy`]: what a sandboxed command may do, in the JSON shape that OpenAI Codex
//!   passes to its Linux helper (`{"type": "workspace-write", "writable_roots": [...]}`), plus two
//!   optional cordon fields (`protected_paths`, `hidden_paths`) that old Codex JSON may omit.
//! - [`SandboxMode`]: the CLI spelling (`read-only`, `workspace-write`, `danger-full-access`).
//! - [`AskForApproval`], [`Escalation`]: when to ask the user, and a request to run outside the
//!   sandbox.
//! - [`RuleSet`]: `allow` / `prompt` / `forbidden` prefix rules from the rules files.
//! - [`is_known_safe`], [`plain_shell_commands`]: the known-safe list, and the plain commands
//!   inside `bash -lc SCRIPT` (parsed with tree-sitter-bash, checked by a strict lexer).
//! - [`is_shell_call`], [`script_words`]: whether an argv runs a shell, and every word that might
//!   be a program name in its inline script, for scripts that are not plain.
//! - [`assess`], [`retry_after_denial`]: the approval table as pure functions — before a run, and
//!   after a likely sandbox denial.
//! - [`read_command`], [`Unreadable`], [`runs_arbitrary_code`]: a command as rules see it
//!   (basename, wrappers unwrapped with their own option grammar, git's global options skipped)
//!   or why its programs cannot be read, and the programs "always allow" never records.
//! - [`ShellEnvironmentPolicy`]: which environment variables a command sees, with
//!   default excludes by credential name ([`DEFAULT_EXCLUDES`]) and by value ([`value_rules`]).
//! - [`SECRET_FILES`]: the catalogue of credential files, histories, profiles and agent
//!   sockets a command may not read, each with its tool and why; [`DEFAULT_HIDDEN_PATHS`] is
//!   its paths.
//! - [`EnvSnapshot`]: the user view (HOME, TMPDIR, …, CORDON_HOME) that hidden paths and
//!   writable roots are computed from — cordon's own environment, never the command's.
//! - [`render_argv`], [`render_text`], [`abbreviate`]: commands and text as an approval prompt
//!   shows them, with every character a terminal would hide or obey escaped.
//! - [`DomainRules`], [`DomainMatcher`]: the network allow/deny list the proxy checks each
//!   destination against, and [`is_internal_address`] for the addresses a name may not resolve to;
//!   [`loopback_forwards`]: the host loopback ports such a list forwards into the command's
//!   network namespace.
//! - [`Preset`], [`plan_preset`]: package-manager presets — the registry hosts a client is
//!   configured for (from the user's own configuration, handed in as text) and its
//!   sandbox-only cache and variables.
//! - [`read_start_file`], [`read_kernel_file`]: reading a file a sandboxed command may have
//!   planted (no symlink, no FIFO, regular file, size cap).
//!
//! This crate does no I/O beyond what a caller hands it (canonicalisation takes the resolver as a
//! parameter, rules files arrive as text; the one exception, `read_start_file`, reads the path it
//! is given), starts no processes and contains no `unsafe`.
//!
//! Tests: unit tests beside each module (`*_tests.rs`); property tests that the parsers and
//! decisions never panic; in `tests/`, a differential test against real bash and a property test
//! that a script is never more permissive than its commands.
#![forbid(unsafe_code)]

mod allow_prefix;
mod approval;
mod command_interpreters;
mod decide;
mod display;
mod domains;
mod env_policy;
mod env_secrets;
mod evaluated_names;
mod git_config;
mod git_keys;
mod git_parse;
mod git_reading;
mod hidden_paths;
mod home_list;
mod home_reads;
mod judge;
mod limits;
mod loopback;
mod make_options;
mod normalize;
pub mod path_bytes;
mod paths;
mod permission_profile;
mod plain_words;
mod preset_configs;
mod presets;
mod reading;
mod rules;
mod safe_commands;
mod sandbox_policy;
mod sandbox_request;
mod script_reading;
mod script_words;
mod sealing;
mod secret_files;
mod shell_script;
mod start_files;
mod stream_editors;
mod test_builtin;
mod unmodelled_wrappers;
mod unreadable;
mod wrappers;
mod write_gate;

#[cfg(test)]
mod never_panics_tests;

pub use allow_prefix::always_allow_prefix;
pub use approval::{AskForApproval, Escalation, ParseApprovalError};
pub use decide::{
    AssessInput, Assessment, PreRunDecision, Requester, RetryDecision, RunSandbox, assess,
    retry_after_denial,
};
pub use display::{
    Abbreviated, DISPLAY_LIMIT, Rendered, abbreviate, render_argv, render_bytes, render_text,
};
pub use domains::{
    DomainDecision, DomainMatcher, DomainPattern, DomainPatternError, DomainRules, LOOPBACK_NAME,
    LoopbackTarget, is_internal_address, normalize_host, proxy_env,
};
pub use env_policy::{EnvInherit, FilteredEnv, RemovalReason, RemovedVar, ShellEnvironmentPolicy};
pub use env_secrets::{DEFAULT_EXCLUDE_EXCEPTIONS, DEFAULT_EXCLUDES, value_rules};
pub use git_config::{
    git_config_gained_code, git_config_gained_known_code, git_config_may_run_code,
    git_config_shaped, git_include_paths,
};
pub use git_keys::{GitKey, git_key, git_key_with_value};
pub use git_parse::{Entry as GitConfigEntry, git_config_entries};
pub use hidden_paths::{Relocations, expand_hidden_path};
pub use home_list::{
    HOME_CONTAINERS, HOME_READABLE, RELOCATED_CONTAINERS, Readable, home_entry_readable,
};
pub use home_reads::{
    ContainerView, HomeEntryKind, HomeFileSystem, HomeReads, HomeReadsInput, plan_home_reads,
    resolve_with_links,
};
pub use limits::{
    LimitError, LimitKey, Limits, ProcessLimit, TreeLimits, UnenforceableLimit, fallback_caveat,
};
pub use loopback::{
    MAX_LOOPBACK_FORWARDS, allow_domain_advice, loopback_advice, loopback_forwards,
};
pub use normalize::runs_arbitrary_code;
pub use paths::{
    DEFAULT_PROTECTED_PATHS, HOME_CODE_DIRS, HOME_START_UP_PATHS, expand_home, expand_path,
    home_start_up_paths, lexically_normal, session_bus_socket,
};
pub use permission_profile::{CODEX_PROTECTED_NAMES, ProfileError, policy_from_permission_profile};
pub use preset_configs::RegistryUrl;
pub use presets::{
    ClientConfigs, ConfigFile, Preset, PresetError, PresetPlan, Visibility, known_hidden_setting,
    plan_preset, preset_for_cache_path,
};
pub use reading::read_command;
pub use rules::{Rule, RuleDecision, RuleSet, RuleSource, RulesError, allow_rule_toml};
pub use safe_commands::{is_known_safe, known_safe_programs};
pub use sandbox_policy::{
    EnvSnapshot, PolicyEnv, PolicyError, ResolvedPolicy, SandboxMode, SandboxPolicy, WorkspaceWrite,
};
pub use sandbox_request::{
    HomeReading, MountViewRequirement, SandboxRequest, Strictness, WriteChoice,
};
pub use script_words::{is_shell_call, script_words};
pub use sealing::{EntryKind, HomeSeal, Listing};
pub use secret_files::{
    DEFAULT_HIDDEN_PATHS, Platform, RELOCATING_VARIABLES, SECRET_FILES, SecretFile, SecretKind,
    secret_file,
};
pub use shell_script::plain_shell_commands;
pub use start_files::{StartFileError, file_kind, read_kernel_file, read_start_file};
pub use unreadable::Unreadable;
pub use write_gate::{
    GitDirEntry, Held, LOADED_FROM_PARENTS, commondir_leads_back, config_change_held,
    exclude_change_held, git_dir_entry, gitfile_target, options_change_held, pointer_stays_inside,
    repository_config_change_held, todo_change_held, tool_loading, tool_loading_name,
};

//! cordon's Linux sandbox helper, the `codex-linux-sandbox` personality (DESIGN §5).
//!
//! The helper confines its own process and then `execvp`s the command, so the command runs
//! confined and nothing stays between. Order of work, all on the one thread of a process that
//! has started nothing else (Landlock and seccomp apply to the calling thread; a second thread
//! would stay unconfined):
//!
//! 1. parse the Codex-compatible flags and the policy ([`parse_helper_args`]);
//! 2. the mount view ([`mount_view`]): a private mount namespace, read-only everywhere except
//!    the writable roots, protected paths read-only, hidden paths covered; skipped (and
//!    reported) where the kernel refuses namespaces;
//! 3. Landlock ([`landlock_rules`]), negotiated down to the kernel's ABI;
//! 4. every capability dropped and the securebits locked ([`caps`]);
//! 5. `no_new_privs`, then the seccomp program ([`seccomp`]);
//! 6. the result is checked against what the policy needs ([`report::gaps`]): a required
//!    protection that is missing is exit 125 unless `--best-effort`;
//! 7. `execvp` in the command cwd with `CORDON_SANDBOX=linux`.
//!
//! Kernel compatibility: every mechanism is probed by using it; what took effect is reported
//! (`cordon doctor` predicts it with [`probe::probe`]). Tests: unit tests build the plans and
//! programs as values; the end-to-end suite in `tests/` runs the real binary on the running
//! kernel and checks effects from outside. Irreversible restrictions are only ever applied in
//! the helper process, never in a test runner.
//!
//! All `unsafe` lives in `sys.rs`.

mod args;
mod error;

#[cfg(target_os = "linux")]
mod caps;
#[cfg(target_os = "linux")]
pub mod landlock_rules;
#[cfg(target_os = "linux")]
pub mod mount_view;
#[cfg(target_os = "linux")]
pub mod probe;
pub mod report;
#[cfg(target_os = "linux")]
mod run;
#[cfg(target_os = "linux")]
pub mod seccomp;
#[cfg(target_os = "linux")]
mod sys;

pub use args::{
    HELPER_ARG0, HelperArgs, MountViewRequirement, ParentDeath, Strictness, helper_argv,
    is_helper_arg0, parse_helper_args,
};
pub use error::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_SETUP_FAILED, HelperError};

/// The helper's entry point (see the crate docs). Never returns.
#[cfg(target_os = "linux")]
pub use run::run_main;

/// On other systems the helper personality only explains itself.
#[cfg(not(target_os = "linux"))]
pub fn run_main() -> ! {
    eprintln!("{HELPER_ARG0}: {}", HelperError::UnsupportedPlatform);
    std::process::exit(EXIT_SETUP_FAILED)
}

//! cordon's macOS sandbox: a Seatbelt profile built as a value from a resolved policy, and the
//! `/usr/bin/sandbox-exec` command line that applies it (that absolute path, never a `PATH`
//! lookup).
//!
//! - [`seatbelt_profile`] turns a [`ResolvedPolicy`](cordon_policies::ResolvedPolicy) into a
//!   [`SeatbeltProfile`]: SBPL text (the [`BASE_PROFILE`] plus generated rules for writable roots,
//!   protected paths, network and hidden paths) and the parameters it names. Policy paths travel
//!   only as `-DNAME=PATH` parameters, never inside the text, so no path can alter the profile.
//! - [`with_real_paths`] is the one step that reads the file system: it adds symlink targets of
//!   hidden and protected paths and the git directories of `.git` pointer files, because
//!   Seatbelt matches resolved paths.
//! - [`sandbox_exec_argv`] / [`sandbox_exec_command`] build the command line
//!   (`sandbox-exec -p TEXT -D... -- CMD`) and environment ([`SANDBOX_ENV`]); the caller spawns.
//!   `sandbox-exec` applies the profile to itself and then execs the command, so the command and
//!   all its children run confined; there is no thread or process state to manage here.
//!
//! Seatbelt applies the last rule that matches an operation, so the profile is ordered: base
//! allows, writable roots (protected paths, and the directories leading to protected and hidden
//! paths, excluded inside the same rule with `require-not`), network, the hidden-path denies that
//! override everything before them, then the allowed UNIX sockets (`allow_unix_sockets`, which
//! override those denies for exactly their paths) and, with a domain allow-list, the one
//! loopback port of cordon's proxy ([`allow_proxy_port`]).
//!
//! Tests: everything here is pure or plain file system work and is unit-tested on every
//! platform: golden profiles, a structural check that the text is balanced S-expressions, that
//! parameters used and passed match one to one, and that no policy path (even one containing
//! `"`, `(`, `)`, `;` or a newline) reaches the text. `tests/` runs the real `sandbox-exec` on
//! macOS and checks the effects from outside (files on disk, exit codes, a listener).

#![forbid(unsafe_code)]

mod exec;
mod paths;
mod profile;

pub use exec::{SANDBOX_EXEC_PATH, sandbox_exec_argv, sandbox_exec_command};
pub use paths::{macos_real_path, with_real_paths};
pub use profile::{
    BASE_PROFILE, NETWORK_DISABLED_ENV, SANDBOX_ENV, SeatbeltProfile, allow_proxy_port,
    seatbelt_profile,
};

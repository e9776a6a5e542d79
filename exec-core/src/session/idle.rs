//! Is an interactive program back at its prompt? A call returns as soon as there is nothing
//! more to wait for, rather than at the yield deadline.
//!
//! Method: the PTY's foreground process group (`tcgetpgrp` on the master) is asked what its
//! leader is blocked in (`/proc/PID/syscall`). A shell at its prompt, a REPL, `cat` — anything
//! waiting for terminal input — sits in `read(0, …)` or in `select`/`pselect6`/`poll`/`ppoll`.
//! A running job is either a different foreground group (an interactive shell gives each job
//! its own) or the same process busy elsewhere (`wait4`, `clock_nanosleep`, running).
//! Combined with a short quiet period (no output and no input for [`QUIET`]) and nothing in
//! flight (no typed input the program has not read yet, no output the reader has not taken:
//! a shell the scheduler has not run since the input arrived still sits in `read`) this tells
//! "the command finished and the shell prints its prompt" from "still working".
//!
//! Limits: a program that polls the terminal while working (a progress UI waiting on stdin
//! with a timeout) looks idle during its quiet moments; a job started in the background (`&`)
//! does not keep the prompt from counting as idle; reading `/proc/PID/syscall` needs ptrace
//! access to the process (the executor's own descendants: allowed unless Yama forbids it,
//! in which case this check says "not idle" and the yield deadline applies).

use std::time::Duration;

/// How long output and input must have been quiet before an idle prompt ends a wait.
pub const QUIET: Duration = Duration::from_millis(10);

/// Whether the process group leader `pid` is blocked waiting for terminal input.
#[cfg(target_os = "linux")]
pub fn waiting_for_input(pid: i32) -> bool {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/syscall")) else { return false };
    let mut fields = text.split_whitespace();
    let Some(Ok(nr)) = fields.next().map(str::parse::<i64>) else { return false }; // "running"
    let first_arg =
        fields.next().and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
    if nr == libc::SYS_read {
        return first_arg == Some(0);
    }
    #[cfg(target_arch = "x86_64")]
    if nr == libc::SYS_select || nr == libc::SYS_poll {
        return true;
    }
    nr == libc::SYS_pselect6 || nr == libc::SYS_ppoll
}

/// Without `/proc/PID/syscall` (macOS) an idle prompt is not recognised: the yield deadline or
/// the process's exit ends the wait.
#[cfg(not(target_os = "linux"))]
pub fn waiting_for_input(_pid: i32) -> bool {
    false
}

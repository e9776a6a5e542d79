//! Everything the helper says, and the only place in this crate that writes to stdout or
//! stderr: one stderr line per failure or warning, the usage and version texts on stdout.
//! That is the helper's whole user interface; the rest of the crate returns values.
//!
//! Lines carry the name the helper answers to: `codex-linux-sandbox: …`, or `cordon: sandbox:
//! …` when cordon ran it (`--caller cordon`), so a user who typed `cordon` never reads the name
//! of a program they did not run. The caller is set once in `run_main` or `run_in_process`,
//! before any fork.
//!
//! Each message is formatted first and written with one `write`, so a line of the supervisor's
//! and one of the helper's never mix; a write that fails (a closed stderr, a reader gone) is
//! ignored: the helper never panics over a message.

use std::fmt::Display;
use std::io::Write;
use std::sync::OnceLock;

use crate::args::Caller;

static CALLER: OnceLock<Caller> = OnceLock::new();

pub(crate) fn set_caller(caller: Caller) {
    let _ = CALLER.set(caller);
}

/// What every message of this helper starts with, up to and including `": "`.
fn prefix() -> &'static str {
    CALLER.get().copied().unwrap_or_default().message_prefix()
}

/// The one line for a failure: `<prefix><what failed>: <why>`. What the message quotes (a
/// path, a policy's text, a parser's complaint about a caller's JSON) may hold anything; a
/// terminal gets it as text, on one line.
pub(crate) fn error(message: impl Display) {
    let text = cordon_policies::render_text(&message.to_string()).text;
    write_stderr(&format!("{}{text}\n", prefix()));
}

/// One line for what the helper goes on without: `<prefix>warning: <what>`, as text.
pub(crate) fn warning(message: impl Display) {
    let text = cordon_policies::render_text(&message.to_string()).text;
    write_stderr(&format!("{}warning: {text}\n", prefix()));
}

/// `--help`: the usage text on stdout.
pub(crate) fn usage() {
    write_stdout(crate::HELPER_USAGE);
}

/// `--version`: the helper's name and cordon's version on stdout.
pub(crate) fn version() {
    write_stdout(&format!("{} (cordon {})\n", crate::HELPER_ARG0, env!("CARGO_PKG_VERSION")));
}

fn write_stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

fn write_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

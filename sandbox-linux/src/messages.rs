//! The name the helper's messages carry: `codex-linux-sandbox: …`, or `cordon: sandbox: …` when
//! cordon ran it (`--caller cordon`), so a user who typed `cordon` never reads the name of a
//! program they did not run. Set once in `run_main`, before any fork or thread.

use std::sync::OnceLock;

use crate::args::Caller;

static CALLER: OnceLock<Caller> = OnceLock::new();

pub(crate) fn set_caller(caller: Caller) {
    let _ = CALLER.set(caller);
}

/// What every message of this helper starts with, up to and including `": "`.
pub(crate) fn prefix() -> &'static str {
    CALLER.get().copied().unwrap_or_default().message_prefix()
}

//! Writing to stdout where a reader that went away (`| head`) is not an error.

use std::io::Write as _;

pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// A command's exit status as cordon's own (out-of-range values become 1).
pub fn exit_code(status: i32) -> std::process::ExitCode {
    std::process::ExitCode::from(u8::try_from(status).unwrap_or(1))
}

/// The version of the JSON documents cordon prints (`exec --json`, `--dry-run --json`,
/// `sandbox --json`, `policy check`, `config show --json`): raised when a field changes meaning
/// or goes away (new fields do not raise it).
pub const JSON_SCHEMA_VERSION: u32 = 1;

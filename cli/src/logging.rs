//! The one `tracing` subscriber: the events cordon's libraries emit about their decisions (the
//! sandbox planned, how the helper starts, approvals, retries, sessions, the network proxy's
//! verdicts), as lines on stderr. stdout stays the command's or the protocol's.
//!
//! By default nothing is logged: no subscriber is installed, so an event costs one check of a
//! global level, and the output and the start-up time are what they are without logging. `-v`
//! shows cordon's debug events, `-vv` its trace events and the libraries' own (rmcp, hyper)
//! from info up. `RUST_LOG`, when set, is the filter instead (`RUST_LOG=cordon_exec_core=debug`,
//! `RUST_LOG=warn`, `RUST_LOG=trace`).
//!
//! Installed after the `argv[0]` dispatch: the Linux helper personality never gets here.

use tracing_subscriber::EnvFilter;

/// Installs the subscriber for `verbose` (the count of `-v`), unless `RUST_LOG` says otherwise.
pub fn init(verbose: u8) {
    let directives = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => directives,
        Ok(_) | Err(_) => match default_directives(verbose) {
            Some(directives) => directives.to_owned(),
            None => return,
        },
    };
    // A second subscriber cannot be installed; there is only this one.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(directives))
        .with_writer(std::io::stderr)
        .try_init();
}

/// The filter without `RUST_LOG`; `None`: no logging at all. `cordon` matches every cordon
/// crate (`cordon`, `cordon_exec_core`, …): targets match by prefix.
fn default_directives(verbose: u8) -> Option<&'static str> {
    match verbose {
        0 => None,
        1 => Some("cordon=debug"),
        _ => Some("info,cordon=trace"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_v_shows_more() {
        pretty_assertions::assert_eq!(
            [0, 1, 2, 3].map(default_directives),
            [None, Some("cordon=debug"), Some("info,cordon=trace"), Some("info,cordon=trace")]
        );
    }
}

//! ssh's own liveness check for the link: a connection that dies without a word (a laptop
//! suspended, a silent network partition) is noticed by ssh's keepalive messages
//! (`ServerAliveInterval`, `ServerAliveCountMax`), after which ssh exits and the link reports
//! the loss. cordon asks for them unless the user's `--ssh-option`s or ssh's own configuration
//! for that host (`ssh -G`) already say how often to check.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::RemoteTarget;

/// Seconds between keepalive messages when nothing else is sent.
const ALIVE_INTERVAL_SECS: u32 = 15;
/// Unanswered keepalive messages after which ssh gives up (so a dead link is noticed within
/// about 45 seconds).
const ALIVE_COUNT_MAX: u32 = 3;
/// ssh's default for `ServerAliveCountMax`, which `ssh -G` prints whether set or not.
const DEFAULT_COUNT_MAX: &str = "3";
/// How long `ssh -G` may take (it reads the configuration, it does not connect).
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The `-o` options cordon adds for `target`: the keepalive interval and count, each unless
/// already set. Waits for `ssh -G` until `deadline` at most (then adds both).
pub(super) async fn keepalive_options(
    target: &RemoteTarget,
    deadline: tokio::time::Instant,
) -> Vec<String> {
    let named = |key: &str| target.ssh_options.iter().any(|o| option_key(o) == key);
    let (user_interval, user_count) = (named("serveraliveinterval"), named("serveralivecountmax"));
    if user_interval && user_count {
        return Vec::new();
    }
    let limit = deadline.min(tokio::time::Instant::now() + PROBE_TIMEOUT);
    let configured = tokio::time::timeout_at(limit, configured(target)).await.unwrap_or_default();
    options(Configured {
        interval: user_interval || configured.interval,
        count: user_count || configured.count,
    })
}

/// Which of the two settings are already chosen.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Configured {
    interval: bool,
    count: bool,
}

fn options(configured: Configured) -> Vec<String> {
    // A configured interval is the user's choice of how (or whether) to check: left alone.
    if configured.interval {
        return Vec::new();
    }
    let mut options = vec![format!("ServerAliveInterval={ALIVE_INTERVAL_SECS}")];
    if !configured.count {
        options.push(format!("ServerAliveCountMax={ALIVE_COUNT_MAX}"));
    }
    options
}

/// The key of an `-o` option (`Key=value` or `Key value`), lower-case.
fn option_key(option: &str) -> String {
    let option = option.trim_start();
    let end = option.find(|c: char| c == '=' || c.is_whitespace()).unwrap_or(option.len());
    option[..end].to_ascii_lowercase()
}

/// What `ssh -G` says the configuration sets for this host: nothing when it cannot be run.
async fn configured(target: &RemoteTarget) -> Configured {
    let mut command = tokio::process::Command::new(&target.ssh_program);
    command.arg("-G");
    for option in &target.ssh_options {
        command.args(["-o", option]);
    }
    if let Some(port) = target.port {
        command.args(["-p", &port.to_string()]);
    }
    command
        .args(["--", &target.destination])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let Ok(mut child) = command.spawn() else { return Configured::default() };
    let mut output = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        // ssh's configuration dump is a few KiB; more is not one.
        let _ = stdout.take(PROBE_OUTPUT_BYTES).read_to_end(&mut output).await;
    }
    match child.wait().await {
        Ok(status) if status.success() => parse_config(&output),
        _ => Configured::default(),
    }
}

/// The most of `ssh -G`'s output read.
const PROBE_OUTPUT_BYTES: u64 = 1024 * 1024;

/// Reads `ssh -G` output (`key value` lines, keys in lower case): an interval other than 0
/// (off, the default) and a count other than the default were set by someone.
fn parse_config(output: &[u8]) -> Configured {
    let text = String::from_utf8_lossy(output);
    let value = |key: &str| {
        text.lines().find_map(|line| {
            let (k, v) = line.split_once(' ')?;
            (k == key).then(|| v.trim().to_owned())
        })
    };
    Configured {
        interval: value("serveraliveinterval").is_some_and(|v| v != "0"),
        count: value("serveralivecountmax").is_some_and(|v| v != DEFAULT_COUNT_MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn option_keys_are_read_in_both_spellings() {
        assert_eq!(option_key("ServerAliveInterval=5"), "serveraliveinterval");
        assert_eq!(option_key(" serverAliveCountMax 2"), "serveralivecountmax");
        assert_eq!(option_key("BatchMode"), "batchmode");
    }

    #[test]
    fn the_keepalive_is_added_unless_configured() {
        let defaults = b"user root\nserveraliveinterval 0\nserveralivecountmax 3\n";
        assert_eq!(parse_config(defaults), Configured::default());
        assert_eq!(
            options(parse_config(defaults)),
            ["ServerAliveInterval=15", "ServerAliveCountMax=3"]
        );
        let interval = b"serveraliveinterval 30\nserveralivecountmax 3\n";
        assert!(options(parse_config(interval)).is_empty());
        let count = b"serveraliveinterval 0\nserveralivecountmax 10\n";
        assert_eq!(options(parse_config(count)), ["ServerAliveInterval=15"]);
        assert_eq!(options(parse_config(b"")).len(), 2);
    }
}

//! The far end as an untrusted peer: a stand-in ssh (`tests/helpers/stand_in_ssh.py`, no
//! network) runs the real `cordon executor --serve-remote` on this machine, or misbehaves in
//! its place — never answers, freezes after the command started, floods a line without end,
//! sends a report with facts missing — and the local cordon must end on its own deadline with
//! one line, with bounded memory, and refuse what it cannot check.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::util::*;

/// A stand-in ssh in a scratch directory, with its own `CORDON_HOME`.
struct StandIn {
    dir: tempfile::TempDir,
    ssh: PathBuf,
}

impl StandIn {
    fn new() -> StandIn {
        let dir = scratch();
        let ssh = dir.path().join("ssh");
        let helper = helper_program("stand_in_ssh.py");
        std::fs::write(&ssh, format!("#!/bin/sh\nexec {} {} \"$@\"\n", python(), helper.display()))
            .unwrap();
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
        StandIn { dir, ssh }
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("ssh.log")
    }

    /// `cordon exec --host far --ssh-program <stand-in> <args>` with the stand-in in `mode`.
    fn command(&self, mode: &str, args: &[&str]) -> Command {
        let mut command = Command::new(CORDON);
        command
            .args(["exec", "--host", "far", "--ssh-program"])
            .arg(&self.ssh)
            .args(["--remote-cordon", CORDON])
            .args(args)
            .env("CORDON_HOME", self.dir.path().join("cordon-home"))
            // The account's own home (the far end's work directory is /var/tmp, which must not
            // hold the home directory: the suite may run with HOME under /var/tmp).
            .env("HOME", account_home())
            .env("STAND_IN_SSH_MODE", mode)
            .env("STAND_IN_SSH_LOG", self.log())
            .stdin(Stdio::null());
        command
    }

    /// Runs `command`, killing its process group if it is still running after `limit`: the
    /// result and how long it took.
    fn run(mut command: Command, limit: Duration) -> (Run, Duration) {
        let started = Instant::now();
        let child =
            command.process_group(0).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        let killer = std::thread::spawn(move || {
            let deadline = Instant::now() + limit;
            while Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
                // The group is gone once its leader was reaped and its members exited.
                if nix::sys::signal::killpg(group, None).is_err() {
                    return;
                }
            }
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        });
        let output = child.wait_with_output().unwrap();
        let took = started.elapsed();
        // What the stand-in left holding (mute, frozen) goes with the group.
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        killer.join().unwrap();
        (output.into(), took)
    }

    /// The stand-in's arguments, one list per time it was run.
    fn runs(&self) -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }
}

#[test]
fn a_far_end_that_never_answers_is_an_error_within_the_hello_deadline() {
    let stand_in = StandIn::new();
    // A run timeout shorter than the hello deadline shortens it.
    let command = stand_in.command("mute", &["--timeout", "2s", "-C", "/var/tmp", "--", "true"]);
    let (run, took) = StandIn::run(command, scaled(Duration::from_secs(60)));
    assert_eq!(run.code, Some(125), "{took:?}: {}", run.stderr);
    assert!(took < scaled(Duration::from_secs(8)), "{took:?}");
    assert!(run.stderr.contains("no executor answered over ssh within 2"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    // Without one, the far end has 10 seconds.
    let (run, took) = StandIn::run(
        stand_in.command("mute", &["-C", "/var/tmp", "--", "true"]),
        scaled(Duration::from_secs(60)),
    );
    assert_eq!(run.code, Some(125), "{took:?}: {}", run.stderr);
    assert!(took >= Duration::from_secs(9) && took < scaled(Duration::from_secs(20)), "{took:?}");
    assert!(run.stderr.contains("within 10"), "{}", run.stderr);
}

#[test]
fn a_link_that_freezes_after_the_start_times_out_at_the_timeout_and_ends_the_command() {
    require_sandbox!(1);
    let stand_in = StandIn::new();
    let marker = format!("{}.4", 41_000 + std::process::id() % 10_000);
    let command =
        stand_in.command("freeze", &["--timeout", "3s", "-C", "/var/tmp", "--", "sleep", &marker]);
    let (run, took) = StandIn::run(command, scaled(Duration::from_secs(60)));
    assert_eq!(run.code, Some(124), "{took:?}: {}{}", run.stdout, run.stderr);
    assert!(took < scaled(Duration::from_secs(12)), "{took:?}");
    // The far end lost its connection with the stand-in: nothing of it is left.
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    while processes_matching(&format!("^sleep {marker}$")) > 0 {
        assert!(Instant::now() < deadline, "the remote command outlived the timeout");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_far_end_that_floods_a_line_without_end_is_cut_off_with_bounded_memory() {
    let stand_in = StandIn::new();
    // The peak resident size of cordon (and the stand-in, which writes in 1 MiB pieces).
    let mut measured = Command::new(python());
    measured.args([
        "-c",
        "import resource, subprocess, sys\n\
         p = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, capture_output=True)\n\
         sys.stderr.buffer.write(p.stderr)\n\
         print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
    ]);
    let inner =
        stand_in.command("flood", &["-s", "danger-full-access", "-C", "/var/tmp", "--", "true"]);
    measured.arg(inner.get_program()).args(inner.get_args());
    for (key, value) in inner.get_envs() {
        measured.env(key, value.unwrap());
    }
    let (run, took) = StandIn::run(measured, scaled(Duration::from_secs(120)));
    let figures: Vec<i64> =
        run.stdout.split_whitespace().map(|n| n.parse().unwrap()).collect::<Vec<_>>();
    assert_eq!(figures.len(), 2, "{took:?}: {}{}", run.stdout, run.stderr);
    assert_eq!(figures[0], 125, "{}", run.stderr);
    let max_rss_kib = figures[1];
    assert!(max_rss_kib < 64 * 1024, "cordon grew to {max_rss_kib} KiB: {}", run.stderr);
    assert!(run.stderr.contains("longer than the protocol's"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn a_command_killed_by_a_signal_there_stays_a_signal_here_and_is_not_retried() {
    require_sandbox!(1);
    let stand_in = StandIn::new();
    let work = scratch();
    let command = stand_in.command(
        "pass",
        &[
            "--json",
            "-a",
            "on-failure",
            "-C",
            work.path().to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo cannot create /etc/x: Permission denied; kill -KILL $$",
        ],
    );
    let (run, _) = StandIn::run(command, scaled(Duration::from_secs(60)));
    assert_eq!(run.code, Some(137), "{}{}", run.stdout, run.stderr);
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    let attempts = document["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{document}");
    assert_eq!(attempts[0]["verdict"], "signal", "{document}");
    assert_eq!(attempts[0]["exit"], serde_json::json!({"kind": "signal", "value": 9}));
    assert_eq!(document["approvals"], serde_json::json!([]), "{document}");
}

#[test]
fn a_far_end_report_without_its_facts_refuses_sandboxed_runs_with_the_reason() {
    let stand_in = StandIn::new();
    let work = scratch();
    let marker = work.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let cd = work.path().to_str().unwrap();
    for flags in [&[][..], &["--best-effort"][..]] {
        let mut args = flags.to_vec();
        args.extend_from_slice(&["-C", cd, "--", "sh", "-c", &touch]);
        let (run, _) =
            StandIn::run(stand_in.command("no-doctor", &args), scaled(Duration::from_secs(60)));
        assert_eq!(run.code, Some(125), "{flags:?}: {}", run.stderr);
        assert!(run.stderr.contains("cannot be read (doctor"), "{}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(!marker.exists(), "{flags:?}: the command ran");
    }
    // Without a sandbox to check there is nothing to refuse.
    let args = ["-s", "danger-full-access", "-C", cd, "--", "sh", "-c", &touch];
    let (run, _) =
        StandIn::run(stand_in.command("no-doctor", &args), scaled(Duration::from_secs(60)));
    run.assert_ok();
    assert!(marker.exists());
}

#[test]
fn ssh_is_asked_for_keepalives_unless_the_user_or_the_ssh_config_chose() {
    let keepalive = |stand_in: &StandIn, extra: &[&str], config: Option<&str>| -> Vec<String> {
        let mut args = extra.to_vec();
        args.extend_from_slice(&["-s", "danger-full-access", "-C", "/var/tmp", "--", "true"]);
        let mut command = stand_in.command("pass", &args);
        if let Some(config) = config {
            command.env("STAND_IN_SSH_G", config);
        }
        let (run, _) = StandIn::run(command, scaled(Duration::from_secs(60)));
        run.assert_ok();
        let runs = stand_in.runs();
        std::fs::remove_file(stand_in.log()).unwrap();
        let link = runs.iter().find(|argv| !argv.contains(&"-G".to_owned())).unwrap();
        link.iter().filter(|a| a.starts_with("ServerAlive")).cloned().collect()
    };
    let stand_in = StandIn::new();
    assert_eq!(
        keepalive(&stand_in, &[], None),
        ["ServerAliveInterval=15", "ServerAliveCountMax=3"]
    );
    assert_eq!(
        keepalive(&stand_in, &["--ssh-option", "ServerAliveInterval=5"], None),
        ["ServerAliveInterval=5"]
    );
    let configured = "serveraliveinterval 30\nserveralivecountmax 3\n";
    assert!(keepalive(&stand_in, &[], Some(configured)).is_empty());
    assert!(Path::new(&stand_in.ssh).exists());
}

#[test]
fn a_far_end_that_chatters_lines_that_answer_nothing_is_cut_off() {
    let stand_in = StandIn::new();
    let args = ["-s", "danger-full-access", "-C", "/var/tmp", "--", "sleep", "5"];
    let (run, took) =
        StandIn::run(stand_in.command("chatter", &args), scaled(Duration::from_secs(60)));
    assert_eq!(run.code, Some(125), "{took:?}: {}", run.stderr);
    assert!(took < scaled(Duration::from_secs(10)), "{took:?}");
    assert!(run.stderr.contains("lines that answer nothing"), "{}", run.stderr);
    // A line or so per stray line, up to the limit, and the one that says why: not a million.
    assert!(run.stderr.lines().count() < 120, "{} lines", run.stderr.lines().count());
}

#[test]
fn a_request_longer_than_the_protocol_allows_is_refused_here_not_left_unanswered() {
    let stand_in = StandIn::new();
    // 1.5 MB of arguments (within this system's limit for a command line) that JSON writes as
    // 9 MB: each control byte is a six-byte escape.
    let piece = "\u{1}".repeat(100_000);
    let mut args = vec!["-s", "danger-full-access", "-C", "/var/tmp", "--", "printf", "x"];
    args.extend(std::iter::repeat_n(piece.as_str(), 15));
    let (run, took) =
        StandIn::run(stand_in.command("pass", &args), scaled(Duration::from_secs(60)));
    assert_eq!(run.code, Some(125), "{took:?}: {}", run.stderr);
    assert!(run.stderr.contains("more than the protocol's line limit"), "{}", run.stderr);
    assert!(took < scaled(Duration::from_secs(15)), "{took:?}");
}

/// Without a run timeout too, every answer is due: a far end that answered hello and then
/// nothing more (the connection still up, so ssh's keepalive is satisfied) is an error after
/// the poll's wait and the grace period, not a wait for ever.
#[test]
fn a_far_end_that_goes_deaf_after_hello_is_an_error_without_a_timeout() {
    let stand_in = StandIn::new();
    let args = ["-s", "danger-full-access", "-C", "/var/tmp", "--", "true"];
    let (run, took) =
        StandIn::run(stand_in.command("deaf", &args), scaled(Duration::from_secs(120)));
    assert_eq!(run.code, Some(125), "{took:?}: {}", run.stderr);
    assert!(run.stderr.contains("did not answer within 31 s"), "{}", run.stderr);
    assert!(took < scaled(Duration::from_secs(60)), "{took:?}");
}

/// This account's home directory from the password database.
fn account_home() -> std::path::PathBuf {
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map_or_else(|| std::path::PathBuf::from("/"), |user| user.dir)
}

//! What cordon reads before the command exists never blocks it, and an interrupt ends a run at
//! every stage: a `.git` planted as a FIFO, a link to `/dev/zero` or a directory of FIFOs costs
//! one warning line, and a start stalled on a filesystem that never answers ends on SIGTERM.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::util::{self, Run, User};

/// `cordon exec -s workspace-write -- sh -c script` in `ws`, with HOME, TMPDIR and CORDON_HOME
/// of the scratch directory `base` (none of them under `/tmp`).
fn exec_in(base: &Path, ws: &Path, script: &str) -> Command {
    let mut cmd = util::cordon_command(
        User::Root,
        &["exec", "-s", "workspace-write", "--", "sh", "-c", script],
    );
    cmd.current_dir(ws)
        // HOME as a writable root would be refused: a missing one stands for the real home.
        .env("HOME", base.join("no-home"))
        .env("TMPDIR", base)
        .env("CORDON_HOME", base.join("cordon-home"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Waits for `child` for at most `limit`; kills it (and fails) past that.
#[track_caller]
fn finish_within(mut child: Child, limit: Duration) -> Run {
    let deadline = Instant::now() + util::scaled(limit);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("still running after {limit:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap().into()
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
}

/// Runs cordon in a workspace whose `.git` was planted by `plant`: one warning line that names
/// it, and the command runs.
fn planted_dot_git_costs_one_line(plant: impl Fn(&Path), planted: &str) {
    util::require_sandbox!(1);
    util::skip_unless!(util::features().mount_view, "needs the mount view");
    let base = util::scratch();
    let ws = base.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    plant(&ws);
    let child = exec_in(base.path(), &ws, "echo ran").spawn().unwrap();
    // Generous: a read that blocked would never end, and `/dev/zero` read to the end would
    // take minutes and gigabytes.
    let run = finish_within(child, Duration::from_secs(20));
    run.assert_ok();
    assert_eq!(run.stdout, "ran\n", "{}", run.stderr);
    let warnings: Vec<&str> = run.stderr.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(warnings[0].contains(planted), "{}", warnings[0]);
    assert!(warnings[0].contains("read-only in the sandbox"), "{}", warnings[0]);
}

#[test]
fn a_dot_git_fifo_is_one_warning_and_the_run_goes_on_with_it_read_only() {
    planted_dot_git_costs_one_line(|ws| mkfifo(&ws.join(".git")), "is a FIFO");
}

#[test]
fn a_dot_git_link_to_dev_zero_is_one_warning_and_the_run_goes_on() {
    planted_dot_git_costs_one_line(
        |ws| std::os::unix::fs::symlink("/dev/zero", ws.join(".git")).unwrap(),
        "is a symbolic link to a device",
    );
}

#[test]
fn a_dot_git_directory_of_fifos_is_one_warning_and_the_run_goes_on_with_them_read_only() {
    planted_dot_git_costs_one_line(
        |ws| {
            std::fs::create_dir(ws.join(".git")).unwrap();
            for name in ["HEAD", "config", "commondir"] {
                mkfifo(&ws.join(".git").join(name));
            }
        },
        ".git/commondir\" is a FIFO",
    );
}

#[test]
fn a_sandboxed_command_cannot_replace_a_planted_dot_git_fifo() {
    util::require_sandbox!(1);
    util::skip_unless!(util::features().mount_view, "needs the mount view");
    let base = util::scratch();
    let ws = base.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    mkfifo(&ws.join(".git"));
    let script = "rm -f .git || echo refused; echo 'gitdir: evil' > .git.new; \
                  mv .git.new .git || echo refused; mkdir d; mv d/../.git d/ || echo refused";
    let run =
        finish_within(exec_in(base.path(), &ws, script).spawn().unwrap(), Duration::from_secs(20));
    assert_eq!(run.stdout, "refused\nrefused\nrefused\n", "{}", run.stderr);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(ws.join(".git")).unwrap().file_type().is_fifo());
}

/// A FUSE filesystem mounted by this test that never answers: every lookup in it waits, in a
/// wait only SIGKILL (or a fatal signal's default action) ends. Unmounted and its connection
/// aborted (the descriptor closed) when dropped, so nothing stays stuck on it.
struct SilentFilesystem {
    mount_point: PathBuf,
    _device: std::fs::File,
}

impl SilentFilesystem {
    fn mount(mount_point: &Path) -> Result<SilentFilesystem, String> {
        use std::os::fd::AsRawFd;
        let device = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/fuse")
            .map_err(|e| format!("cannot open /dev/fuse: {e}"))?;
        let options = format!("fd={},rootmode=40000,user_id=0,group_id=0", device.as_raw_fd());
        nix::mount::mount(
            Some("cordon-test-silent"),
            mount_point,
            Some("fuse"),
            nix::mount::MsFlags::empty(),
            Some(options.as_str()),
        )
        .map_err(|e| format!("cannot mount a FUSE filesystem: {e}"))?;
        Ok(SilentFilesystem { mount_point: mount_point.to_path_buf(), _device: device })
    }
}

impl Drop for SilentFilesystem {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.mount_point, nix::mount::MntFlags::MNT_DETACH);
    }
}

/// Whether a process whose command line is `pattern` (a `pgrep -f` regex) is still there.
fn left_running(pattern: &str) -> usize {
    let deadline = Instant::now() + util::scaled(Duration::from_secs(2));
    loop {
        let found = util::processes_matching(pattern);
        if found == 0 || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigterm_ends_a_start_stalled_before_the_command_exists_and_leaves_nothing_running() {
    util::require_sandbox!(1);
    util::skip_unless!(util::features().mount_view, "needs the mount view");
    util::skip_unless!(util::is_root(), "mounting a FUSE filesystem needs root");
    let base = util::scratch();
    let ws = base.path().join("ws");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let silent = SilentFilesystem::mount(&ws.join(".git"));
    util::skip_unless!(silent.is_ok(), "{}", silent.err().unwrap_or_default());
    let marker = format!("stalled-start-{}", std::process::id());
    let child = exec_in(base.path(), &ws, &format!("echo {marker}")).spawn().unwrap();
    // The helper looks at `.git` before anything else of the workspace: give it time to get
    // there and stall (the test passes either way; this only makes it test the stall).
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let run = finish_within(child, Duration::from_secs(10));
    eprintln!("SIGTERM to exit: {:?}", sent.elapsed());
    // Ended by the signal: cordon's exit code for it, or (stalled in its own look at the
    // workspace's git dirs, before it has handlers) the signal's default action.
    assert!(
        run.code == Some(128 + libc::SIGTERM) || run.signal == Some(libc::SIGTERM),
        "{:?} {:?}: {}",
        run.code,
        run.signal,
        run.stderr
    );
    assert!(!run.stdout.contains(&marker), "the command ran: {}", run.stdout);
    drop(silent);
    assert_eq!(left_running(&format!("cordon exec .*{marker}")), 0);
}

#[test]
fn sighup_inherited_as_ignored_stays_ignored_and_reaches_the_command_ignored() {
    util::require_sandbox!(1);
    let base = util::scratch();
    let ws = base.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    // The command reports its ignored set, then outlives a SIGHUP sent to cordon meanwhile.
    let script = "grep SigIgn /proc/self/status; sleep 1; echo survived";
    let template = exec_in(base.path(), &ws, script);
    // `nohup`'s way: the shell ignores SIGHUP and execs cordon, which inherits it ignored.
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("trap '' HUP; exec \"$0\" \"$@\"")
        .arg(template.get_program())
        .args(template.get_args())
        .current_dir(&ws)
        .envs(template.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGHUP,
    )
    .unwrap();
    let run = finish_within(child, Duration::from_secs(20));
    run.assert_ok();
    let ignored = run.stdout.lines().next().and_then(|l| l.split_whitespace().nth(1)).unwrap();
    let mask = u64::from_str_radix(ignored, 16).unwrap();
    assert_ne!(mask & (1 << (libc::SIGHUP - 1)), 0, "{}", run.stdout);
    assert!(run.stdout.ends_with("survived\n"), "{}", run.stdout);
}

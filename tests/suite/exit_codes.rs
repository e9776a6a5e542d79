//! Exit codes (`docs/exit-codes.md`): 127 not found, 126 not executable, 125 set-up failures with
//! one stderr line, the command's own status otherwise; never a panic.

use std::os::unix::fs::PermissionsExt;

use super::util::*;

#[cfg(target_os = "linux")]
#[test]
fn missing_and_non_executable_commands_exit_127_and_126() {
    require_sandbox!(1);
    let dir = scratch();
    let policy = only_root_policy(dir.path(), false);
    let run = helper(&policy, dir.path(), &["cordon-no-such-command"]);
    assert_eq!(run.code, Some(127), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("codex-linux-sandbox: "), "{}", run.stderr);
    let file = dir.path().join("not-exec");
    std::fs::write(&file, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = helper(&policy, dir.path(), &[file.to_str().unwrap()]);
    assert_eq!(run.code, Some(126), "{}", run.stderr);
}

#[test]
fn malformed_invocations_exit_125_with_one_line() {
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--sandbox-policy-cwd", d, "--sandbox-policy", "{not json", "--", "true"],
        vec![
            "--sandbox-policy-cwd",
            d,
            "--sandbox-policy",
            r#"{"type":"read-only","bogus":1}"#,
            "--",
            "true",
        ],
        vec!["--sandbox-policy-cwd", d, "--sandbox-policy", r#"{"type":"read-only"}"#, "true"],
        vec![
            "--sandbox-policy-cwd",
            "relative/dir",
            "--sandbox-policy",
            r#"{"type":"read-only"}"#,
            "--",
            "true",
        ],
        vec![
            "--sandbox-policy-cwd",
            d,
            "--sandbox-policy",
            r#"{"type":"read-only"}"#,
            "--command-cwd",
            "rel",
            "--",
            "true",
        ],
        vec!["--sandbox-policy-cwd", d, "--sandbox-policy", r#"{"type":"read-only"}"#, "--"],
        vec![],
        // What the caller wrote comes back as text on one line, escapes and all.
        vec![
            "--sandbox-policy-cwd",
            d,
            "--sandbox-policy",
            r#"{"type":"read-only"}"#,
            "--command-cwd",
            "rel\u{1b}[2J\nsecond line",
            "--",
            "true",
        ],
        vec![
            "--request",
            "{\"policy\":{\"type\":\"read-only\"},\"policy_cwd\":\"/\",\"strictness\":\"\u{9b}31m\\nx\"}",
            "--",
            "true",
        ],
        vec![
            "--best-effort=false",
            "--sandbox-policy-cwd",
            d,
            "--sandbox-policy",
            r#"{"type":"read-only"}"#,
            "--",
            "true",
        ],
    ];
    for args in cases {
        let out = std::process::Command::new(CORDON).arg0_helper().args(&args).output().unwrap();
        let run = Run::from(out);
        assert_eq!(run.code, Some(125), "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("codex-linux-sandbox: "), "{}", run.stderr);
        assert!(!run.stderr.contains(['\u{1b}', '\u{9b}']), "{args:?}: {:?}", run.stderr);
    }
}

/// The same through `cordon exec` on every platform: a typo is 127 and a file without the
/// execute bit 126, never "the sandbox could not be set up" (125) — on macOS `sandbox-exec`
/// itself reports both as its exit 71.
#[test]
fn cordon_exec_of_a_missing_or_non_executable_command_exits_127_or_126() {
    require_sandbox!(1);
    let (home, dir) = (scratch(), scratch());
    let file = dir.path().join("not-exec");
    std::fs::write(&file, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    for (command, code) in [("cordon-no-such-command", 127), ("./not-exec", 126)] {
        let run = Run::from(
            std::process::Command::new(CORDON)
                .args(["exec", "-a", "never", "-s", "workspace-write", "--", command])
                .current_dir(dir.path())
                .env("CORDON_HOME", home.path())
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap(),
        );
        assert_eq!(run.code, Some(code), "{command}: {}", run.stderr);
        assert!(!run.stderr.contains("could not be set up"), "{command}: {}", run.stderr);
    }
}

trait Arg0Helper {
    fn arg0_helper(&mut self) -> &mut Self;
}

impl Arg0Helper for std::process::Command {
    fn arg0_helper(&mut self) -> &mut Self {
        std::os::unix::process::CommandExt::arg0(self, "codex-linux-sandbox")
    }
}

#[test]
fn exit_status_and_signals_pass_through_cordon_sandbox() {
    require_sandbox!(1);
    let dir = scratch();
    assert_eq!(sandbox_sh(User::Root, &[], dir.path(), "exit 42").code, Some(42));
    let run = sandbox_sh(User::Root, &[], dir.path(), "kill -KILL $$");
    assert_eq!(run.signal, Some(libc::SIGKILL));
}

#[cfg(target_os = "linux")]
#[test]
fn without_landlock_the_helper_fails_closed_and_best_effort_says_what_is_missing() {
    require_sandbox!(1);
    let dir = scratch();
    let policy = only_root_policy(dir.path(), false);
    let target = dir.path().join("ran");
    let script = format!("touch {}", target.display());
    let argv = |extra: &[&'static str]| {
        let mut v = vec![
            os("codex-linux-sandbox"),
            os("--sandbox-policy-cwd"),
            dir.path().as_os_str(),
            os("--sandbox-policy"),
            os(&policy),
        ];
        v.extend(extra.iter().map(|s| os(s)));
        v.extend([os("--"), os("sh"), os("-c"), os(&script)]);
        v.into_iter().map(|s| s.to_owned()).collect::<Vec<_>>()
    };
    let no_landlock = [(libc::SYS_landlock_create_ruleset, libc::ENOSYS)];
    let args = argv(&[]);
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_os_str()).collect();
    let run = Run::from(
        under_filter(&no_landlock, std::path::Path::new(CORDON), &refs).output().unwrap(),
    );
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("Landlock"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(!target.exists(), "the command ran without a sandbox");

    let args = argv(&["--best-effort"]);
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_os_str()).collect();
    let run = Run::from(
        under_filter(&no_landlock, std::path::Path::new(CORDON), &refs).output().unwrap(),
    );
    run.assert_ok();
    assert!(
        run.stderr.contains("not enforced") && run.stderr.contains("Landlock"),
        "{}",
        run.stderr
    );
    assert!(target.exists());
}

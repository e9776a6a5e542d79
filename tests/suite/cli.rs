//! The front-end CLI: argv[0] dispatch, `doctor`, the other platform's `sandbox`, usage errors.

#[cfg(target_os = "linux")]
use std::process::Command;

use super::util::*;

#[cfg(target_os = "linux")]
#[test]
fn a_symlink_named_codex_linux_sandbox_is_the_helper() {
    require_sandbox!(1);
    let dir = scratch();
    let link = dir.path().join("codex-linux-sandbox");
    std::os::unix::fs::symlink(CORDON, &link).unwrap();
    let out = Command::new(&link)
        .args([
            "--sandbox-policy-cwd",
            dir.path().to_str().unwrap(),
            "--sandbox-policy",
            r#"{"type":"read-only"}"#,
            "--",
            "sh",
            "-c",
            "echo $CORDON_SANDBOX $CORDON_SANDBOX_NETWORK_DISABLED",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "linux 1\n");
}

/// Newer Codex passes its split policies next to the legacy one: the helper enforces the legacy
/// policy (checked from outside: the write inside lands, the one outside does not), and refuses
/// Codex's managed-proxy flags by name with exit 125.
#[cfg(target_os = "linux")]
#[test]
fn the_helper_runs_a_newer_codex_invocation_and_refuses_managed_proxy_flags() {
    require_sandbox!(1);
    let dir = scratch();
    let outside = scratch();
    let link = dir.path().join("codex-linux-sandbox");
    std::os::unix::fs::symlink(CORDON, &link).unwrap();
    let d = dir.path().to_str().unwrap();
    let target = outside.path().join("escaped");
    let script = format!("echo in > inside; echo out > {}", target.display());
    let file_system = r#"{"kind":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]}"#;
    let codex = |extra: &[&str]| {
        Command::new(&link)
            .args(["--sandbox-policy-cwd", d, "--command-cwd", d])
            .args(["--sandbox-policy", r#"{"type":"workspace-write"}"#])
            .args(["--file-system-sandbox-policy", file_system])
            .args(["--network-sandbox-policy", "\"restricted\"", "--use-legacy-landlock"])
            .args(extra)
            .args(["--", "sh", "-c", &script])
            .current_dir(d)
            .output()
            .unwrap()
    };
    let out = codex(&[]);
    assert_eq!(std::fs::read_to_string(dir.path().join("inside")).unwrap(), "in\n");
    assert!(!target.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_file(dir.path().join("inside")).unwrap();
    let out = codex(&["--allow-network-for-proxy"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("managed-proxy"));
    assert!(!dir.path().join("inside").exists());
}

#[cfg(target_os = "linux")]
#[test]
fn doctor_reports_the_kernel_and_every_mode() {
    let run = cordon(&["doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    // 1 when this kernel cannot enforce the default policy (no Landlock, say).
    let code = if v["default_policy_enforceable"] == true { 0 } else { 1 };
    assert_eq!(run.code, Some(code), "{}", run.stderr);
    for key in [
        "landlock_abi",
        "seccomp_filter",
        "unprivileged_user_namespaces",
        "legacy_tiocsti",
        "mount_view",
    ] {
        assert!(v["kernel"].get(key).is_some(), "{key}");
    }
    for mode in ["read-only", "workspace-write", "danger-full-access"] {
        assert!(v["modes"].get(mode).is_some(), "{mode}");
    }
    assert!(v["seccomp_deny_list"]["network_off"].as_array().unwrap().len() > 30);
    let text = cordon(&["doctor"]);
    assert_eq!(text.code, Some(code), "{}", text.stderr);
    assert!(text.stdout.contains("landlock ABI"));
}

/// `doctor` advises `safe.bareRepository=explicit` until the user's git config has it.
#[cfg(target_os = "linux")]
#[test]
fn doctor_advises_git_to_ignore_implicit_bare_repositories_until_it_does() {
    let home = scratch();
    // Run from a workspace whose own git config is a FIFO: doctor reads no repository's config.
    let work = scratch();
    std::fs::create_dir_all(work.path().join(".git")).unwrap();
    nix::unistd::mkfifo(&work.path().join(".git/config"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let doctor = || -> serde_json::Value {
        let out = std::process::Command::new(CORDON)
            .args(["doctor", "--json"])
            .current_dir(work.path())
            .env("HOME", home.path())
            .env("CORDON_HOME", home.path().join(".cordon"))
            .env_remove("GIT_CONFIG_GLOBAL")
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let before = doctor();
    assert!(before["advice"].to_string().contains("safe.bareRepository explicit"), "{before}");
    // Set in a file the global config includes.
    let included = home.path().join("git-extra");
    std::fs::write(&included, "[safe]\n\tbareRepository = explicit\n").unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        format!("[include]\n\tpath = {}\n", included.display()),
    )
    .unwrap();
    assert_eq!(doctor()["advice"], serde_json::json!([]));
}

#[cfg(target_os = "macos")]
#[test]
fn doctor_names_seatbelt_and_every_mode() {
    let run = cordon(&["doctor", "--json"]);
    run.assert_ok();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["platform"], "macos");
    assert!(v["sandbox"].as_str().unwrap().contains("/usr/bin/sandbox-exec"), "{v}");
    let modes = v["modes"].as_array().unwrap();
    for mode in ["read-only", "workspace-write", "danger-full-access"] {
        assert!(modes.iter().any(|m| m == mode), "{mode}");
    }
    let text = cordon(&["doctor"]);
    text.assert_ok();
    assert!(text.stdout.contains("Seatbelt"), "{}", text.stdout);
}

/// Each platform's `cordon sandbox` refuses the other's with one line and 125.
#[test]
fn the_other_platforms_sandbox_exits_125_with_one_line() {
    let (other, says) = if cfg!(target_os = "macos") {
        ("linux", "runs only on Linux")
    } else {
        ("macos", "only on macOS")
    };
    let run = cordon(&["sandbox", other, "--", "true"]);
    assert_eq!(run.code, Some(125));
    assert_eq!(run.stderr.lines().count(), 1);
    assert!(run.stderr.contains(says), "{}", run.stderr);
}

#[test]
fn bad_cli_input_is_one_clear_error_not_a_panic() {
    let run = cordon(&["sandbox", PLATFORM, "-s", "read-only", "--network", "--", "true"]);
    assert_eq!(run.code, Some(125));
    assert!(run.stderr.contains("--network"), "{}", run.stderr);
    let run = cordon(&["sandbox", PLATFORM, "--", "true"]);
    assert!(run.code == Some(0) || run.code == Some(125), "{:?}", run.code);
    // Usage errors are clap's whole message (what, the possible values, "did you mean",
    // usage) and exit 2; nothing runs.
    for (bad, says) in [
        (&["no-such-subcommand"][..], "unrecognized subcommand"),
        (&["exce", "--", "true"], "'exec'"),
        (&["exec", "--timeout", "soon", "--", "true"], "e.g. 10s"),
        (&["exec", "--timout", "5", "--", "true"], "similar argument exists: '--timeout'"),
        (&["sandbox", PLATFORM, "-s", "open", "--", "true"], "possible values: read-only"),
        (&["exec", "-a", "sometimes", "--", "true"], "on-failure"),
        (&["exec"], "required arguments were not provided"),
    ] {
        let run = cordon(bad);
        assert_eq!(run.code, Some(2), "{bad:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
        assert!(run.stderr.contains(says), "{bad:?}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    // `--` before the command is optional (the run itself needs the sandbox).
    if features().sandbox_at(1) {
        let run = cordon(&["exec", "-a", "never", "ls", "-d", "/"]);
        assert_eq!(run.stdout, "/\n", "{}", run.stderr);
    }
}

/// `-v` logs cordon's decisions on stderr and leaves stdout to the command; without it stderr
/// stays as it was; `RUST_LOG`, when set, is the filter instead of the flag.
#[test]
fn verbose_logs_decisions_on_stderr_and_rust_log_wins() {
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let run = |verbose: &[&str], rust_log: Option<&str>| -> Run {
        let mut args = verbose.to_vec();
        args.extend(["exec", "-s", "danger-full-access", "-a", "never", "-C", d, "--"]);
        args.extend(["echo", "hi"]);
        let mut cmd = cordon_command(User::Root, &args);
        match rust_log {
            Some(filter) => cmd.env("RUST_LOG", filter),
            None => cmd.env_remove("RUST_LOG"),
        };
        cmd.output().unwrap().into()
    };
    let quiet = run(&[], None);
    quiet.assert_ok();
    pretty_assertions::assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("hi\n", ""));

    let verbose = run(&["-v"], None);
    verbose.assert_ok();
    assert_eq!(verbose.stdout, "hi\n");
    for event in ["assessed", "launch planned", "attempt finished"] {
        assert!(verbose.stderr.contains(event), "{event}: {}", verbose.stderr);
    }
    assert!(verbose.stderr.lines().all(|l| l.contains(" cordon")), "{}", verbose.stderr);

    let filtered = run(&["-v"], Some("off"));
    filtered.assert_ok();
    pretty_assertions::assert_eq!(
        (filtered.stdout.as_str(), filtered.stderr.as_str()),
        ("hi\n", "")
    );
    let chosen = run(&[], Some("cordon_exec_core::runner=debug"));
    assert!(chosen.stderr.contains("launch planned"), "{}", chosen.stderr);
    assert!(!chosen.stderr.contains("assessed"), "{}", chosen.stderr);
}

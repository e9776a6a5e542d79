//! The front-end CLI: argv[0] dispatch, `doctor`, `sandbox macos` on Linux.

use std::process::Command;

use super::util::*;

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

#[test]
fn doctor_reports_the_kernel_and_every_mode() {
    let run = cordon(&["doctor", "--json"]);
    run.assert_ok();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
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
    text.assert_ok();
    assert!(text.stdout.contains("landlock ABI"));
}

#[test]
fn sandbox_macos_on_linux_exits_125_with_one_line() {
    let run = cordon(&["sandbox", "macos", "--", "true"]);
    assert_eq!(run.code, Some(125));
    assert_eq!(run.stderr.lines().count(), 1);
    assert!(run.stderr.contains("only on macOS"), "{}", run.stderr);
}

#[test]
fn bad_cli_input_is_one_clear_error_not_a_panic() {
    let run = cordon(&["sandbox", "linux", "-s", "read-only", "--network", "--", "true"]);
    assert_eq!(run.code, Some(125));
    assert!(run.stderr.contains("--network"), "{}", run.stderr);
    let run = cordon(&["sandbox", "linux", "--", "true"]);
    assert!(run.code == Some(0) || run.code == Some(125), "{:?}", run.code);
    for bad in [
        &["no-such-subcommand"][..],
        &["exec", "ls"],
        &["exec", "--timeout", "soon", "--", "true"],
        &["sandbox", "linux", "-s", "open", "--", "true"],
    ] {
        let run = cordon(bad);
        assert_eq!(run.code, Some(125), "{bad:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{bad:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("cordon: "), "{}", run.stderr);
    }
}

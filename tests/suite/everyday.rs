//! What a new user meets day to day: a denial that names its cause and advice that works, a
//! look at the sandbox before running (`--dry-run`, `config show`), `cordon sandbox` staying
//! the command's parent only when it must, and a broken config said first.

use std::path::Path;

use super::exec::{env, exec};
use super::util::*;

/// `cordon ARGS` in `cwd` with `home` as CORDON_HOME and no terminal.
fn cordon_in(home: &Path, cwd: &Path, args: &[&str]) -> Run {
    without_terminal(CORDON)
        .args(args)
        .current_dir(cwd)
        .env("CORDON_HOME", home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
        .into()
}

/// The `cordon: blocked …` lines of a run.
fn blocked_lines(run: &Run) -> Vec<&str> {
    run.stderr.lines().filter(|l| l.starts_with("cordon: blocked")).collect()
}

#[test]
fn a_denial_names_the_path_the_command_wrote_never_the_program_that_said_so() {
    require_sandbox!(1);
    let e = env();
    let target = e.outside.path().join("out.txt");
    let script = format!("echo x > {}", target.display());
    let run = exec(e.home.path(), e.work.path(), &["-a", "never", "--", "/bin/sh", "-c", &script]);
    assert_ne!(run.code, Some(0));
    assert!(!target.exists());
    let lines = blocked_lines(&run);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains(&target.display().to_string()), "{}", run.stderr);
    assert!(!lines[0].contains("/bin"), "the program was blamed: {}", run.stderr);
    let json = exec(
        e.home.path(),
        e.work.path(),
        &["-a", "never", "--json", "--", "/bin/sh", "-c", &script],
    );
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let blocked = &v["attempts"][0]["blocked"];
    assert_eq!(blocked[0]["path"], target.display().to_string(), "{blocked}");
}

#[test]
fn a_bare_file_name_in_read_only_mode_gets_advice_that_read_only_accepts() {
    require_sandbox!(1);
    let e = env();
    let run = exec(
        e.home.path(),
        e.work.path(),
        &["-a", "never", "-s", "read-only", "--", "touch", "out.txt"],
    );
    assert_ne!(run.code, Some(0));
    assert!(!e.work.path().join("out.txt").exists());
    let lines = blocked_lines(&run);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains("out.txt"), "{}", run.stderr);
    assert!(lines[0].contains("-s workspace-write"), "{}", run.stderr);
    assert!(!run.stderr.contains("--add-dir"), "read-only refuses --add-dir: {}", run.stderr);
}

#[test]
fn a_write_after_a_cd_inside_the_script_is_reported_as_unlocated_not_as_a_plain_failure() {
    require_sandbox!(1);
    let e = env();
    let script = format!("cd {} && touch rel.txt", e.outside.path().display());
    let run =
        exec(e.home.path(), e.work.path(), &["-a", "never", "--json", "--", "sh", "-c", &script]);
    assert!(!e.outside.path().join("rel.txt").exists());
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["result"]["verdict"], "likely_sandbox_denied", "{}", run.stdout);
    assert_eq!(v["attempts"][0]["blocked"][0]["kind"], "unlocated", "{}", run.stdout);
}

#[test]
fn a_protected_git_config_says_protected_and_names_it() {
    require_sandbox!(1);
    let e = env();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(e.work.path())
        .status()
        .unwrap();
    assert!(git.success());
    let config = e.work.path().join(".git/config");
    let before = std::fs::read(&config).unwrap();
    let run = exec(
        e.home.path(),
        e.work.path(),
        &["-a", "never", "--writes", "direct", "--", "git", "config", "user.name", "X"],
    );
    assert_ne!(run.code, Some(0));
    assert_eq!(std::fs::read(&config).unwrap(), before, "the protected config changed");
    let lines = blocked_lines(&run);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains("protected"), "{}", run.stderr);
    assert!(lines[0].contains(".git/config"), "{}", run.stderr);
}

#[test]
fn a_prompt_rule_without_a_terminal_advises_only_what_can_work() {
    require_sandbox!(1);
    let e = env();
    std::fs::write(
        e.home.path().join("rules.toml"),
        "[[rule]]\nprefix = [\"touch\"]\ndecision = \"prompt\"\n",
    )
    .unwrap();
    let run = exec(e.home.path(), e.work.path(), &["-a", "on-request", "--", "touch", "f"]);
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(!e.work.path().join("f").exists());
    assert!(run.stderr.contains("prompt rule"), "{}", run.stderr);
    for useless in ["-a never (sandboxed", "--yolo", "an allow rule"] {
        assert!(!run.stderr.contains(useless), "advises {useless:?}: {}", run.stderr);
    }
}

#[test]
fn a_missing_add_dir_is_one_warning_line() {
    require_sandbox!(1);
    let e = env();
    let missing = e.outside.path().join("nope");
    let missing = missing.to_str().unwrap();
    let run =
        exec(e.home.path(), e.work.path(), &["-a", "never", "--add-dir", missing, "--", "true"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let warnings: Vec<&str> = run.stderr.lines().filter(|l| l.contains(missing)).collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(warnings[0].starts_with("cordon: warning: --add-dir"), "{}", run.stderr);
    assert!(warnings[0].contains("does not exist"), "{}", run.stderr);
}

#[test]
fn dry_run_shows_the_decision_and_the_sandbox_and_runs_and_creates_nothing() {
    let e = env();
    let home = e.home.path().join("fresh-cordon-home");
    let marker = e.work.path().join("made");
    let script = format!("touch {}", marker.display());
    let run = cordon_in(
        &home,
        e.work.path(),
        &[
            "exec",
            "--dry-run",
            "--allow-domain",
            "pypi.org",
            "--preset",
            "npm",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!marker.exists(), "the command ran");
    assert!(!home.exists(), "a dry run created CORDON_HOME (or a preset's cache in it)");
    assert!(run.stdout.contains("registry.npmjs.org"), "{}", run.stdout);
    for expected in [
        "decision:",
        "writable:",
        "network:      only pypi.org, registry.npmjs.org",
        "protected:",
        "hidden:",
        "environment:",
    ] {
        assert!(run.stdout.contains(expected), "no {expected:?}: {}", run.stdout);
    }
    let work = std::fs::canonicalize(e.work.path()).unwrap();
    assert!(run.stdout.contains(&work.display().to_string()), "{}", run.stdout);

    let json = cordon_in(
        &home,
        e.work.path(),
        &["exec", "--dry-run", "--json", "-a", "untrusted", "--", "ls"],
    );
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["dry_run"], true);
    // A known-safe command under untrusted runs read-only with no network.
    assert_eq!(v["sandbox"]["mode"], "read-only", "{}", json.stdout);
    assert_eq!(v["sandbox"]["network"], "off");
    assert_eq!(v["sandbox"]["writable_roots"], serde_json::json!([]));
    let sandbox = cordon_in(
        &home,
        e.work.path(),
        &["sandbox", "linux", "--dry-run", "--", "sh", "-c", &script],
    );
    assert_eq!(sandbox.code, Some(0), "{}", sandbox.stderr);
    assert!(sandbox.stdout.contains("read-only"), "{}", sandbox.stdout);
    assert!(!marker.exists(), "cordon sandbox --dry-run ran the command");
}

#[test]
fn config_show_names_the_file_and_where_each_setting_came_from() {
    let e = env();
    std::fs::write(e.home.path().join("config.toml"), "approval_policy = \"never\"\n").unwrap();
    let run = cordon_in(
        e.home.path(),
        e.work.path(),
        &["config", "show", "--json", "-c", "sandbox_mode=read-only"],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let source = |key: &str| -> String {
        let settings = v["settings"].as_array().unwrap();
        let found = settings.iter().find(|s| s["key"] == key).unwrap_or_else(|| panic!("{key}"));
        found["source"].as_str().unwrap().to_owned()
    };
    assert_eq!(source("approval_policy"), "file");
    assert_eq!(source("sandbox_mode"), "-c");
    assert_eq!(source("shell_environment_policy.inherit"), "default");
    assert_eq!(source("home_allow_list"), "default");
    assert_eq!(v["config_file"], e.home.path().join("config.toml").display().to_string());
    let text = cordon_in(e.home.path(), e.work.path(), &["config", "show"]);
    assert!(text.stdout.contains("approval_policy"), "{}", text.stdout);
    assert!(text.stdout.contains("# file"), "{}", text.stdout);
}

#[test]
fn doctor_says_first_that_the_config_is_broken_and_exits_non_zero() {
    let e = env();
    std::fs::write(e.home.path().join("config.toml"), "\nnetwork = 5\n").unwrap();
    let run = cordon_in(e.home.path(), e.work.path(), &["doctor"]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    let first = run.stdout.lines().next().unwrap_or_default();
    assert!(first.starts_with("CONFIG BROKEN:"), "{}", run.stdout);
    assert!(first.contains("line 2"), "{first}");
    assert!(first.contains(r#"network must be "off", "on" or a table"#), "{first}");
    let exec = cordon_in(e.home.path(), e.work.path(), &["exec", "--", "true"]);
    assert_eq!(exec.code, Some(125));
    assert!(!exec.stderr.contains("untagged"), "{}", exec.stderr);
}

#[test]
fn sandbox_stays_the_parent_only_for_a_timeout_or_json_and_yolo_json_is_honest() {
    require_sandbox!(1);
    let e = env();
    let start = std::time::Instant::now();
    let run = cordon_in(
        e.home.path(),
        e.work.path(),
        &["sandbox", "linux", "--timeout", "1s", "--", "sleep", "30"],
    );
    assert_eq!(run.code, Some(124), "{}", run.stderr);
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
    let json = cordon_in(
        e.home.path(),
        e.work.path(),
        &["sandbox", "linux", "--json", "--", "sh", "-c", "echo hi; exit 3"],
    );
    assert_eq!(json.code, Some(3), "{}", json.stderr);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["stdout"]["text"], "hi\n");
    assert_eq!(v["sandboxed"], true);
    assert_eq!(v["schema_version"], 1);
    // -c works without staying: the config override takes effect.
    let file = e.work.path().join("f");
    let write = cordon_in(
        e.home.path(),
        e.work.path(),
        &[
            "sandbox",
            "linux",
            "-c",
            "sandbox_mode=workspace-write",
            "--",
            "sh",
            "-c",
            "echo ok > f",
        ],
    );
    assert_eq!(write.code, Some(0), "{}", write.stderr);
    assert!(file.exists());
    let yolo = exec(e.home.path(), e.work.path(), &["--yolo", "--json", "--", "true"]);
    let v: serde_json::Value = serde_json::from_str(&yolo.stdout).unwrap();
    assert_eq!(v["sandboxed"], false, "{}", yolo.stdout);
    assert_eq!(v["schema_version"], 1);
}

#[test]
fn an_ignored_sighup_reaches_the_command_ignored_on_every_path() {
    require_sandbox!(1);
    let e = env();
    // `nohup`'s way: SIGHUP ignored, then cordon exec'd.
    let ignored = |args: &[&str]| -> bool {
        let out = std::process::Command::new("env")
            .arg("--ignore-signal=HUP")
            .arg(CORDON)
            .args(args)
            .args(["--", "grep", "^SigIgn", "/proc/self/status"])
            .current_dir(e.work.path())
            .env("CORDON_HOME", e.home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mask = text.split_whitespace().nth(1).unwrap_or_else(|| panic!("{args:?}: {text}"));
        let mask = u64::from_str_radix(mask, 16).unwrap();
        mask & (1 << (libc::SIGHUP - 1)) != 0
    };
    for args in [
        &["exec", "-a", "never"][..],
        &["exec", "--yolo"],
        &["exec", "-s", "read-only"],
        &["sandbox", "linux"],
        &["sandbox", "linux", "--timeout", "20s"],
    ] {
        assert!(ignored(args), "{args:?}: SIGHUP not ignored in the command");
    }
}

/// A workspace inside the home directory (the usual place for one) keeps `/tmp` writable at its
/// top, where compilers, linkers and test suites make their files, whatever the hidden paths
/// name inside `/tmp` (sockets, ticket caches), as root and as uid 65534.
#[test]
fn a_workspace_in_the_home_directory_can_still_create_files_in_tmp() {
    require_sandbox!(1);
    for who in USERS {
        let dir = scratch();
        let home = dir.path().join("home");
        let ws = home.join("project");
        std::fs::create_dir_all(&ws).unwrap();
        if who == User::Nobody {
            for path in [dir.path(), home.as_path(), ws.as_path()] {
                nix::unistd::chown(path, Some(65534.into()), Some(65534.into())).unwrap();
            }
        }
        let name = format!("/tmp/cordon-everyday-{}-{who:?}", std::process::id());
        let _ = std::fs::remove_file(&name);
        let run = |script: &str| -> Run {
            command_as(who, cordon_for(who))
                .args(["exec", "-a", "never", "--", "sh", "-c", script])
                .current_dir(&ws)
                .env("HOME", &home)
                .env_remove("CORDON_HOME")
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap()
                .into()
        };
        let out = run(&format!("echo made > {name} && cat {name}"));
        out.assert_ok();
        assert_eq!(out.stdout, "made\n", "{who:?}");
        // The workspace's next run finds it there (its /tmp is the workspace's own where write
        // layers are made, the host's otherwise).
        let out = run(&format!("cat {name}"));
        out.assert_ok();
        assert_eq!(out.stdout, "made\n", "{who:?}");
        let _ = std::fs::remove_file(&name);
    }
}

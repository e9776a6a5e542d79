//! Writes: inside the writable roots only; /dev/null; rename/link/truncate/symlink tricks.

use std::path::Path;

use super::util::*;

#[test]
fn write_inside_writable_root_succeeds_and_outside_fails() {
    require_sandbox!(1);
    let root = scratch();
    let outside = scratch();
    let target = outside.path().join("escaped");
    let script = format!("echo inside > inside.txt; echo out > {}", target.display());
    for user in USERS {
        if user == User::Nobody {
            chown_nobody(root.path());
        }
        let run = sandbox_sh(user, &["--full-auto"], root.path(), &script);
        assert_eq!(
            std::fs::read_to_string(root.path().join("inside.txt")).unwrap(),
            "inside\n",
            "{user:?}"
        );
        assert!(!target.exists(), "{user:?} wrote outside the roots");
        assert_ne!(run.code, Some(0), "{user:?}: the failed write must fail the script");
        std::fs::remove_file(root.path().join("inside.txt")).unwrap();
    }
}

#[test]
fn dev_null_is_writable_and_read_only_mode_writes_nothing_else() {
    require_sandbox!(1);
    let dir = scratch();
    let tmp_target = format!("/tmp/cordon-ro-{}", std::process::id());
    let script = format!(
        "echo a > /dev/null && echo ok-devnull; echo b > here.txt; echo c > {tmp_target}; mkdir d; true"
    );
    let run = sandbox_sh(User::Root, &["-s", "read-only"], dir.path(), &script);
    run.assert_ok();
    assert!(run.stdout.contains("ok-devnull"), "{}", run.stderr);
    assert!(!dir.path().join("here.txt").exists());
    assert!(!dir.path().join("d").exists());
    assert!(!Path::new(&tmp_target).exists());
}

#[test]
fn rename_and_hard_link_across_the_root_boundary_fail_both_ways() {
    // ABI 1 refuses every cross-directory rename and link; ABI 2 allows them only inside roots.
    require_sandbox!(1);
    let root = scratch();
    let outside = scratch();
    std::fs::write(root.path().join("in.txt"), "in").unwrap();
    std::fs::write(outside.path().join("out.txt"), "out").unwrap();
    let o = outside.path().display();
    // rename(2) and link(2) themselves, not mv(1), which falls back to copy + unlink.
    let code = format!(
        "{PY_LIBC}for f in (lambda: os.rename('in.txt', '{o}/moved-out'), lambda: os.link('in.txt', '{o}/linked-out'),\n          lambda: os.rename('{o}/out.txt', 'moved-in'), lambda: os.link('{o}/out.txt', 'linked-in')):\n    try:\n        f(); print('done')\n    except OSError as e:\n        print('refused', e.errno)"
    );
    let run = python_in(&only_root_policy(root.path(), false), root.path(), &code);
    run.assert_ok();
    assert_eq!(run.stdout.matches("refused").count(), 4, "{}", run.stdout);
    assert!(root.path().join("in.txt").exists());
    assert!(outside.path().join("out.txt").exists());
    for name in ["moved-out", "linked-out"] {
        assert!(!outside.path().join(name).exists(), "{name} exists");
    }
    for name in ["moved-in", "linked-in"] {
        assert!(!root.path().join(name).exists(), "{name} exists");
    }
}

#[test]
fn truncate_outside_the_roots_fails_and_keeps_the_content() {
    require_sandbox!(1);
    let root = scratch();
    let outside = scratch();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let v = victim.display();
    for mount_view in [&[][..], &["--no-mount-view"][..]] {
        let run = helper_cmd(
            &only_root_policy(root.path(), false),
            root.path(),
            mount_view,
            &["sh", "-c", &format!("truncate -s 0 {v}; (: > {v}); true")],
        )
        .output()
        .unwrap();
        // Without the mount view, truncate needs Landlock ABI 3: older kernels refuse to run.
        let refuses = !mount_view.is_empty() && features().landlock_abi < 3;
        assert_eq!(run.status.code(), Some(if refuses { 125 } else { 0 }), "{mount_view:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious", "{mount_view:?}");
    }
}

#[test]
fn a_symlink_inside_the_root_pointing_outside_lets_no_write_through() {
    require_sandbox!(1);
    let root = scratch();
    let outside = scratch();
    let target = outside.path().join("target");
    std::fs::write(&target, "original").unwrap();
    std::os::unix::fs::symlink(&target, root.path().join("link")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("dirlink")).unwrap();
    let run = helper(
        &only_root_policy(root.path(), false),
        root.path(),
        &["sh", "-c", "echo evil > link; echo evil >> link; echo new > dirlink/new; true"],
    );
    run.assert_ok();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original");
    assert!(!outside.path().join("new").exists());
}

#[test]
fn tmp_is_a_writable_root_unless_excluded() {
    require_sandbox!(1);
    let root = scratch();
    let name = format!("/tmp/cordon-tmp-root-{}", std::process::id());
    // Writing directly, /tmp is the host's.
    let direct = ["--full-auto", "--writes", "direct"];
    let run = sandbox_sh(User::Root, &direct, root.path(), &format!("echo t > {name}"));
    run.assert_ok();
    assert!(Path::new(&name).exists());
    std::fs::remove_file(&name).unwrap();
    // In a transaction (the default where a write layer can be made: here, with its state on a
    // file system that can keep a layer) it is the workspace's own.
    if write_layer_missing().is_none() {
        let state = scratch();
        let dir = root.path().to_str().unwrap();
        let script = format!("echo t > {name}");
        let args = ["sandbox", PLATFORM, "--full-auto", "--writes", "transaction", "-C", dir];
        let run: Run = cordon_command(User::Root, &args)
            .args(["--", "sh", "-c", &script])
            .env("CORDON_HOME", state.path().join("cordon"))
            .output()
            .unwrap()
            .into();
        run.assert_ok();
        assert!(!Path::new(&name).exists(), "a transaction wrote the host's /tmp");
    }
    let run = helper(
        &only_root_policy(root.path(), false),
        root.path(),
        &["sh", "-c", &format!("echo t > {name}")],
    );
    assert_ne!(run.code, Some(0));
    assert!(!Path::new(&name).exists());
}

#[test]
fn stdout_and_stderr_redirected_outside_the_roots_can_be_reopened_by_name() {
    require_sandbox!(1);
    let root = scratch();
    let outside = scratch();
    let log = outside.path().join("log");
    // Appending, like a shell's `>>`: both descriptions of the file write at its end.
    let log_file = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
    let script = format!(
        "echo via-name >> /dev/stdout && echo ok; echo x > {}/sibling; true",
        outside.path().display()
    );
    let out = sandbox_command(&["--full-auto"], root.path(), &["sh", "-c", &script])
        .stdout(log_file)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "via-name\nok\n");
    // Only that very file: its neighbours stay out of reach.
    assert!(!outside.path().join("sibling").exists());
}

#[test]
fn a_read_only_stdout_grants_no_write_to_its_file() {
    require_sandbox!(1);
    let root = scratch();
    let outside = scratch();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "original").unwrap();
    // stdout opened read-only on a file outside the roots: reopening it for writing by name
    // must stay refused.
    let argv = ["sh", "-c", "echo evil > /dev/stdout; true"];
    let out = sandbox_command(&["--full-auto"], root.path(), &argv)
        .stdout(std::fs::File::open(&victim).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original");
}

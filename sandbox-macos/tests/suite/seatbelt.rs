//! Generated profiles under the real `sandbox-exec`: what a command can and cannot do.

use std::fs;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::Path;

use super::util::{Scratch, policy, q, sh, skip_unless_seatbelt};

#[cfg_attr(target_os = "macos", test)]
fn the_command_runs_and_sees_the_sandbox_in_its_environment() {
    skip_unless_seatbelt!();
    let out =
        sh(&policy(&[], false, &[], &[]), "echo $CORDON_SANDBOX $CORDON_SANDBOX_NETWORK_DISABLED");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "seatbelt 1\n");
}

#[cfg_attr(target_os = "macos", test)]
fn writes_inside_a_root_succeed_and_outside_are_denied() {
    skip_unless_seatbelt!();
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    let outside = scratch.dir("outside");
    // `root` is spelled `/var/folders/...`: the profile must still match `/private/var/...`.
    let out = sh(
        &policy(&[&root], false, &[], &[]),
        &format!(
            "echo devnull > /dev/null; echo in > {}; echo out > {}",
            q(&root.join("f")),
            q(&outside.join("f"))
        ),
    );
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(fs::read_to_string(root.join("f")).unwrap(), "in\n");
    assert!(!outside.join("f").exists());
}

#[cfg_attr(target_os = "macos", test)]
fn read_only_allows_no_writes_but_dev_null() {
    skip_unless_seatbelt!();
    let scratch = Scratch::new();
    let out = sh(
        &policy(&[], false, &[], &[]),
        &format!("echo x > /dev/null && echo x > {}", q(&scratch.path.join("f"))),
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(!scratch.path.join("f").exists());
}

#[cfg_attr(target_os = "macos", test)]
fn protected_paths_inside_a_root_stay_read_only() {
    skip_unless_seatbelt!();
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    scratch.dir("root/.git/hooks");
    let out = sh(
        &policy(&[&root], false, &[".git/hooks", ".vscode"], &[]),
        &format!(
            "echo ok > {index}; echo evil > {hook}; mkdir {vscode}; mv {hooks} {moved}",
            index = q(&root.join(".git/index")),
            hook = q(&root.join(".git/hooks/pre-commit")),
            vscode = q(&root.join(".vscode")),
            hooks = q(&root.join(".git/hooks")),
            moved = q(&root.join("hooks-moved")),
        ),
    );
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(fs::read_to_string(root.join(".git/index")).unwrap(), "ok\n");
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(!root.join(".vscode").exists());
    assert!(root.join(".git/hooks").is_dir());
}

#[cfg_attr(target_os = "macos", test)]
fn renaming_the_parent_of_a_protected_path_is_denied() {
    skip_unless_seatbelt!();
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    scratch.dir("root/.git/hooks");
    // Moving `.git` away, editing its hooks under the new name and moving it back must fail.
    let out = sh(
        &policy(&[&root], false, &[".git/hooks"], &[]),
        &format!(
            "mv {git} {g} && echo evil > {g}/hooks/pre-commit && mv {g} {git}",
            git = q(&root.join(".git")),
            g = q(&root.join("g")),
        ),
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(root.join(".git/hooks").is_dir());
    assert!(!root.join("g").exists());
}

#[cfg_attr(target_os = "macos", test)]
fn hidden_paths_cannot_be_read_even_inside_a_root() {
    skip_unless_seatbelt!();
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    let secrets = scratch.dir("root/config/secrets");
    fs::write(secrets.join("key"), "SECRET").unwrap();
    let out = sh(
        &policy(&[&root], false, &[], &[&secrets]),
        &format!(
            "cat {key}; mv {config} {renamed}; cat {renamed}/secrets/key; echo new > {new}",
            key = q(&secrets.join("key")),
            config = q(&root.join("config")),
            renamed = q(&root.join("renamed")),
            new = q(&secrets.join("new"))
        ),
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("SECRET"));
    assert!(secrets.join("key").exists());
    assert!(!secrets.join("new").exists());
}

#[cfg_attr(target_os = "macos", test)]
fn hard_links_to_files_outside_the_roots_are_denied() {
    skip_unless_seatbelt!();
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    let outside = scratch.dir("outside");
    fs::write(outside.join("rc"), "original").unwrap();
    fs::write(root.join("a"), "a").unwrap();
    let out = sh(
        &policy(&[&root], false, &[], &[]),
        &format!(
            "ln {a} {b} && ln {rc} {link}",
            a = q(&root.join("a")),
            b = q(&root.join("b")),
            rc = q(&outside.join("rc")),
            link = q(&root.join("rc")),
        ),
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(root.join("b").exists(), "a link inside the root works");
    assert!(!root.join("rc").exists());
}

#[cfg_attr(target_os = "macos", test)]
fn roots_with_quotes_parentheses_and_newlines_in_their_names_work() {
    skip_unless_seatbelt!();
    let scratch = Scratch::new();
    let root = scratch.dir("a\"b)(c;d\ne (allow default)");
    let outside = scratch.dir("outside");
    let out = sh(
        &policy(&[&root], false, &[], &[]),
        &format!("echo in > {}; echo out > {}", q(&root.join("f")), q(&outside.join("f"))),
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(root.join("f").exists());
    assert!(!outside.join("f").exists());
}

/// Connects to a local listener with `nc`; returns whether the command succeeded and whether
/// the listener received a connection.
fn connect_to_listener(network_access: bool) -> (bool, bool) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = sh(
        &policy(&[], network_access, &[], &[]),
        &format!("/usr/bin/nc -n -z -w 3 127.0.0.1 {port}"),
    );
    let received = match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    };
    (out.status.success(), received)
}

#[cfg_attr(target_os = "macos", test)]
fn network_off_refuses_tcp_and_the_listener_receives_nothing() {
    skip_unless_seatbelt!();
    assert_eq!(connect_to_listener(false), (false, false));
}

#[cfg_attr(target_os = "macos", test)]
fn network_on_reaches_a_local_listener() {
    skip_unless_seatbelt!();
    assert_eq!(connect_to_listener(true), (true, true));
}

#[cfg_attr(target_os = "macos", test)]
fn every_default_hidden_path_compiles_into_a_working_profile() {
    skip_unless_seatbelt!();
    let hidden: Vec<std::path::PathBuf> = cordon_policies::DEFAULT_HIDDEN_PATHS
        .iter()
        .filter_map(|p| cordon_policies::expand_home(p, Some(Path::new("/Users/nobody"))))
        .collect();
    let hidden: Vec<&Path> = hidden.iter().map(|p| p.as_path()).collect();
    let protected = cordon_policies::DEFAULT_PROTECTED_PATHS;
    let scratch = Scratch::new();
    for network in [false, true] {
        let out = sh(&policy(&[&scratch.path], network, protected, &hidden), "/usr/bin/true");
        assert!(out.status.success(), "network {network}: {out:?}");
    }
}

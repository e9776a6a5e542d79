//! What one workspace's sandboxed runs put in a preset's cache never reaches another
//! workspace's runs, and nothing a command makes of its cache stops cordon's upkeep of it:
//! checked from outside (the other workspace's build output run without cordon, the exit
//! code of the next run, the files on disk), as root and as uid 65534.

use std::path::Path;
use std::process::{Command, Stdio};

use super::presets::{Throwaway, installed, run, user};
use super::util::*;

macro_rules! require_preset_sandbox {
    () => {
        require_sandbox!(1);
        skip_unless!(
            features().path_rules(),
            "the preset's domain allow-list needs the mount view's namespaces"
        );
    };
}

/// Skips, with the reason, when a client the test drives is not installed (a VM of the kernel
/// matrix has no cargo): a missing tool, not a sandbox gap, so never fatal.
macro_rules! skip_without_tool {
    ($cond:expr, $($reason:tt)*) => {
        if !$cond {
            eprintln!("SKIPPED (tool missing, not a sandbox gap): {}", format!($($reason)*));
            return;
        }
    };
}

/// A second workspace of the same user, beside the first.
fn second_workspace(u: &Throwaway) -> std::path::PathBuf {
    let other = u.ws.with_file_name("other");
    std::fs::create_dir_all(&other).unwrap();
    other
}

/// Each workspace's cache is its own: what a run in one plants in every preset's cache is not
/// in the next workspace's, whose variables point elsewhere; the same workspace's next run
/// does see it (the control: the cache is kept, only not shared).
#[test]
fn a_preset_cache_written_in_one_workspace_is_never_read_in_another() {
    require_preset_sandbox!();
    let u = user();
    let other = second_workspace(&u);
    let plant = "for v in \"$npm_config_cache\" \"$PIP_CACHE_DIR\" \"$CARGO_HOME\"; do \
                 mkdir -p \"$v/registry/src/x/evil-1.0.0\" && echo planted > \
                 \"$v/registry/src/x/evil-1.0.0/.cargo-ok\"; done; echo \"$CARGO_HOME\"";
    let presets = ["--preset", "npm", "--preset", "pip", "--preset", "cargo"];
    let first = run(u.cordon(&presets).args(["--", "sh", "-c", plant]));
    first.assert_ok();
    let look = "for v in \"$npm_config_cache\" \"$PIP_CACHE_DIR\" \"$CARGO_HOME\"; do \
                cat \"$v/registry/src/x/evil-1.0.0/.cargo-ok\" 2>/dev/null; done; \
                echo \"home=$CARGO_HOME\"";
    let mut elsewhere = u.cordon_exec_in(&other, &["-a", "never"]);
    elsewhere.args(presets).args(["--", "sh", "-c", look]);
    let second = run(elsewhere);
    second.assert_ok();
    assert!(!second.stdout.contains("planted"), "{}", second.stdout);
    assert!(!second.stdout.contains(first.stdout.trim()), "the same CARGO_HOME: {}", second.stdout);
    let again = run(u.cordon(&presets).args(["--", "sh", "-c", look]));
    assert_eq!(again.stdout.matches("planted").count(), 3, "{}", again.stdout);
}

/// The attack end to end with the real client: a project fetches a git dependency through
/// `--preset cargo` and rewrites the checked-out source in its cache; another project that
/// depends on the same repository builds with `--preset cargo`, and its binary, run without
/// cordon, is the honest one. The poisoning project's own build (the control) compiles the
/// rewritten source, as cargo trusts a checkout it made once.
#[test]
fn a_rewritten_git_checkout_in_one_workspace_never_reaches_another_workspaces_build() {
    require_preset_sandbox!();
    skip_without_tool!(installed("cargo"), "needs cargo");
    skip_without_tool!(installed("git"), "needs git");
    let u = user();
    let dep = u.ws.with_file_name("dep");
    std::fs::create_dir_all(dep.join("src")).unwrap();
    std::fs::write(
        dep.join("Cargo.toml"),
        "[package]\nname = \"dep\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(dep.join("src/lib.rs"), "pub fn said() -> &'static str { \"honest\" }\n")
        .unwrap();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(&dep)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "dep"]);
    let other = second_workspace(&u);
    for (dir, name) in [(&u.ws, "victima"), (&other, "victimb")] {
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [dependencies]\ndep = {{ git = \"file://{}\" }}\n",
                dep.display()
            ),
        )
        .unwrap();
        std::fs::write(dir.join("src/main.rs"), "fn main() { println!(\"{}\", dep::said()); }\n")
            .unwrap();
    }
    let poison = "cargo fetch -q && for f in \"$CARGO_HOME\"/git/checkouts/dep-*/*/src/lib.rs; do \
                  echo 'pub fn said() -> &'\"'\"'static str { \"poisoned\" }' > \"$f\"; done";
    run(u.cordon(&["--preset", "cargo", "--", "sh", "-c", poison])).assert_ok();
    let built = |dir: &Path, name: &str| {
        let args = ["-a", "never", "--preset", "cargo", "--", "cargo", "build", "-q"];
        let out = run(u.cordon_exec_in(dir, &args));
        out.assert_ok();
        let binary = dir.join("target/debug").join(name);
        let said = Command::new(&binary).output().unwrap();
        String::from_utf8_lossy(&said.stdout).trim().to_owned()
    };
    assert_eq!(built(&other, "victimb"), "honest", "another workspace built the planted code");
    assert_eq!(built(&u.ws, "victima"), "poisoned", "the control: the cache is kept");
}

/// A command that turns the names cordon writes in its cache into trees it cannot simply
/// remove (a directory of mode 0500 holding a file, where a file belongs) does not stop the
/// next preset run, as root or as uid 65534: the names are files again and the run succeeds.
#[test]
fn what_a_command_makes_of_its_cache_never_stops_the_next_run() {
    require_preset_sandbox!();
    for who in USERS {
        let u = user();
        if who == User::Nobody {
            for dir in [&u.home, &u.ws] {
                nix::unistd::chown(dir.as_path(), Some(65534.into()), Some(65534.into())).unwrap();
            }
        }
        let damage = "for v in \"$npm_config_cache\" \"$CARGO_HOME\"; do \
                      for n in CACHEDIR.TAG config.toml config; do rm -rf \"$v/$n\" && \
                      mkdir -p \"$v/$n/locked\" && echo x > \"$v/$n/locked/file\" && \
                      chmod 500 \"$v/$n/locked\" && chmod 500 \"$v/$n\"; done; \
                      chmod 0 \"$v/CACHEDIR.TAG\"; chmod 500 \"$v\"; done";
        let cordon = |script: &str| {
            let mut command = command_as(who, cordon_for(who));
            command
                .args(["exec", "-a", "never", "--preset", "npm", "--preset", "cargo", "-C"])
                .arg(&u.ws)
                .args(["--", "sh", "-c", script])
                .current_dir(&u.ws)
                .stdin(Stdio::null())
                .env("HOME", &u.home)
                .env_remove("CORDON_HOME")
                .env_remove("CARGO_HOME");
            run(&mut command)
        };
        cordon(damage).assert_ok();
        let locked = u.cache("npm").join("CACHEDIR.TAG/locked/file");
        assert!(locked.exists(), "{who:?}: the damage was not done");
        let next = cordon("touch \"$npm_config_cache/ok\" \"$CARGO_HOME/ok\" && echo wrote");
        next.assert_ok();
        assert_eq!(next.stdout.trim(), "wrote", "{who:?}: {}", next.stderr);
        for tool in ["npm", "cargo"] {
            let tag = u.cache(tool).join("CACHEDIR.TAG");
            assert!(std::fs::symlink_metadata(&tag).unwrap().is_file(), "{who:?}: {tool}");
        }
        let carried = u.cache("cargo").join("config.toml");
        assert!(std::fs::symlink_metadata(&carried).unwrap().is_file(), "{who:?}");
        assert!(!u.cache("cargo").join("config").exists(), "{who:?}");
        // A run of the same workspace that keeps remaking those names while others start:
        // every other run still starts.
        // Outside the roots: the workspace is seen through a write layer, which does not show
        // what the host makes in it during the run.
        let stop = u.home.join("stop");
        let remake = format!(
            "while [ ! -e {} ]; do for n in CACHEDIR.TAG config.toml config; do \
             rm -rf \"$CARGO_HOME/$n\"; mkdir -p \"$CARGO_HOME/$n/d\"; done; done",
            stop.display()
        );
        let mut remaker = command_as(who, cordon_for(who));
        remaker
            .args(["exec", "-a", "never", "--preset", "cargo", "-C"])
            .arg(&u.ws)
            .args(["--", "sh", "-c", &remake])
            .current_dir(&u.ws)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .env("HOME", &u.home)
            .env_remove("CORDON_HOME")
            .env_remove("CARGO_HOME");
        let mut remaker = remaker.spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut failed = Vec::new();
        for _ in 0..10 {
            let out = cordon("true");
            if out.code != Some(0) {
                failed.push(out.stderr);
            }
        }
        std::fs::write(&stop, "").unwrap();
        let _ = remaker.wait();
        assert!(failed.is_empty(), "{who:?}: {} of 10 runs failed: {:?}", failed.len(), failed);
    }
}

/// A run whose working directory or `--add-dir` lies inside `$CORDON_HOME/workspaces` could
/// write another workspace's cache (or plant a link where cordon makes a workspace's
/// directory): it is refused before anything runs.
#[test]
fn a_writable_root_inside_the_workspaces_state_is_refused() {
    require_sandbox!(1);
    let u = user();
    let state = u.home.join(".cordon/workspaces/0123456789abcdef0123456789abcdef/cache/npm");
    std::fs::create_dir_all(&state).unwrap();
    let planted = state.join("planted");
    let inside = run(u.cordon_exec_in(&state, &["-a", "never", "--", "touch", "planted"]));
    assert_eq!(inside.code, Some(125), "{}", inside.stderr);
    assert!(inside.stderr.contains("preset caches"), "{}", inside.stderr);
    let added = u.home.join(".cordon/workspaces");
    let mut command = u.cordon(&["--add-dir", added.to_str().unwrap(), "--", "true"]);
    let added_run = run(&mut command);
    assert_eq!(added_run.code, Some(125), "{}", added_run.stderr);
    assert!(!planted.exists());
}

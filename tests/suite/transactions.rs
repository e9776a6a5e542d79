//! `--writes transaction`: the command's writes land in a layer of their own and reach the
//! workspace when it is over, through the write gate. Each test runs the real binary as root
//! and as uid 65534, then looks from outside: what was applied is on disk (the positive
//! control), what would run code later is not, and the user's own git run afterwards runs
//! nothing planted.

use std::path::Path;
use std::process::Command;

use super::code_runs_later::{Scene, git, head, repository};
use super::util::*;

/// `cordon exec -a never --writes transaction -C ws -- sh -c SCRIPT` as `user`.
fn transactional(user: User, scene: &Scene, script: &str) -> Run {
    transactional_command(user, scene, script).output().unwrap().into()
}

fn transactional_command(user: User, scene: &Scene, script: &str) -> Command {
    let ws = scene.ws.path().to_str().unwrap();
    let mut command = cordon_command(
        user,
        &["exec", "-a", "never", "--writes", "transaction", "-C", ws, "--", "sh", "-c", script],
    );
    command
        .env("HOME", scene.home.path())
        .env("CORDON_HOME", scene.home.path().join(".cordon"))
        .env("GIT_CONFIG_NOSYSTEM", "1");
    command
}

/// A scene whose workspace is a repository with one commit (`f` = "1"), `user`'s.
fn repository_scene(user: User) -> Scene {
    let scene = Scene::for_user(user);
    repository(scene.ws.path());
    if user == User::Nobody {
        chown_nobody(scene.ws.path());
        chown_nobody(scene.home.path());
    }
    scene
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Everything the command changes reaches the workspace, but what git, rustup, cargo or a
/// shell would later run code from: a hook, a config that gained code (a plain key, a key on
/// the section's line, an included file, a file the user's global `includeIf` names), an
/// untracked `rust-toolchain.toml` and `.cargo/config.toml`, a FIFO, a new repository with a
/// planted config deep in a new tree. The user's `git status` afterwards runs nothing.
#[test]
fn a_transactional_run_applies_its_changes_and_holds_back_what_would_run_code_later() {
    require_write_layer!();
    for user in USERS {
        let scene = repository_scene(user);
        let ws = scene.ws.path();
        // The repository shares settings through an include; the user's global config
        // includes a file in the workspace for every repository under it.
        std::fs::create_dir_all(ws.join("tools")).unwrap();
        std::fs::write(ws.join("tools/gitconfig"), "[user]\n\tname = t\n").unwrap();
        git(ws, &["config", "include.path", "../tools/gitconfig"]).assert_ok();
        std::fs::write(ws.join("old"), "to delete\n").unwrap();
        std::fs::write(
            scene.home.path().join(".gitconfig"),
            format!(
                "[includeIf \"gitdir:{}/\"]\n\tpath = {}/.gitconfig-work\n",
                ws.display(),
                ws.display()
            ),
        )
        .unwrap();
        if user == User::Nobody {
            chown_nobody(ws);
            chown_nobody(scene.home.path());
        }
        let mark = scene.mark.display();
        let fsmonitor = format!("\\tfsmonitor = \\\"touch {mark}; false\\\"\\n");
        let script = format!(
            "set -e; echo 2 > f; echo new > new; rm old; mkdir -p a/b/c && echo deep > a/b/c/file; \
             printf '#!/bin/sh\\ntouch {mark}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
             printf '[core] hooksPath = .githooks\\n' >> .git/config; \
             printf '[core]\\n{fsmonitor}' >> tools/gitconfig; \
             printf '[core]\\n{fsmonitor}' > .gitconfig-work; \
             printf '[toolchain]\\npath = \"/x\"\\n' > rust-toolchain.toml; \
             mkdir -p .cargo && printf '[build]\\nrustc-wrapper = \"/x\"\\n' > .cargo/config.toml; \
             mkfifo pipe; \
             mkdir -p src/m1/p2/d3/newrepo && cd src/m1/p2/d3/newrepo && git init -q . && \
             printf '[core]\\n{fsmonitor}' >> .git/config && cd - >/dev/null && \
             echo done"
        );
        let run = transactional(user, &scene, &script);
        assert!(run.stdout.contains("done"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        // Applied.
        assert_eq!(read(&ws.join("f")), "2\n", "{user:?}");
        assert_eq!(read(&ws.join("new")), "new\n", "{user:?}");
        assert_eq!(read(&ws.join("a/b/c/file")), "deep\n", "{user:?}");
        assert!(!ws.join("old").exists(), "{user:?}: a deletion was not applied");
        assert!(ws.join("src/m1/p2/d3/newrepo/.git/HEAD").is_file(), "{user:?}");
        // Held back, and named.
        for held in [
            ".git/hooks/pre-commit",
            ".gitconfig-work",
            "rust-toolchain.toml",
            ".cargo/config.toml",
            "pipe",
        ] {
            assert!(
                std::fs::symlink_metadata(ws.join(held)).is_err(),
                "{user:?}: {held} reached the workspace"
            );
        }
        assert!(!read(&ws.join(".git/config")).contains("hooksPath"), "{user:?}");
        assert!(!read(&ws.join("tools/gitconfig")).contains("fsmonitor"), "{user:?}");
        assert!(!ws.join("src/m1/p2/d3/newrepo/.git/config").exists(), "{user:?}");
        assert!(run.stderr.contains("held back"), "{user:?}: {}", run.stderr);
        assert!(run.stderr.contains("rust-toolchain.toml"), "{user:?}: {}", run.stderr);
        // The user's own git, outside, afterwards: with the global config the run saw.
        for dir in [ws.to_path_buf(), ws.join("src/m1/p2/d3/newrepo")] {
            let status = Command::new("git")
                .args(["-c", "safe.directory=*", "status", "--short"])
                .current_dir(&dir)
                .env("HOME", scene.home.path())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap();
            assert!(
                status.status.success(),
                "{user:?}: {}",
                String::from_utf8_lossy(&status.stderr)
            );
        }
        git(ws, &["commit", "-qam", "after"]).assert_ok();
        assert!(!scene.mark.exists(), "{user:?}: planted code ran outside the sandbox");
        // What was held is kept for the user to look at, out of the runs in flight.
        let runs = scene.home.path().join(".cordon/runs");
        assert_eq!(std::fs::read_dir(&runs).unwrap().count(), 0, "{user:?}");
        let kept = std::fs::read_dir(scene.home.path().join(".cordon/kept"))
            .unwrap()
            .filter(|entry| entry.as_ref().unwrap().file_type().unwrap().is_dir())
            .count();
        assert_eq!(kept, 1, "{user:?}: one run directory keeps what was held");
    }
}

/// Ordinary git work inside a transactional run leaves the host as a run without cordon would:
/// a commit, a stash, an interactive rebase, a linked worktree (usable from outside), a clone
/// with its submodules.
#[test]
fn git_work_in_a_transactional_run_leaves_the_host_as_a_direct_run_would() {
    require_write_layer!();
    for user in USERS {
        let scene = repository_scene(user);
        let ws = scene.ws.path();
        // A repository with a submodule to clone, outside the workspace.
        let sub = scene.outside.path().join("sub");
        let sup = scene.outside.path().join("super");
        repository(&sub);
        repository(&sup);
        git(
            &sup,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                sub.to_str().unwrap(),
                "lib",
            ],
        )
        .assert_ok();
        git(&sup, &["commit", "-qm", "sub"]).assert_ok();
        if user == User::Nobody {
            chown_nobody(scene.outside.path());
        }
        let script = format!(
            "set -e; git config user.name t; git config user.email t@example.test; \
             echo 2 > f; git commit -qam two; echo 3 > f; git stash -q; \
             echo 4 > g; git add g; git commit -qm four; echo 5 > g; git commit -qam five; \
             GIT_SEQUENCE_EDITOR='sed -i 2s/^pick/squash/' GIT_EDITOR=true git rebase -q -i HEAD~2; \
             git worktree add -q wt2; \
             git -c protocol.file.allow=always clone -q --recurse-submodules {} cl; echo done",
            sup.display()
        );
        let run = transactional(user, &scene, &script);
        assert!(run.stdout.contains("done"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        assert!(!run.stderr.contains("held back"), "{user:?}: {}", run.stderr);
        // `rebase -i` squashed the last two commits into one, and left no rebase state.
        assert_eq!(git(ws, &["log", "-1", "--format=%s"]).stdout.trim(), "four", "{user:?}");
        assert!(git(ws, &["log", "-1", "--format=%b"]).stdout.contains("five"), "{user:?}");
        assert_eq!(git(ws, &["log", "-2", "--format=%s"]).stdout.lines().nth(1), Some("two"));
        assert_eq!(read(&ws.join("g")), "5\n", "{user:?}");
        assert!(!ws.join(".git/rebase-merge").exists(), "{user:?}");
        assert_eq!(git(ws, &["stash", "list"]).stdout.lines().count(), 1, "{user:?}");
        assert_eq!(read(&ws.join("f")), "2\n", "{user:?}");
        git(&ws.join("wt2"), &["status"]).assert_ok();
        assert_eq!(head(&ws.join("wt2")), head(ws), "{user:?}");
        git(&ws.join("cl"), &["submodule", "status"]).assert_ok();
        assert_eq!(head(&ws.join("cl/lib")), head(&sub), "{user:?}");
        assert_eq!(
            git(&ws.join("cl"), &["config", "remote.origin.url"]).stdout.trim(),
            sup.to_str().unwrap(),
            "{user:?}"
        );
        // Nothing held, so nothing kept.
        let runs = scene.home.path().join(".cordon/runs");
        assert_eq!(std::fs::read_dir(&runs).unwrap().count(), 0, "{user:?}");
    }
}

/// A file the user changes while the command runs is a conflict: the user's version stays, the
/// command's is kept aside and named; the run's other changes are applied.
#[test]
fn a_file_changed_outside_during_the_run_keeps_the_users_version() {
    require_write_layer!();
    for user in USERS {
        let scene = repository_scene(user);
        let ws = scene.ws.path();
        std::fs::write(ws.join("notes"), "before\n").unwrap();
        if user == User::Nobody {
            chown_nobody(ws);
        }
        // The command's signal that it wrote: a line on its output (its writes, to the
        // workspace and to /tmp, do not show outside until it is over).
        let script = "echo sandbox > notes; echo other > other; echo wrote; sleep 3; echo done";
        let mut child = transactional_command(user, &scene, script)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
        assert_eq!(first, "wrote\n", "{user:?}: the command did not start");
        std::fs::write(ws.join("notes"), "user\n").unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
        let output = child.wait_with_output().unwrap();
        let run = Run::from(std::process::Output {
            stdout: format!("{first}{rest}").into_bytes(),
            ..output
        });
        assert!(run.stdout.contains("done"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(read(&ws.join("notes")), "user\n", "{user:?}");
        assert_eq!(read(&ws.join("other")), "other\n", "{user:?}");
        assert!(
            run.stderr.contains("changed outside it during the run"),
            "{user:?}: {}",
            run.stderr
        );
    }
}

/// An apply that was stopped half-way (a killed cordon) is finished by the next transactional
/// run: what was left in the layer reaches the workspace once, and its directory goes.
#[test]
fn an_interrupted_apply_is_finished_by_the_next_run() {
    require_write_layer!();
    let scene = repository_scene(User::Root);
    let ws = scene.ws.path();
    let runs = scene.home.path().join(".cordon/runs");
    let left = runs.join("1-1");
    std::fs::create_dir_all(left.join("0/upper/dir")).unwrap();
    std::os::unix::fs::symlink(ws, left.join("0/root")).unwrap();
    std::fs::write(left.join("0/upper/dir/left"), "left\n").unwrap();
    std::fs::write(left.join("lock"), "").unwrap();
    std::fs::write(left.join("state"), "applying").unwrap();
    let run = transactional(User::Root, &scene, "echo mine > mine");
    run.assert_ok();
    assert_eq!(read(&ws.join("dir/left")), "left\n");
    assert_eq!(read(&ws.join("mine")), "mine\n");
    assert!(!left.exists(), "the finished run's directory stays");
}

/// Without the mount view there is no write layer: refused (125) with the reason, never run
/// with direct writes in silence.
#[test]
fn a_transaction_without_the_mount_view_is_refused() {
    require_sandbox!(1);
    let scene = Scene::for_user(User::Root);
    let ws = scene.ws.path().to_str().unwrap();
    let run = cordon_as(
        User::Root,
        &[
            "exec",
            "-a",
            "never",
            "--writes",
            "transaction",
            "--no-mount-view",
            "-C",
            ws,
            "--",
            "touch",
            "x",
        ],
        Some(scene.home.path()),
    );
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("mount view"), "{}", run.stderr);
    assert!(!scene.ws.path().join("x").exists());
}

/// A server's sessions outlive their calls: a write layer is refused for them by name.
#[test]
fn servers_refuse_transactional_writes() {
    let run = cordon(&["executor", "--writes", "transaction"]);
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("one-shot runs"), "{}", run.stderr);
}

/// A directory that existed before the run cannot be renamed through the layer: `git mv`
/// fails with `EXDEV`, and cordon names why and what to do instead.
#[test]
fn renaming_a_directory_that_existed_is_named_with_its_remedy() {
    require_write_layer!();
    let scene = repository_scene(User::Root);
    let ws = scene.ws.path();
    std::fs::create_dir(ws.join("d")).unwrap();
    std::fs::write(ws.join("d/a"), "a\n").unwrap();
    git(ws, &["add", "d"]).assert_ok();
    git(ws, &["commit", "-qm", "d"]).assert_ok();
    let run = transactional(User::Root, &scene, "git mv d d2");
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("--writes direct"), "{}", run.stderr);
    assert!(ws.join("d/a").is_file(), "the failed rename changed the workspace");
}

/// `cordon sandbox` keeps the layer too: the helper it becomes applies after the command.
#[test]
fn cordon_sandbox_applies_through_the_gate_too() {
    require_write_layer!();
    for user in USERS {
        let scene = repository_scene(user);
        let ws = scene.ws.path().to_str().unwrap();
        let mut command = cordon_command(
            user,
            &[
                "sandbox",
                "linux",
                "-s",
                "workspace-write",
                "--writes",
                "transaction",
                "-C",
                ws,
                "--",
                "sh",
                "-c",
                "echo x > made && printf '#!/bin/sh\\n' > .git/hooks/post-commit && echo done",
            ],
        );
        command
            .env("HOME", scene.home.path())
            .env("CORDON_HOME", scene.home.path().join(".cordon"));
        let run: Run = command.output().unwrap().into();
        assert!(run.stdout.contains("done"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(read(&scene.ws.path().join("made")), "x\n", "{user:?}");
        assert!(!scene.ws.path().join(".git/hooks/post-commit").exists(), "{user:?}");
        assert!(run.stderr.contains("held back"), "{user:?}: {}", run.stderr);
    }
}

/// One spelling of "code that runs later": `setup` prepares the workspace outside, `runs` are
/// the transactional runs' scripts (`MARK` stands for the marker's path), `later` is what the
/// user does outside afterwards. Nothing may leave the marker, as root and as uid 65534.
struct Spelling {
    name: &'static str,
    setup: fn(&Scene),
    runs: &'static [&'static str],
    later: fn(&Scene),
}

fn fsmonitor_config(mark: &Path) -> String {
    format!("[core]\n\tfsmonitor = \"touch {}; false\"\n", mark.display())
}

/// `shared/git.cfg`, included by a repository nested in the workspace.
fn shared_include(scene: &Scene) {
    let ws = scene.ws.path();
    std::fs::create_dir_all(ws.join("shared")).unwrap();
    std::fs::write(ws.join("shared/git.cfg"), "[user]\n\tname = t\n").unwrap();
    repository(&ws.join("nested/sub"));
    let shared = ws.join("shared/git.cfg");
    git(&ws.join("nested/sub"), &["config", "include.path", shared.to_str().unwrap()]).assert_ok();
}

fn commit_outside(scene: &Scene) {
    let _ = git(scene.ws.path(), &["commit", "-q", "--allow-empty", "-m", "later"]);
}

fn status_outside(dir: &Path) {
    let _ = Command::new("git")
        .args(["-c", "safe.directory=*", "status", "--short"])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(std::process::Stdio::null())
        .output();
}

const SPELLINGS: &[Spelling] = &[
    Spelling {
        name: "hooks as a link to a planted directory",
        setup: |_| {},
        runs: &["mkdir .x && printf '#!/bin/sh\\ntouch MARK\\n' > .x/pre-commit && \
                 chmod +x .x/pre-commit && rm -rf .git/hooks && ln -s ../.x .git/hooks && \
                 echo .x/ >> .git/info/exclude"],
        later: commit_outside,
    },
    Spelling {
        name: "a git directory made of HEAD and a commondir",
        setup: |_| {},
        runs: &["mkdir -p x/gd x/cd/objects x/cd/refs && echo 'gitdir: gd' > x/.git && \
                 echo 'ref: refs/heads/main' > x/gd/HEAD && echo ../cd > x/gd/commondir && \
                 printf '[core]\\n\\tfsmonitor = \"touch MARK; false\"\\n' > x/cd/config"],
        later: |scene| status_outside(&scene.ws.path().join("x")),
    },
    Spelling {
        name: "a git directory completed in a second run around a planted config and hook",
        setup: |_| {},
        runs: &[
            "mkdir -p x/hooks && printf '[core]\\n\\tfsmonitor = \"touch MARK; false\"\\n' > x/config && \
             printf '#!/bin/sh\\ntouch MARK\\n' > x/hooks/post-commit && chmod +x x/hooks/post-commit",
            "echo 'ref: refs/heads/main' > x/HEAD && mkdir -p x/objects x/refs sub && \
             echo 'gitdir: ../x' > sub/.git",
        ],
        later: |scene| status_outside(&scene.ws.path().join("sub")),
    },
    Spelling {
        name: "a pointer whose text goes on past its first line",
        setup: |scene| {
            let outside = scene.outside.path().join("outrepo");
            repository(&outside);
            std::fs::write(outside.join(".git/config"), fsmonitor_config(&scene.mark)).unwrap();
        },
        runs: &["mkdir -p sub 'sub/x\n' && printf 'gitdir: x\\n/../../../%s/outrepo/.git\\n' \
                 \"$(basename \"$OUTSIDE\")\" > sub/.git"],
        later: |scene| status_outside(&scene.ws.path().join("sub")),
    },
    Spelling {
        name: "a hook where the repository's core.hooksPath already points",
        setup: |scene| {
            git(scene.ws.path(), &["config", "core.hooksPath", ".husky/_"]).assert_ok();
            std::fs::create_dir_all(scene.ws.path().join(".husky/_")).unwrap();
            std::fs::write(scene.ws.path().join(".husky/_/.gitignore"), "*\n").unwrap();
        },
        runs: &[
            "printf '#!/bin/sh\\ntouch MARK\\n' > .husky/_/pre-commit && chmod +x .husky/_/pre-commit",
        ],
        later: commit_outside,
    },
    Spelling {
        name: "an included file reached through a link made in the run",
        setup: |scene| {
            std::fs::create_dir_all(scene.ws.path().join("conf")).unwrap();
            std::fs::write(scene.ws.path().join("conf/git.cfg"), "[user]\n\tname = t\n").unwrap();
            git(scene.ws.path(), &["config", "include.path", "../conf/git.cfg"]).assert_ok();
        },
        runs: &["rm -rf conf && mkdir other && \
                 printf '[core]\\n\\tfsmonitor = \"touch MARK; false\"\\n' > other/git.cfg && \
                 ln -s other conf"],
        later: |scene| status_outside(scene.ws.path()),
    },
    Spelling {
        name: "a FIFO where git reads HEAD",
        setup: |_| {},
        runs: &["rm .git/HEAD && mkfifo .git/HEAD"],
        later: |scene| {
            assert!(std::fs::metadata(scene.ws.path().join(".git/HEAD")).unwrap().is_file());
        },
    },
    Spelling {
        name: "the repository removed",
        setup: |_| {},
        runs: &["rm -rf .git"],
        later: |scene| assert!(scene.ws.path().join(".git/HEAD").is_file(), "the history is gone"),
    },
    Spelling {
        name: "the repository's objects and refs removed",
        setup: |_| {},
        runs: &["rm -rf .git/objects .git/refs"],
        later: |scene| {
            assert!(scene.ws.path().join(".git/objects").is_dir(), "the objects are gone");
            assert!(scene.ws.path().join(".git/refs").is_dir(), "the refs are gone");
        },
    },
    Spelling {
        name: "a directory made a git directory around a config rewritten in the second run",
        setup: |_| {},
        runs: &[
            "mkdir d && printf '[core]\\n\\tfsmonitor = \"touch MARK; false\"\\n' > d/config && \
             mkdir -p d/hooks && printf '#!/bin/sh\\ntouch MARK\\n' > d/hooks/post-checkout && \
             chmod +x d/hooks/post-checkout",
            "cd d && mkdir -p objects refs/heads && echo 'ref: refs/heads/main' > HEAD && \
             echo '[user]' >> config && touch hooks/x.sample && cd .. && mkdir sub && \
             echo 'gitdir: ../d' > sub/.git && \
             git -c safe.directory='*' update-index --add --cacheinfo 160000,$(git -c safe.directory='*' rev-parse HEAD),sub",
        ],
        later: |scene| {
            status_outside(scene.ws.path());
            status_outside(&scene.ws.path().join("sub"));
        },
    },
    Spelling {
        name: "a repository in a directory the gate may not list",
        setup: |_| {},
        runs: &["mkdir -p new/x && cd new/x && git init -q && \
                 git config core.fsmonitor 'touch MARK; false' && cd .. && chmod 311 x"],
        later: |scene| status_outside(&scene.ws.path().join("new/x")),
    },
    Spelling {
        name: "a hook in a worktree made in the run, where core.hooksPath points",
        setup: |scene| {
            git(scene.ws.path(), &["config", "core.hooksPath", ".husky/_"]).assert_ok();
        },
        runs: &["git -c safe.directory='*' worktree add -q wt && mkdir -p wt/.husky/_ && \
                 printf '#!/bin/sh\\ntouch MARK\\n' > wt/.husky/_/pre-commit && \
                 chmod +x wt/.husky/_/pre-commit"],
        later: |scene| {
            let _ = git(&scene.ws.path().join("wt"), &["commit", "-q", "--allow-empty", "-m", "z"]);
        },
    },
    Spelling {
        name: "a tracked tool configuration hidden from git diff by skip-worktree",
        setup: |scene| {
            let ws = scene.ws.path();
            std::fs::create_dir_all(ws.join(".cargo")).unwrap();
            std::fs::write(ws.join(".cargo/config.toml"), "[build]\njobs = 1\n").unwrap();
            git(ws, &["add", ".cargo/config.toml"]).assert_ok();
            git(ws, &["commit", "-qm", "cargo"]).assert_ok();
        },
        runs: &["printf '[build]\\nrustc-wrapper = \"MARK\"\\n' > .cargo/config.toml && \
                 git -c safe.directory='*' update-index --skip-worktree .cargo/config.toml"],
        later: |scene| {
            let text = std::fs::read_to_string(scene.ws.path().join(".cargo/config.toml")).unwrap();
            assert!(!text.contains("rustc-wrapper"), "a hidden change to cargo's config passed");
        },
    },
    Spelling {
        name: "an object store where the command writes directly",
        setup: |_| {},
        runs: &[
            "mkdir -p /tmp/cordon-e2e-alt-$$ && echo /tmp/cordon-e2e-alt-$$ > .git/objects/info/alternates",
        ],
        later: |scene| {
            assert!(!scene.ws.path().join(".git/objects/info/alternates").exists());
        },
    },
    Spelling {
        name: "git's cookie jar pointed at a start-up file",
        setup: |_| {},
        runs: &["git config http.saveCookies true && git config http.cookieFile '~/.bashrc'"],
        later: |scene| {
            let config = std::fs::read_to_string(scene.ws.path().join(".git/config")).unwrap();
            assert!(!config.to_ascii_lowercase().contains("cookie"), "{config}");
        },
    },
    Spelling {
        name: "a push that deletes the remote's branches, and files hidden from git status",
        setup: |_| {},
        runs: &[
            "git config remote.origin.push :refs/heads/main && git config remote.origin.mirror true && \
                 git config status.showUntrackedFiles no && git config core.excludesFile .hidden",
        ],
        later: |scene| {
            let config = std::fs::read_to_string(scene.ws.path().join(".git/config")).unwrap();
            for key in ["push", "mirror", "showuntrackedfiles", "excludesfile"] {
                assert!(!config.to_ascii_lowercase().contains(key), "{key}: {config}");
            }
        },
    },
    Spelling {
        name: "a repository emptied of its objects and refs",
        setup: |_| {},
        runs: &[
            "rm -rf .git/objects/* .git/refs/heads/* .git/packed-refs .git/logs && : > .git/index",
        ],
        later: |scene| {
            git(scene.ws.path(), &["log", "-1"]).assert_ok();
        },
    },
    Spelling {
        name: "a configuration file another repository includes",
        setup: shared_include,
        runs: &["printf '[core]\\n\\tfsmonitor = \"touch MARK; false\"\\n' >> shared/git.cfg"],
        later: |scene| status_outside(&scene.ws.path().join("nested/sub")),
    },
    Spelling {
        name: "an included file whose first line is a key of no section",
        setup: shared_include,
        runs: &["printf 'x = 1\\n[core] fsmonitor = \"touch MARK; false\"\\n' > shared/git.cfg"],
        later: |scene| status_outside(&scene.ws.path().join("nested/sub")),
    },
    Spelling {
        name: "an included file with a byte order mark",
        setup: shared_include,
        runs: &[
            "printf '\\357\\273\\277[core]\\n\\tfsmonitor = \"touch MARK; false\"\\n' > shared/git.cfg",
        ],
        later: |scene| status_outside(&scene.ws.path().join("nested/sub")),
    },
    Spelling {
        name: "an included file whose section a continued value swallows",
        setup: shared_include,
        runs: &[
            "printf '[core]\\n\\tpager = a \\\\\\n[foo]\\n\\tfsmonitor = \"touch MARK; false\"\\n' > shared/git.cfg",
        ],
        later: |scene| status_outside(&scene.ws.path().join("nested/sub")),
    },
    Spelling {
        name: "an included file with five kilobytes of comments first",
        setup: shared_include,
        runs: &["{ for i in $(seq 300); do echo '# padding padding'; done; \
                 printf '[core]\\n\\tfsmonitor = \"touch MARK; false\"\\n'; } > shared/git.cfg"],
        later: |scene| status_outside(&scene.ws.path().join("nested/sub")),
    },
    Spelling {
        name: "a tree deeper than the gate follows",
        setup: |_| {},
        runs: &[
            "python3 -c 'import os\nfor _ in range(300): os.mkdir(\"d\"); os.chdir(\"d\")\nopen(\"f\", \"w\").write(\"x\")' && mv d deep",
        ],
        later: |scene| {
            // What lies past the depth the gate follows is held; what it judged above passes.
            let bottom = scene.ws.path().join("deep").join("d/".repeat(299)).join("f");
            assert!(!bottom.exists(), "an unjudged file passed");
            assert!(scene.ws.path().join("deep/d/d").is_dir(), "the judged part was not applied");
        },
    },
];

#[test]
fn every_spelling_of_code_that_runs_later_is_held() {
    require_write_layer!();
    for user in USERS {
        for spelling in SPELLINGS {
            let scene = Scene::for_user(user);
            repository(scene.ws.path());
            (spelling.setup)(&scene);
            if user == User::Nobody {
                chown_nobody(scene.ws.path());
                chown_nobody(scene.home.path());
                chown_nobody(scene.outside.path());
            }
            for script in spelling.runs {
                let script = script.replace("MARK", scene.mark.to_str().unwrap());
                let mut command = transactional_command(user, &scene, &script);
                command.env("OUTSIDE", scene.outside.path());
                let run: Run = command.output().unwrap().into();
                // Each plant succeeds inside: what is judged is what reaches the workspace.
                assert!(run.ok(), "{user:?}, {}: {}\n{}", spelling.name, run.stdout, run.stderr);
            }
            (spelling.later)(&scene);
            assert!(!scene.mark.exists(), "{user:?}, {}: planted code ran outside", spelling.name);
        }
    }
}

/// A git directory's entries never reach the workspace writable by every user: a `.git/hooks`
/// made anew with mode 0777, a `.git/description` and an existing `.git/info` made
/// world-writable all arrive without write for others (group write stays: shared
/// repositories need it). The same modes outside the git directory arrive as made.
#[test]
fn nothing_in_a_git_directory_arrives_writable_by_every_user() {
    use std::os::unix::fs::PermissionsExt;
    require_write_layer!();
    for user in USERS {
        let scene = repository_scene(user);
        let ws = scene.ws.path();
        std::fs::create_dir_all(ws.join(".git/info")).unwrap();
        if user == User::Nobody {
            chown_nobody(ws);
        }
        let run = transactional(
            user,
            &scene,
            "rm -rf .git/hooks && mkdir .git/hooks && chmod 777 .git/hooks \
             && echo d > .git/description && chmod 666 .git/description \
             && chmod 777 .git/info && echo x > open.txt && chmod 666 open.txt && echo done",
        );
        assert!(run.stdout.contains("done"), "{user:?}: {}{}", run.stdout, run.stderr);
        let mode =
            |rel: &str| std::fs::metadata(ws.join(rel)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("open.txt"), 0o666, "{user:?}: the control outside .git");
        for rel in [".git/hooks", ".git/description", ".git/info"] {
            assert_eq!(mode(rel) & 0o002, 0, "{user:?}: {rel} is {:o}", mode(rel));
            assert_eq!(mode(rel) & 0o020, 0o020, "{user:?}: {rel} lost group write");
        }
    }
}

/// `cordon diff` names each change of a run (made, replaced, deleted, held) and `cordon undo`
/// takes it back: what the run replaced or deleted is back on disk, what it made is gone from
/// the workspace (into the run's `undone/`), a file the user changed after the run is left and
/// named (exit 1), and a second undo is refused. As root and as uid 65534.
#[test]
fn a_run_is_shown_and_undone_without_touching_what_changed_since() {
    require_write_layer!();
    for user in USERS {
        let scene = repository_scene(user);
        let ws = scene.ws.path();
        std::fs::write(ws.join("edited"), "before\n").unwrap();
        std::fs::write(ws.join("deleted"), "kept\n").unwrap();
        std::fs::create_dir_all(ws.join("tree")).unwrap();
        std::fs::write(ws.join("tree/old"), "old\n").unwrap();
        std::fs::write(ws.join("later"), "v1\n").unwrap();
        std::fs::create_dir_all(ws.join("was-dir")).unwrap();
        std::fs::write(ws.join("was-dir/f"), "dir\n").unwrap();
        if user == User::Nobody {
            chown_nobody(ws);
        }
        let script = "echo after > edited; rm deleted; echo new > made; mkdir -p newdir && \
                      echo x > newdir/x; rm -r tree && mkdir tree && echo n > tree/new; \
                      echo v2 > later; mkdir -p .git/hooks && echo '#!/bin/sh' > .git/hooks/pre-push; \
                      mkdir userdir; rm -r was-dir && echo file > was-dir";
        transactional(user, &scene, script).assert_ok();
        assert_eq!(read(&ws.join("edited")), "after\n");
        // The user's own changes after the run: a file, and one in a directory the run made.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(ws.join("later"), "v3 (the user's)\n").unwrap();
        std::fs::write(ws.join("userdir/mine"), "the user's\n").unwrap();
        let with_env = |command: &mut Command| {
            command
                .current_dir(ws)
                .env("HOME", scene.home.path())
                .env("CORDON_HOME", scene.home.path().join(".cordon"));
        };
        let mut diff = cordon_command(user, &["diff", "--json"]);
        with_env(&mut diff);
        let diff: Run = diff.output().unwrap().into();
        diff.assert_ok();
        let doc: serde_json::Value = serde_json::from_str(&diff.stdout).unwrap();
        let kind = |name: &str| -> String {
            let path = ws.join(name);
            doc["applied"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["path"] == path.to_str().unwrap())
                .map(|c| {
                    format!(
                        "{}{}",
                        c["kind"].as_str().unwrap(),
                        if c["changed_since"] == true { " since" } else { "" }
                    )
                })
                .unwrap_or_else(|| panic!("{user:?}: {name} not in {}", diff.stdout))
        };
        assert_eq!(kind("edited"), "replaced");
        assert_eq!(kind("deleted"), "deleted");
        assert_eq!(kind("made"), "created");
        assert_eq!(kind("newdir"), "created");
        assert_eq!(kind("tree"), "replaced");
        assert_eq!(kind("later"), "replaced since");
        assert_eq!(kind("userdir"), "created since");
        assert_eq!(kind("was-dir"), "replaced");
        let held = doc["held"].as_array().unwrap();
        assert!(
            held.iter().any(|c| c["path"].as_str().unwrap().ends_with("pre-push")),
            "{}",
            diff.stdout
        );
        let run_id = doc["id"].as_str().unwrap().to_owned();

        let mut undo = cordon_command(user, &["undo"]);
        with_env(&mut undo);
        let undo: Run = undo.output().unwrap().into();
        assert_eq!(undo.code, Some(1), "{user:?}: {}{}", undo.stdout, undo.stderr);
        assert!(
            undo.stdout.contains(&format!("left {}", ws.join("later").display())),
            "{}",
            undo.stdout
        );
        assert_eq!(read(&ws.join("edited")), "before\n", "{user:?}");
        assert_eq!(read(&ws.join("deleted")), "kept\n", "{user:?}");
        assert_eq!(read(&ws.join("tree/old")), "old\n", "{user:?}");
        assert!(
            !ws.join("tree/new").exists()
                && !ws.join("made").exists()
                && !ws.join("newdir").exists()
        );
        assert_eq!(
            read(&ws.join("later")),
            "v3 (the user's)\n",
            "{user:?}: the user's change went"
        );
        assert_eq!(
            read(&ws.join("userdir/mine")),
            "the user's\n",
            "{user:?}: the user's file went"
        );
        assert_eq!(read(&ws.join("was-dir/f")), "dir\n", "{user:?}: the directory is not back");
        // Nothing deleted: what the run wrote is in its `undone/`.
        let undone = scene.home.path().join(".cordon/kept").join(&run_id).join("undone");
        let kept: Vec<String> = std::fs::read_dir(&undone)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(kept.len() >= 4, "{user:?}: {kept:?}");
        let mut again = cordon_command(user, &["undo", &run_id]);
        with_env(&mut again);
        let again: Run = again.output().unwrap().into();
        // Something was left: another try may finish it; what was undone now counts as
        // changed since, and stays as it is.
        assert_eq!(again.code, Some(1), "{}{}", again.stdout, again.stderr);
        assert!(!again.stdout.contains("restored"), "{}", again.stdout);
        assert_eq!(read(&ws.join("edited")), "before\n", "{user:?}");
        // Once nothing is left, a second undo is refused.
        std::fs::remove_dir_all(ws.join("userdir")).unwrap();
        let fresh = repository_scene(user);
        transactional(user, &fresh, "echo new > only").assert_ok();
        let undo_in = |args: &[&str]| -> Run {
            let mut command = cordon_command(user, args);
            command
                .current_dir(fresh.ws.path())
                .env("HOME", fresh.home.path())
                .env("CORDON_HOME", fresh.home.path().join(".cordon"));
            command.output().unwrap().into()
        };
        undo_in(&["undo"]).assert_ok();
        let twice = undo_in(&["undo"]);
        assert_eq!(twice.code, Some(125), "{}", twice.stderr);
        git(ws, &["status", "--short"]).assert_ok();
    }
}

/// cordon killed with SIGKILL while it applies (a harness's timeout), at several moments of the
/// apply: the next run finishes it — every file the command wrote arrives once, with its
/// content, every file it changed has its new content, nothing is left in `runs/` — and
/// `cordon undo` of the finished run still puts back what the run replaced.
#[test]
fn an_apply_killed_at_any_moment_is_finished_by_the_next_run() {
    require_write_layer!();
    let mut interrupted = 0;
    for delay_ms in [0u64, 1, 3, 8, 20] {
        let scene = repository_scene(User::Root);
        let ws = scene.ws.path();
        std::fs::create_dir_all(ws.join("old")).unwrap();
        for i in 0..300 {
            std::fs::write(ws.join(format!("old/f{i}")), "before\n").unwrap();
        }
        let script = "mkdir -p new/a new/b && for i in $(seq 0 1499); do echo $i > new/a/f$i; \
                      echo $i > new/b/f$i; done && for i in $(seq 0 299); do echo after > old/f$i; \
                      done";
        let mut child = transactional_command(User::Root, &scene, script)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let runs = scene.home.path().join(".cordon/runs");
        let applying = || {
            std::fs::read_dir(&runs).into_iter().flatten().flatten().any(|entry| {
                std::fs::read_to_string(entry.path().join("state"))
                    .is_ok_and(|state| state.trim() == "applying")
            })
        };
        let deadline = std::time::Instant::now() + scaled(std::time::Duration::from_secs(60));
        while !applying() && std::time::Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        if applying() {
            interrupted += 1;
        }
        transactional(User::Root, &scene, "true").assert_ok();
        for i in 0..1500 {
            for dir in ["a", "b"] {
                let path = ws.join(format!("new/{dir}/f{i}"));
                assert_eq!(read(&path), format!("{i}\n"), "killed after {delay_ms} ms");
            }
        }
        for i in 0..300 {
            assert_eq!(
                read(&ws.join(format!("old/f{i}"))),
                "after\n",
                "killed after {delay_ms} ms"
            );
        }
        let left: Vec<_> = std::fs::read_dir(&runs).unwrap().flatten().map(|e| e.path()).collect();
        assert!(left.is_empty(), "killed after {delay_ms} ms: {left:?}");
        // The finished run is whole for undo too.
        let runs_kept = scene.home.path().join(".cordon/kept");
        let mut undo = cordon_command(User::Root, &["undo"]);
        undo.current_dir(ws)
            .env("HOME", scene.home.path())
            .env("CORDON_HOME", scene.home.path().join(".cordon"));
        let undo: Run = undo.output().unwrap().into();
        assert!(runs_kept.is_dir());
        assert_eq!(
            undo.code,
            Some(0),
            "killed after {delay_ms} ms: {}{}",
            undo.stdout,
            undo.stderr
        );
        for i in 0..300 {
            assert_eq!(
                read(&ws.join(format!("old/f{i}"))),
                "before\n",
                "killed after {delay_ms} ms"
            );
        }
        assert!(!ws.join("new").exists(), "killed after {delay_ms} ms");
    }
    // The kills came while the apply ran (not after it was done), most of the time.
    assert!(interrupted >= 3, "only {interrupted} of 5 kills stopped an apply");
}

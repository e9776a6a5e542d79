//! Git dirs a command reshapes across runs or past what one search holds: a git dir renamed
//! away and made again under its name, a linked worktree's `modules/` made empty in one run and
//! filled in the next, a new `modules/` wider than this process may hold descriptors for or
//! deeper than its search, a FIFO where git reads `HEAD`. Each plants, then runs git outside
//! the sandbox and looks for the marker, or looks at the disk.

use super::code_runs_later::{
    Scene, git, repository, sandboxed, sandboxed_command, with_submodule_and_outside_worktree,
};
use super::util::*;

/// A scene whose workspace is a repository with one commit, `user`'s.
fn repository_scene(user: User) -> Scene {
    let scene = Scene::for_user(user);
    repository(scene.ws.path());
    if user == User::Nobody {
        chown_nobody(scene.ws.path());
    }
    scene
}

/// A git dir whose files are not bound read-only (an empty one a `.git` pointer names) can be
/// renamed away by the command and a new one made under its name: the new one is cleaned as a
/// repository the command created, though its path was known before the run.
#[test]
fn a_git_dir_renamed_away_and_made_again_under_its_name_is_cleaned() {
    require_mount_view!();
    for user in USERS {
        let scene = repository_scene(user);
        let ws = scene.ws.path();
        let first = sandboxed(
            user,
            ws,
            scene.home.path(),
            "mkdir -p foo b.gitdir && printf 'gitdir: %s/b.gitdir\\n' \"$PWD\" > foo/.git && echo made",
        );
        assert!(first.stdout.contains("made"), "{user:?}: {}\n{}", first.stdout, first.stderr);
        let plant = format!(
            "mv b.gitdir b.old && mkdir b.gitdir && cd b.gitdir && git init -q --bare . && \
             printf '[core]\\n\\tfsmonitor = \"touch {mark}; false\"\\n\\tbare = false\\n\\tworktree = ../foo\\n' >> config && \
             echo planted",
            mark = scene.mark.display()
        );
        let second = sandboxed(user, ws, scene.home.path(), &plant);
        assert!(
            second.stdout.contains("planted"),
            "{user:?}: {}\n{}",
            second.stdout,
            second.stderr
        );
        assert!(second.stderr.contains("moved aside"), "{user:?}: {}", second.stderr);
        // Outside, afterwards: the user's own git in the checkout that points there.
        git(&ws.join("foo"), &["status"]);
        assert!(!scene.mark.exists(), "{user:?}: a config made in a swapped git dir ran outside");
    }
}

/// A linked worktree whose checkout lies outside the writable roots: a `modules/` made empty in
/// its git dir in one run is read-only in the next, like the main git dir's, so neither a new
/// submodule git dir nor a change to an existing one's config can be made there.
#[test]
fn a_linked_worktrees_modules_made_in_one_run_is_read_only_in_the_next() {
    require_mount_view!();
    for user in USERS {
        for initialised in [false, true] {
            let scene = Scene::for_user(user);
            let ws = scene.ws.path();
            let (source, checkout) = with_submodule_and_outside_worktree(&scene);
            let update = ["-c", "protocol.file.allow=always", "submodule", "update", "--init"];
            if initialised {
                git(&checkout, &update).assert_ok();
            }
            if user == User::Nobody {
                chown_nobody(ws);
                chown_nobody(scene.outside.path());
            }
            let case = format!("{user:?}, submodule initialised: {initialised}");
            let first = sandboxed(
                user,
                ws,
                scene.home.path(),
                "mkdir -p .git/worktrees/wt/modules && echo made",
            );
            assert!(first.stdout.contains("made"), "{case}: {}\n{}", first.stdout, first.stderr);
            let plant = if initialised {
                format!(
                    "printf '[core]\\n\\tfsmonitor = \"touch {mark}; false\"\\n' >> .git/worktrees/wt/modules/evil/config",
                    mark = scene.mark.display()
                )
            } else {
                format!(
                    "git -c safe.directory='*' clone -q --bare {src} .git/worktrees/wt/modules/evil && \
                     git --git-dir=.git/worktrees/wt/modules/evil config core.bare false && \
                     printf '#!/bin/sh\\ntouch {mark}\\n' > .git/worktrees/wt/modules/evil/hooks/post-checkout && \
                     chmod +x .git/worktrees/wt/modules/evil/hooks/post-checkout",
                    src = source.display(),
                    mark = scene.mark.display()
                )
            };
            sandboxed(user, ws, scene.home.path(), &plant);
            // Outside, afterwards: the user's own submodule update and status in that checkout.
            git(&checkout, &update);
            git(&checkout, &["status"]);
            assert!(!scene.mark.exists(), "{case}: what was planted for the linked worktree ran");
        }
    }
}

/// `cordon exec` as `user` in `ws`, with the limits of open files `(soft, hard)`.
fn exec_with_open_files(
    user: User,
    (soft, hard): (u32, u32),
    ws: &std::path::Path,
    home: &std::path::Path,
    args: &[&str],
) -> Run {
    // prlimit itself runs as the user: lowering its own limits needs no privilege.
    command_as(user, "prlimit")
        .arg(format!("--nofile={soft}:{hard}"))
        .arg("--")
        .arg(cordon_for(user))
        .args(["exec", "--writes", "direct", "-a", "never", "-C", ws.to_str().unwrap()])
        .args(args)
        .env("HOME", home)
        .env("CORDON_HOME", home.join(".cordon"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
        .into()
}

/// A workspace the command filled with repositories (a few hundred directories shaped like
/// git dirs), each of which cordon watches during a run: every later run still starts, under
/// a soft limit of open files below their number.
#[test]
fn a_workspace_of_many_repositories_still_runs_under_a_low_open_file_limit() {
    require_mount_view!();
    for user in USERS {
        let scene = Scene::for_user(user);
        let ws = scene.ws.path();
        for i in 0..300 {
            let dir = ws.join(format!("r{i}"));
            for sub in ["objects", "refs"] {
                std::fs::create_dir_all(dir.join(sub)).unwrap();
            }
            std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        }
        if user == User::Nobody {
            chown_nobody(ws);
        }
        let run =
            exec_with_open_files(user, (256, 4096), ws, scene.home.path(), &["--", "echo", "ran"]);
        assert_eq!(run.code, Some(0), "{user:?}: {}", run.stderr);
        assert!(run.stdout.contains("ran"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        // Where even the hard limit is too low: refused, saying why.
        let run = exec_with_open_files(user, (200, 200), ws, scene.home.path(), &["--", "true"]);
        assert_eq!(run.code, Some(125), "{user:?}: {}", run.stderr);
        assert!(run.stderr.contains("300 repositories"), "{user:?}: {}", run.stderr);
    }
}

/// A new `modules/` holding more directories than cordon may keep open at once: each is still
/// searched, and the planted hooks moved aside, with the warning naming a few and counting the
/// rest. And a chain of directories too deep to search, under a new linked worktree's
/// `modules/`, is reported as not searched.
#[test]
fn a_wide_or_deep_new_modules_tree_is_searched_or_reported() {
    require_mount_view!();
    const WIDE: usize = 1500;
    for user in USERS {
        let scene = repository_scene(user);
        let ws = scene.ws.path();
        // Each a git dir as far as git's HEAD goes, with a hook; and one whose HEAD is a FIFO
        // (git would hang on it).
        let plant = format!(
            "cd .git && mkdir modules && cd modules && i=0 && while [ $i -lt {WIDE} ]; do \
             mkdir -p m$i/hooks && echo 'ref: refs/heads/main' > m$i/HEAD && \
             printf '#!/bin/sh\\ntouch {mark}\\n' > m$i/hooks/post-checkout && \
             chmod +x m$i/hooks/post-checkout && i=$((i+1)); done && \
             mkdir fifo && mkfifo fifo/HEAD && echo planted",
            mark = scene.mark.display()
        );
        // Fewer descriptors than directories: the search must not hold one per directory.
        let run = exec_with_open_files(
            user,
            (512, 4096),
            ws,
            scene.home.path(),
            &["--", "sh", "-c", &plant],
        );
        assert!(run.stdout.contains("planted"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        let left: Vec<String> = (0..WIDE)
            .map(|i| ws.join(format!(".git/modules/m{i}/hooks/post-checkout")))
            .filter(|hook| hook.exists())
            .map(|hook| hook.display().to_string())
            .collect();
        assert!(
            left.is_empty(),
            "{user:?}: {} hooks left in place, e.g. {:?}",
            left.len(),
            left[0]
        );
        let head = std::fs::symlink_metadata(ws.join(".git/modules/fifo/HEAD"));
        assert!(head.is_err(), "{user:?}: a FIFO where git reads HEAD was left in place");
        assert!(run.stderr.contains("more"), "{user:?}: {}", run.stderr);
        let longest = run.stderr.lines().map(str::len).max().unwrap_or(0);
        assert!(longest < 8192, "{user:?}: a warning line of {longest} bytes");

        // Deeper than the search goes, under a linked worktree's git dir the command made.
        let deep = "mkdir -p .git/worktrees/x/modules && cd .git/worktrees/x/modules && \
                    i=0 && while [ $i -lt 300 ]; do mkdir d && cd d && i=$((i+1)); done && echo planted";
        let run = cordon_command(
            user,
            &[
                "exec",
                "--writes",
                "direct",
                "--json",
                "-a",
                "never",
                "-C",
                ws.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                deep,
            ],
        )
        .env("HOME", scene.home.path())
        .env("CORDON_HOME", scene.home.path().join(".cordon"))
        .output()
        .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        let not_searched = &report["attempts"][0]["not_searched"];
        assert!(
            not_searched.as_array().is_some_and(|dirs| dirs
                .iter()
                .any(|dir| dir.as_str().is_some_and(|d| d.contains("worktrees/x/modules")))),
            "{user:?}: {report}"
        );
    }
}

/// A known git dir with nothing bound in it, moved by the command to be a new checkout's
/// `.git`, or a new checkout whose `.git` names a git dir through a link or a path that
/// leaves the workspace and comes back: what the command planted there is cleaned as in any
/// repository it created.
#[test]
fn a_git_dir_moved_or_named_the_long_way_round_is_cleaned() {
    require_mount_view!();
    for user in USERS {
        let variants = [
            (
                "mkdir -p parked/objects parked/refs && echo 'ref: refs/heads/main' > parked/HEAD",
                "mkdir X && mv parked X/.git && cd X/.git && mkdir -p modules/sub/hooks && \
                 echo 'ref: refs/heads/main' > modules/sub/HEAD && \
                 printf '#!/bin/sh\\ntouch x\\n' > modules/sub/hooks/post-checkout && \
                 chmod +x modules/sub/hooks/post-checkout",
            ),
            (
                "true",
                "mkdir -p .git/evil/objects .git/evil/refs && echo 'ref: refs/heads/main' > .git/evil/HEAD && \
                 ln -s .git/evil lnk && mkdir X && echo 'gitdir: ../lnk' > X/.git && cd .git/evil",
            ),
            (
                "true",
                "mkdir -p .git/evil/objects .git/evil/refs && echo 'ref: refs/heads/main' > .git/evil/HEAD && \
                 mkdir X && printf 'gitdir: %s/../%s/.git/evil\\n' \"$PWD\" \"${PWD##*/}\" > X/.git && cd .git/evil",
            ),
        ];
        for (first, second) in variants {
            let scene = repository_scene(user);
            let ws = scene.ws.path();
            let run = sandboxed(user, ws, scene.home.path(), &format!("{first} && echo made"));
            assert!(run.stdout.contains("made"), "{user:?}: {}\n{}", run.stdout, run.stderr);
            let plant = format!(
                "{second} && printf '[core]\\n\\tfsmonitor = \"touch {mark}; false\"\\n\\tbare = false\\n' > config && \
                 echo planted",
                mark = scene.mark.display()
            );
            let run = sandboxed(user, ws, scene.home.path(), &plant);
            let case = format!("{user:?}: {second}");
            assert!(run.stdout.contains("planted"), "{case}: {}\n{}", run.stdout, run.stderr);
            git(&ws.join("X"), &["status"]);
            assert!(!scene.mark.exists(), "{case}: a config planted there ran outside");
            let hook = ws.join("X/.git/modules/sub/hooks/post-checkout");
            assert!(!hook.exists(), "{case}: a submodule's hook was left in the moved git dir");
        }
    }
}

/// Two runs in one workspace at once: the first moves aside the config it planted in a new
/// repository, which drops the second run's read-only bind on it; what the second then writes
/// there is judged by what the config gained, and moved aside.
#[test]
fn a_config_rewritten_after_another_run_dropped_its_bind_is_moved_aside() {
    require_mount_view!();
    // What the second run writes: git's own form, and a key on a header's line.
    let writes = [
        "git -C N config core.fsmonitor 'touch MARK; false'",
        "printf '[core] fsmonitor = \"touch MARK; false\"\\n' >> N/.git/config",
    ];
    for user in USERS {
        for write in writes {
            let scene = repository_scene(user);
            let ws = scene.ws.path();
            let first = sandboxed_child(
                user,
                ws,
                scene.home.path(),
                "git init -q N && git -C N config core.editor vi && sleep 3",
            );
            std::thread::sleep(std::time::Duration::from_millis(1500));
            let write = write.replace("MARK", &scene.mark.display().to_string());
            let second = sandboxed_child(
                user,
                ws,
                scene.home.path(),
                &format!("sleep 4; {write}; echo second=$?"),
            );
            let first: Run = first.wait_with_output().unwrap().into();
            let second: Run = second.wait_with_output().unwrap().into();
            assert!(first.stderr.contains("moved aside"), "{user:?}: {}", first.stderr);
            git(&ws.join("N"), &["status"]);
            assert!(
                !scene.mark.exists(),
                "{user:?} {write}: the second run's config ran outside: {}\n{}",
                second.stdout,
                second.stderr
            );
        }
    }
}

/// [`sandboxed`], started and not waited for.
fn sandboxed_child(
    user: User,
    ws: &std::path::Path,
    home: &std::path::Path,
    script: &str,
) -> std::process::Child {
    sandboxed_command(user, ws, home, script)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// A git dir with thousands of directories in `worktrees/`: a real linked worktree among them,
/// whose checkout lies outside the workspace, keeps its `commondir` read-only.
#[test]
fn a_linked_worktree_among_thousands_keeps_its_redirection_read_only() {
    require_mount_view!();
    for user in USERS {
        let scene = Scene::for_user(user);
        let ws = scene.ws.path();
        repository(ws);
        let checkout = scene.outside.path().join("wt-zz");
        git(ws, &["worktree", "add", "-q", checkout.to_str().unwrap()]).assert_ok();
        if user == User::Nobody {
            chown_nobody(ws);
            chown_nobody(scene.outside.path());
        }
        let first = sandboxed(
            user,
            ws,
            scene.home.path(),
            "cd .git/worktrees && i=0 && while [ $i -lt 3000 ]; do mkdir d$i; i=$((i+1)); done && echo made",
        );
        assert!(first.stdout.contains("made"), "{user:?}: {}\n{}", first.stdout, first.stderr);
        let plant = format!(
            "mkdir -p .git/evilc && cp -a .git/objects .git/refs .git/HEAD .git/evilc/ && \
             printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {mark}; false\"\\n' > .git/evilc/config; \
             echo ../../evilc > .git/worktrees/wt-zz/commondir; echo wrote=$?",
            mark = scene.mark.display()
        );
        let run = sandboxed(user, ws, scene.home.path(), &plant);
        assert!(!run.stdout.contains("wrote=0"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        git(&checkout, &["status"]);
        assert!(!scene.mark.exists(), "{user:?}: the linked worktree's redirection was rewritten");
    }
}

/// A repository the command creates with a second name for its config (a hard link elsewhere
/// in the workspace, writable where the bind covers only the first in later runs), or left in
/// a paused rebase whose todo runs a command at the user's `git rebase --continue`: both are
/// moved aside after the run.
#[test]
fn a_new_repositorys_aliased_config_and_paused_rebase_are_moved_aside() {
    require_mount_view!();
    for user in USERS {
        let scene = repository_scene(user);
        let ws = scene.ws.path();
        let run = sandboxed(
            user,
            ws,
            scene.home.path(),
            "git init -q N && ln N/.git/config cfg-alias && echo made",
        );
        assert!(run.stdout.contains("made"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        // Already after the run that made it: a user's git while a later run writes through
        // the second name would obey it.
        let config = std::fs::symlink_metadata(ws.join("N/.git/config"));
        let links = config.map(|meta| std::os::unix::fs::MetadataExt::nlink(&meta)).unwrap_or(0);
        assert!(links < 2, "{user:?}: the new config kept its second name: {}", run.stderr);
        let plant = format!(
            "printf '[core]\\n\\tfsmonitor = \"touch {}; false\"\\n' >> cfg-alias; echo planted",
            scene.mark.display()
        );
        let run = sandboxed(user, ws, scene.home.path(), &plant);
        assert!(run.stdout.contains("planted"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        git(&ws.join("N"), &["status"]);
        assert!(!scene.mark.exists(), "{user:?}: a config written through its second name ran");

        let paused = format!(
            "git init -q R && cd R && echo a > a && git add a && \
             git -c user.name=t -c user.email=t@t commit -qm a && echo b > b && git add b && \
             git -c user.name=t -c user.email=t@t commit -qm b && \
             GIT_SEQUENCE_EDITOR='sed -i \"1i break\"' git -c user.name=t -c user.email=t@t \
             rebase -q -i --exec 'touch {}' HEAD~1; echo paused",
            scene.mark.display()
        );
        let run = sandboxed(user, ws, scene.home.path(), &paused);
        assert!(run.stdout.contains("paused"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        git(&ws.join("R"), &["rebase", "--continue"]);
        assert!(!scene.mark.exists(), "{user:?}: a paused rebase's exec line ran outside");
    }
}

/// A linked worktree the command adds, with its checkout where the walk does not look
/// (`node_modules/`): once its redirection is moved aside git takes its git dir for a
/// repository of its own, so a config the command gave it is moved aside too.
#[test]
fn a_linked_worktree_made_during_the_run_is_cleaned_as_a_git_dir() {
    require_mount_view!();
    for user in USERS {
        let scene = repository_scene(user);
        let ws = scene.ws.path();
        let plant = format!(
            "git worktree add -q node_modules/wt && g=.git/worktrees/wt && \
             mkdir -p $g/objects $g/refs && cp -r .git/objects/. $g/objects/ && \
             cp -r .git/refs/. $g/refs/ && \
             printf '[core]\\n\\tfsmonitor = \"touch {}; false\"\\n' > $g/config && echo planted",
            scene.mark.display()
        );
        let run = sandboxed(user, ws, scene.home.path(), &plant);
        assert!(run.stdout.contains("planted"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        git(&ws.join("node_modules/wt"), &["status"]);
        assert!(!scene.mark.exists(), "{user:?}: a config given to a new worktree's git dir ran");
    }
}

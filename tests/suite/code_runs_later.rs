//! Code that runs later: what git (or a shell) would load from a writable root stays out of a
//! sandboxed command's reach — in every repository the root contains, in names that do not
//! exist yet, and in `$HOME`. Each attack plants, then runs git outside the sandbox and looks
//! for the marker.

use std::path::Path;
use std::process::{Command, Stdio};

use super::util::*;

macro_rules! require_mount_view {
    () => {
        require_sandbox!(1);
        skip_unless!(features().mount_view, "this kernel refuses the mount view to the test user");
    };
}

/// `git` with a fixed identity and no global or system config (the test's own, outside).
pub(super) fn git(dir: &Path, args: &[&str]) -> Run {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.test"])
        // The repository may belong to the unprivileged test user: git would refuse to read
        // it as root (and so never run what was planted), which would prove nothing.
        .args(["-c", "safe.directory=*"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into()
}

/// A repository at `dir` with one commit.
pub(super) fn repository(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]).assert_ok();
    std::fs::write(dir.join("f"), "1\n").unwrap();
    git(dir, &["add", "f"]).assert_ok();
    git(dir, &["commit", "-qm", "one"]).assert_ok();
}

/// A workspace, a HOME and a directory outside both for the marker planted code would leave,
/// given to uid 65534 when that is the user.
pub(super) struct Scene {
    pub(super) ws: tempfile::TempDir,
    pub(super) home: tempfile::TempDir,
    pub(super) outside: tempfile::TempDir,
    pub(super) mark: std::path::PathBuf,
}

impl Scene {
    pub(super) fn for_user(user: User) -> Scene {
        let (ws, home, outside) = (scratch(), scratch(), scratch());
        let mark = outside.path().join("marker");
        if user == User::Nobody {
            chown_nobody(ws.path());
            chown_nobody(home.path());
            chown_nobody(outside.path());
        }
        Scene { ws, home, outside, mark }
    }
}

/// `cordon exec -a never -C ws -- sh -c SCRIPT` as `user`, with `home` as HOME.
pub(super) fn sandboxed(user: User, ws: &Path, home: &Path, script: &str) -> Run {
    sandboxed_command(user, ws, home, script).output().unwrap().into()
}

/// The command [`sandboxed`] runs.
pub(super) fn sandboxed_command(user: User, ws: &Path, home: &Path, script: &str) -> Command {
    let mut command = cordon_command(
        user,
        &[
            "exec",
            "--writes",
            "direct",
            "-a",
            "never",
            "-C",
            ws.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    command
        .env("HOME", home)
        .env("CORDON_HOME", home.join(".cordon"))
        .env("GIT_CONFIG_NOSYSTEM", "1");
    command
}

/// A nested repository's config and hooks are as read-only as the root's, as root and as an
/// unprivileged user, while git itself keeps working in it (a commit inside the sandbox).
#[test]
fn a_nested_repository_keeps_its_config_and_hooks_read_only_and_commits_still_work() {
    require_mount_view!();
    for user in USERS {
        let ws = scratch();
        let home = scratch();
        let outside = scratch();
        let mark = outside.path().join("marker");
        repository(ws.path());
        repository(&ws.path().join("vendor/inner"));
        if user == User::Nobody {
            chown_nobody(ws.path());
            chown_nobody(home.path());
            chown_nobody(outside.path());
        }
        let attack = format!(
            "printf '[core]\\n\\tfsmonitor = \"touch {m}; false\"\\n' >> vendor/inner/.git/config; \
             echo config=$?; mkdir -p vendor/inner/.git/hooks; \
             printf '#!/bin/sh\\ntouch {m}\\n' > vendor/inner/.git/hooks/post-commit; echo hook=$?; \
             rm -rf vendor/inner/.git/hooks; echo rmhooks=$?; mv vendor/inner vendor/moved; echo mv=$?; \
             echo 2 > vendor/inner/f && git -C vendor/inner -c user.name=t -c user.email=t@e commit -qam two; \
             echo commit=$?",
            m = mark.display()
        );
        let run = sandboxed(user, ws.path(), home.path(), &attack);
        for step in ["config=0", "hook=0", "rmhooks=0", "mv=0"] {
            assert!(!run.stdout.contains(step), "{user:?}: {step}\n{}\n{}", run.stdout, run.stderr);
        }
        assert!(run.stdout.contains("commit=0"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        git(&ws.path().join("vendor/inner"), &["status"]);
        git(&ws.path().join("vendor/inner"), &["commit", "--allow-empty", "-qm", "three"]);
        assert!(!mark.exists(), "{user:?}: planted code ran outside the sandbox");
    }
}

/// A nested repository under a directory of the caller's own that it cannot list (mode
/// `0311`: searchable, not readable) keeps its config and hooks read-only too: cordon's own
/// search cannot list it as an unprivileged caller, and the helper, which can, searches again.
#[test]
fn a_nested_repository_under_an_unreadable_directory_of_the_callers_keeps_its_hooks_read_only() {
    require_mount_view!();
    skip_unless!(is_root(), "needs root to give the workspace to uid 65534");
    let ws = scratch();
    let home = scratch();
    repository(&ws.path().join("e/sub/repo"));
    chown_nobody(ws.path());
    chown_nobody(home.path());
    std::fs::set_permissions(
        ws.path().join("e"),
        std::os::unix::fs::PermissionsExt::from_mode(0o311),
    )
    .unwrap();
    let attack = "printf '#!/bin/sh\\ntrue\\n' > e/sub/repo/.git/hooks/pre-commit; echo hook=$?; \
                  echo '[core]' >> e/sub/repo/.git/config; echo config=$?";
    // Through cordon exec (a walk handed to the helper), and through `cordon sandbox`, where
    // the helper searches alone: as in its user namespace, which lists the caller's own.
    let through_sandbox = |script: &str| -> Run {
        let args =
            ["sandbox", "linux", "--full-auto", "--writes", "direct", "--", "sh", "-c", script];
        cordon_command(User::Nobody, &args)
            .current_dir(ws.path())
            .env("HOME", home.path())
            .env("CORDON_HOME", home.path().join(".cordon"))
            .output()
            .unwrap()
            .into()
    };
    for run in [sandboxed(User::Nobody, ws.path(), home.path(), attack), through_sandbox(attack)] {
        for step in ["hook=0", "config=0"] {
            assert!(!run.stdout.contains(step), "{step}\n{}\n{}", run.stdout, run.stderr);
        }
        assert!(run.stdout.contains("hook="), "{}\n{}", run.stdout, run.stderr);
        assert!(!ws.path().join("e/sub/repo/.git/hooks/pre-commit").exists());
    }
}

/// A repository the command hides from the search after the run — made inside a directory it
/// then makes unreadable (`0311`: git still enters it by name), or with a hooks directory made
/// unreadable (git still runs a hook by name) — has what it planted moved aside all the same,
/// and the directories keep the mode the command gave them.
#[test]
fn a_repository_hidden_in_an_unreadable_directory_is_still_cleaned_after_the_run() {
    require_mount_view!();
    skip_unless!(is_root(), "needs root to give the workspace to uid 65534");
    let Scene { ws, home, outside: _outside, mark } = Scene::for_user(User::Nobody);
    let attack = format!(
        "plant() {{ git init -q \"$1\" && printf '#!/bin/sh\\ntouch {m}\\n' > \"$1/.git/hooks/pre-commit\" \
           && chmod +x \"$1/.git/hooks/pre-commit\"; }}; \
         mkdir -p hid/repo && plant hid/repo && \
         printf '[core]\\n\\tfsmonitor = \"touch {m}; false\"\\n' >> hid/repo/.git/config && \
         chmod 0311 hid; echo dir=$?; \
         mkdir lone && plant lone && chmod 0311 lone/.git/hooks; echo hooks=$?",
        m = mark.display()
    );
    let run = sandboxed(User::Nobody, ws.path(), home.path(), &attack);
    for step in ["dir=0", "hooks=0"] {
        assert!(
            run.stdout.contains(step),
            "could not even try {step}: {}\n{}",
            run.stdout,
            run.stderr
        );
    }
    assert!(run.stderr.contains("moved aside"), "{}", run.stderr);
    let mode = |path: &str| mode_of(&ws.path().join(path));
    assert_eq!((mode("hid"), mode("lone/.git/hooks")), (0o311, 0o311));
    for repo in ["hid/repo", "lone"] {
        let dir = ws.path().join(repo);
        assert!(!dir.join(".git/hooks/pre-commit").exists(), "{repo}: {}", run.stderr);
        commit_a_file(&dir);
    }
    assert!(!mark.exists(), "planted code ran outside the sandbox: {}", run.stderr);
}

/// The permission bits of `path`.
fn mode_of(path: &Path) -> u32 {
    std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path).unwrap().permissions())
        & 0o7777
}

/// What a user does next in a checkout, outside the sandbox: adds a file, asks for the status
/// and commits — each a moment git runs hooks or obeys its config.
fn commit_a_file(dir: &Path) {
    std::fs::write(dir.join("f"), "1\n").unwrap();
    git(dir, &["add", "f"]);
    git(dir, &["status"]);
    git(dir, &["commit", "-qm", "one"]);
}

/// What a command planted in a directory it then made unwritable (`chmod 0555 .git/hooks`, or
/// the git dir itself around a planted config; git still runs and reads them) is moved aside
/// all the same, and the directories keep the mode the command gave them.
#[test]
fn what_is_planted_in_a_directory_made_unwritable_is_still_moved_aside() {
    require_mount_view!();
    skip_unless!(is_root(), "needs root to give the workspace to uid 65534");
    let Scene { ws, home, outside: _outside, mark } = Scene::for_user(User::Nobody);
    let attack = format!(
        "git init -q h && printf '#!/bin/sh\\ntouch {m}\\n' > h/.git/hooks/pre-commit \
           && chmod +x h/.git/hooks/pre-commit && chmod 0555 h/.git/hooks; echo hooks=$?; \
         git init -q x && printf '#!/bin/sh\\ntouch {m}\\n' > x/.git/hooks/pre-commit \
           && chmod +x x/.git/hooks/pre-commit && chmod 0100 x/.git/hooks; echo search=$?; \
         git init -q c && printf '[core]\\n\\tfsmonitor = \"touch {m}; false\"\\n' >> c/.git/config \
           && chmod 0555 c/.git; echo config=$?",
        m = mark.display()
    );
    let run = sandboxed(User::Nobody, ws.path(), home.path(), &attack);
    for step in ["hooks=0", "search=0", "config=0"] {
        assert!(
            run.stdout.contains(step),
            "could not even try {step}: {}\n{}",
            run.stdout,
            run.stderr
        );
    }
    assert!(!run.stderr.contains("could not be moved"), "{}", run.stderr);
    let mode = |path: &str| mode_of(&ws.path().join(path));
    assert_eq!((mode("h/.git/hooks"), mode("x/.git/hooks"), mode("c/.git")), (0o555, 0o100, 0o555));
    for repo in ["h", "x", "c"] {
        commit_a_file(&ws.path().join(repo));
    }
    assert!(!mark.exists(), "planted code ran outside the sandbox: {}", run.stderr);
}

/// A checkout whose `.git` is a symbolic link to a git dir in a place the search for
/// repositories skips (`node_modules/`, a marked `target/`) has what was planted there moved
/// aside after the run, and its hooks and config read-only in a later run, where commits in it
/// still work: git follows the link from a directory the user works in.
#[test]
fn a_dot_git_link_into_a_skipped_directory_does_not_hide_its_hooks() {
    require_mount_view!();
    for user in USERS {
        let Scene { ws, home, outside: _outside, mark } = Scene::for_user(user);
        let hook = format!("printf '#!/bin/sh\\ntouch {}\\n'", mark.display());
        let first = format!(
            "plant() {{ git init -q --bare \"$1\" && {hook} > \"$1/hooks/pre-commit\" \
               && chmod +x \"$1/hooks/pre-commit\" && mkdir \"$2\" && ln -s \"../$1\" \"$2/.git\" \
               && git -C \"$2\" config core.bare false; }}; \
             mkdir -p node_modules/x target && plant node_modules/x/e.git b && \
             echo 'Signature: 8a477f597d28d172789f06886806bc55' > target/CACHEDIR.TAG && \
             plant target/e.git c; echo first=$?"
        );
        let run = sandboxed(user, ws.path(), home.path(), &first);
        assert!(run.stdout.contains("first=0"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        for checkout in ["b", "c"] {
            let dir = ws.path().join(checkout);
            std::fs::write(dir.join("g"), "1\n").unwrap();
            git(&dir, &["add", "g"]);
            git(&dir, &["commit", "-qm", "outside"]);
        }
        assert!(!mark.exists(), "{user:?}: planted code ran outside the sandbox: {}", run.stderr);
        if user == User::Nobody {
            // The commits above were root's.
            chown_nobody(ws.path());
        }
        let second = format!(
            "{hook} > b/.git/hooks/post-commit; echo hook=$?; \
             cd b && echo 1 > f && git add f && git -c user.name=t -c user.email=t@t commit -qm one; \
             echo commit=$?"
        );
        let run = sandboxed(user, ws.path(), home.path(), &second);
        assert!(!run.stdout.contains("hook=0"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("commit=0"), "{user:?}: {}\n{}", run.stdout, run.stderr);
    }
}

/// A directory the command marks as a cache (`CACHEDIR.TAG`, which the search for repositories
/// skips in a build's `target/`), the workspace's root marked so, or a link from the workspace
/// into `node_modules/` (which the search skips) hides no repository from the search: not in
/// the run that makes it, nor in a later one, when the repository made earlier gets a hook.
#[test]
fn a_cache_mark_does_not_hide_a_repository_from_the_search() {
    require_mount_view!();
    for user in USERS {
        let Scene { ws, home, outside: _outside, mark } = Scene::for_user(user);
        let hook = format!("printf '#!/bin/sh\\ntouch {}\\n'", mark.display());
        // Marks in src/ and at the root itself; a repository in node_modules (which the search
        // skips) reached from src/lib through a link.
        let first = format!(
            "tag='Signature: 8a477f597d28d172789f06886806bc55'; mkdir -p src/app node_modules/x \
             && echo \"$tag\" > src/CACHEDIR.TAG && echo \"$tag\" > CACHEDIR.TAG \
             && git init -q src/app && {hook} > src/app/.git/hooks/pre-commit \
             && chmod +x src/app/.git/hooks/pre-commit && git init -q node_modules/x \
             && {hook} > node_modules/x/.git/hooks/pre-commit \
             && chmod +x node_modules/x/.git/hooks/pre-commit && ln -s ../node_modules/x src/lib; \
             echo first=$?"
        );
        let run = sandboxed(user, ws.path(), home.path(), &first);
        assert!(run.stdout.contains("first=0"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("moved aside"), "{user:?}: {}", run.stderr);
        for dir in ["src/app", "src/lib"] {
            let second = format!("{hook} > {dir}/.git/hooks/post-commit; echo second=$?");
            let run = sandboxed(user, ws.path(), home.path(), &second);
            assert!(
                !run.stdout.contains("second=0"),
                "{user:?} {dir}: {}\n{}",
                run.stdout,
                run.stderr
            );
        }
        for dir in ["src/app", "src/lib"] {
            let repo = ws.path().join(dir);
            std::fs::write(repo.join("f"), "1\n").unwrap();
            git(&repo, &["add", "f"]);
            git(&repo, &["commit", "-qm", "one"]);
            assert!(!mark.exists(), "{user:?}: planted code ran outside the sandbox from {dir}");
        }
    }
}

/// Names git honours that do not exist yet — a `commondir` pointing at a planted config, a
/// `hooks/` directory in a repository made without one, a linked worktree's `commondir`, an
/// `exec` line added to a paused rebase — are moved aside when the command ends, and said so.
#[test]
fn what_git_would_follow_later_is_moved_aside_after_the_run() {
    require_mount_view!();
    for user in USERS {
        moved_aside_after_the_run(user);
    }
}

fn moved_aside_after_the_run(user: User) {
    let ws = scratch();
    let home = scratch();
    let outside = scratch();
    let mark = outside.path().join("marker");
    std::fs::create_dir_all(ws.path().join("empty-template")).unwrap();
    git(
        ws.path(),
        &["init", "-q", "--template", ws.path().join("empty-template").to_str().unwrap()],
    )
    .assert_ok();
    std::fs::write(ws.path().join("f"), "1\n").unwrap();
    git(ws.path(), &["add", "f"]).assert_ok();
    git(ws.path(), &["commit", "-qm", "one"]).assert_ok();
    let git_dir = ws.path().join(".git");
    std::fs::create_dir_all(git_dir.join("rebase-merge")).unwrap();
    std::fs::write(git_dir.join("rebase-merge/git-rebase-todo"), "pick 0000000 one\n").unwrap();
    if user == User::Nobody {
        chown_nobody(ws.path());
        chown_nobody(home.path());
        chown_nobody(outside.path());
    }
    let attack = format!(
        "mkdir .git/x && cp -r .git/objects .git/refs .git/HEAD .git/x/ && \
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {m}; false\"\\n' > .git/x/config && \
         echo x > .git/commondir; echo commondir=$?; \
         mkdir .git/hooks && printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit; \
         echo hooks=$?; \
         mkdir -p .git/worktrees/w && echo x > .git/worktrees/w/commondir; echo worktree=$?; \
         sed -i '1i exec touch {m}' .git/rebase-merge/git-rebase-todo; echo todo=$?",
        m = mark.display()
    );
    let run = sandboxed(user, ws.path(), home.path(), &attack);
    for step in ["commondir=0", "hooks=0", "worktree=0", "todo=0"] {
        assert!(run.stdout.contains(step), "{user:?}: could not even try {step}: {}", run.stdout);
    }
    assert!(run.stderr.contains("moved aside"), "{}", run.stderr);
    for planted in ["commondir", "hooks", "worktrees/w/commondir", "rebase-merge/git-rebase-todo"] {
        assert!(!git_dir.join(planted).exists(), "{planted} stayed: {}", run.stderr);
        assert!(run.stderr.contains(planted), "{planted} not reported: {}", run.stderr);
    }
    git(ws.path(), &["status"]);
    git(ws.path(), &["commit", "--allow-empty", "-qm", "two"]);
    assert!(!mark.exists(), "{user:?}: planted code ran outside the sandbox");
}

/// The same through the executor: the session's result says what was moved.
#[test]
fn an_executor_session_reports_what_it_moved_aside() {
    require_mount_view!();
    let mut ex = super::executor::Executor::start(&[]);
    let work = ex.work.path().to_path_buf();
    git(&work, &["init", "-q"]).assert_ok();
    let text = ex.text("exec_command", serde_json::json!({"cmd": "echo x > .git/commondir"}));
    assert!(text.contains("moved aside") && text.contains("commondir"), "{text}");
    assert!(!work.join(".git/commondir").exists());
}

/// A repository the command creates deeper than the search after the run goes is not looked
/// at; cordon says so, in `cordon exec`'s words and `--json` and in an executor session's
/// result, instead of letting the user believe there was nothing to move aside.
#[test]
fn a_repository_made_beyond_the_search_after_the_run_is_reported() {
    require_mount_view!();
    let deep: String = (0..30).map(|i| format!("d{i}/")).collect();
    let plant = format!(
        "mkdir -p {deep}r && git init -q {deep}r && printf '#!/bin/sh\\ntrue\\n' > \
         {deep}r/.git/hooks/pre-commit && echo planted"
    );
    let ws = scratch();
    let home = scratch();
    let run = sandboxed(User::Root, ws.path(), home.path(), &plant);
    assert!(run.stdout.contains("planted"), "{}", run.stderr);
    let said: Vec<&str> =
        run.stderr.lines().filter(|line| line.contains("not searched after the run")).collect();
    assert_eq!(said.len(), 1, "{}", run.stderr);
    assert!(said[0].contains("/d0/d1/"), "{}", said[0]);
    // The same for --json, with a name that is not UTF-8 on the way (JSON carries it as text).
    let ws = scratch();
    let unprintable = format!("d=$(printf 'a\\377b') && mkdir -p \"$d/{deep}r\" && echo planted");
    let json: Run = cordon_command(
        User::Root,
        &[
            "exec",
            "--writes",
            "direct",
            "--json",
            "-a",
            "never",
            "-C",
            ws.path().to_str().unwrap(),
            "--",
            "sh",
            "-c",
        ],
    )
    .arg(&unprintable)
    .env("HOME", home.path())
    .env("CORDON_HOME", home.path().join(".cordon"))
    .output()
    .unwrap()
    .into();
    assert_eq!(json.code, Some(0), "{}", json.stderr);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let dirs = doc["attempts"][0]["not_searched"].as_array().cloned().unwrap_or_default();
    assert!(!dirs.is_empty(), "{}", json.stdout);
    // A shallow run says nothing of the kind.
    let quiet = sandboxed(User::Root, scratch().path(), home.path(), "git init -q shallow");
    assert!(!quiet.stderr.contains("not searched"), "{}", quiet.stderr);
}

/// A long-lived server follows its roots instead of searching them: a repository a session's
/// command makes deeper than any search goes is looked at after the call all the same, and
/// what it planted there is moved aside — in the directory that held it before the session and
/// in a tree the command made whole. The control: the rest of what the command wrote stays.
#[test]
fn a_servers_index_finds_a_repository_made_beyond_any_search() {
    require_mount_view!();
    let mut ex = super::executor::Executor::start(&[]);
    let work = ex.work.path().to_path_buf();
    let deep: String = (0..30).map(|i| format!("d{i}/")).collect();
    std::fs::create_dir_all(work.join(&deep)).unwrap();
    // The first call makes the index; the planting comes in the next ones.
    let first = ex.text("exec_command", serde_json::json!({"cmd": "true"}));
    assert!(first.contains("exited with code 0"), "{first}");
    for (dir, at) in
        [(deep.clone(), "an existing directory"), (format!("new/{deep}"), "a new tree")]
    {
        let plant = format!(
            "mkdir -p {dir}r && git init -q {dir}r && printf '#!/bin/sh\\ntouch {mark}\\n' > \
             {dir}r/.git/hooks/pre-commit && chmod +x {dir}r/.git/hooks/pre-commit && \
             git -C {dir}r config core.fsmonitor 'touch {mark}' && echo kept > {dir}kept && \
             echo planted",
            mark = work.join("ran").display()
        );
        let text = ex.text("exec_command", serde_json::json!({"cmd": plant}));
        assert!(text.contains("planted"), "{at}: {text}");
        assert!(!text.contains("not searched"), "{at}: {text}");
        assert!(text.contains("moved aside") && text.contains("pre-commit"), "{at}: {text}");
        let repo = work.join(&dir).join("r");
        assert!(!repo.join(".git/hooks/pre-commit").exists(), "{at}: the hook stayed");
        assert_eq!(std::fs::read_to_string(work.join(&dir).join("kept")).unwrap(), "kept\n");
        git(&repo, &["status", "--short"]).assert_ok();
        git(&repo, &["commit", "--allow-empty", "-qm", "x"]).assert_ok();
        assert!(!work.join("ran").exists(), "{at}: planted code ran outside the sandbox");
    }
}

/// `HEAD`, `objects/` and `refs/` make any directory look like a git dir; the search goes on
/// below one all the same: neither a repository the command makes beneath it nor the user's
/// own nested repository there leaves the search (at the workspace's top or deeper).
#[test]
fn a_directory_shaped_like_a_git_dir_hides_no_repository_below_it() {
    require_mount_view!();
    for user in USERS {
        let scene = Scene::for_user(user);
        let ws = scene.ws.path();
        repository(ws);
        repository(&ws.join("vendor/lib"));
        if user == User::Nobody {
            chown_nobody(ws);
        }
        let hook = |at: &str| {
            format!(
                "printf '#!/bin/sh\\ntouch {}\\n' > {at}/.git/hooks/pre-commit; chmod +x {at}/.git/hooks/pre-commit",
                scene.mark.display()
            )
        };
        // The top shaped like a git dir, and a new repository below it with a hook.
        let shape = |dir: &str| {
            format!("mkdir -p {dir}/objects {dir}/refs && echo 'ref: refs/heads/main' > {dir}/HEAD")
        };
        let first = format!(
            "{}; {}; mkdir -p src/app && git init -q src/app && {} && echo planted",
            shape("."),
            shape("vendor"),
            hook("src/app")
        );
        let run = sandboxed(user, ws, scene.home.path(), &first);
        assert!(run.stdout.contains("planted"), "{user:?}: {}", run.stderr);
        // The next run: the user's own nested repository keeps its hooks read-only.
        let second = format!("{} 2>/dev/null; echo done", hook("vendor/lib"));
        let run = sandboxed(user, ws, scene.home.path(), &second);
        assert!(run.stdout.contains("done"), "{user:?}: {}", run.stderr);
        for checkout in ["src/app", "vendor/lib"] {
            git(&ws.join(checkout), &["commit", "--allow-empty", "-qm", "x"]);
            assert!(!scene.mark.exists(), "{user:?}: a hook planted in {checkout} ran outside");
        }
        // A bare repository whose `objects` is a link (git follows it) is one all the same.
        let bare = format!(
            "git init -q --bare m.git && printf '#!/bin/sh\ntouch {}\n' > m.git/hooks/reference-transaction && \
             chmod +x m.git/hooks/reference-transaction && mv m.git/objects m.git/o && \
             ln -s o m.git/objects && echo made",
            scene.mark.display()
        );
        let run = sandboxed(user, ws, scene.home.path(), &bare);
        assert!(run.stdout.contains("made"), "{user:?}: {}", run.stderr);
        let fetched = ws.join("vendor/lib").display().to_string();
        git(&ws.join("m.git"), &["fetch", "-q", &fetched, "HEAD:refs/heads/x"]);
        assert!(
            !scene.mark.exists(),
            "{user:?}: a hook planted in a linked-objects repository ran"
        );
    }
}

/// A submodule git dir the command adds under a new `.git/modules/` is a repository it created,
/// even when it removed the checkout that would lead the search there: the user's next `git
/// submodule update` reuses the git dir, and a hook planted in it is moved aside — whatever the
/// module is named (`node_modules/…`, under a marked `target/`), whatever marks the git dir,
/// with `modules` a link, `objects` a link, or in a repository the command made itself.
#[test]
fn a_submodule_git_dir_the_command_adds_is_cleaned_without_its_checkout() {
    require_mount_view!();
    const MARK: &str = "Signature: 8a477f597d28d172789f06886806bc55";
    // (name of the module, made before, made after the hook, directory of the repository)
    let variants = [
        ("evil", String::new(), "", "."),
        ("evil", format!("printf '{MARK}' > .git/CACHEDIR.TAG"), "", "."),
        ("node_modules/evil", "mkdir -p .git/modules/node_modules".to_owned(), "", "."),
        (
            "x/target/evil",
            format!(
                "mkdir -p .git/modules/x/target && printf '{MARK}' > .git/modules/x/target/CACHEDIR.TAG"
            ),
            "",
            ".",
        ),
        (
            "evil",
            "mkdir -p node_modules/.m && ln -s ../node_modules/.m .git/modules".to_owned(),
            "",
            ".",
        ),
        (
            "evil",
            String::new(),
            "mv .git/modules/evil/objects .git/modules/evil/o && ln -s o .git/modules/evil/objects &&",
            ".",
        ),
        ("evil", "mkdir sub && cd sub && git init -q .".to_owned(), "", "sub"),
    ];
    for user in USERS {
        for (name, pre, post, repo) in &variants {
            let scene = Scene::for_user(user);
            let ws = scene.ws.path();
            repository(ws);
            let source = scene.outside.path().join("source");
            repository(&source);
            if user == User::Nobody {
                chown_nobody(ws);
                chown_nobody(scene.outside.path());
            }
            // The module's git dir made as `git submodule add` makes it, its checkout then
            // removed; .gitmodules names it for the user's `git submodule update`.
            let plant = format!(
                "{pre}
                 mkdir -p .git/modules && \
                 git -c safe.directory='*' clone -q --separate-git-dir .git/modules/{name} {src} evil && \
                 printf '#!/bin/sh\\ntouch {mark}\\n' > .git/modules/{name}/hooks/post-checkout && \
                 chmod +x .git/modules/{name}/hooks/post-checkout && {post} rm -rf evil && \
                 printf '[submodule \"{name}\"]\\n\\tpath = evil\\n\\turl = {src}\\n' > .gitmodules && \
                 echo planted",
                src = source.display(),
                mark = scene.mark.display()
            );
            let run = sandboxed(user, ws, scene.home.path(), &plant);
            let case = format!("{user:?} {name} / {pre} / {post}");
            assert!(run.stdout.contains("planted"), "{case}: {}\n{}", run.stdout, run.stderr);
            assert!(run.stderr.contains("moved aside"), "{case}: {}", run.stderr);
            // Outside, afterwards: the user's own submodule update.
            let top = ws.join(repo);
            git(&top, &["add", ".gitmodules"]);
            let entry = format!("160000,{},evil", head(&source));
            git(&top, &["update-index", "--add", "--cacheinfo", &entry]);
            git(
                &top,
                &["-c", "protocol.file.allow=always", "submodule", "update", "--init", "evil"],
            );
            assert!(!scene.mark.exists(), "{case}: a hook planted in a new submodule ran outside");
        }
    }
}

/// The same for a linked worktree whose checkout lies outside the writable roots: its own git
/// dir (`.git/worktrees/NAME`) is in the workspace, and a `modules/` the command adds there is
/// what the user's `git submodule update` in that checkout reuses.
#[test]
fn a_linked_worktrees_new_modules_are_cleaned_when_its_checkout_is_elsewhere() {
    require_mount_view!();
    for user in USERS {
        let scene = Scene::for_user(user);
        let ws = scene.ws.path();
        let (source, checkout) = with_submodule_and_outside_worktree(&scene);
        if user == User::Nobody {
            chown_nobody(ws);
            chown_nobody(scene.outside.path());
        }
        let plant = format!(
            "mkdir -p .git/worktrees/wt/modules && git -c safe.directory='*' clone -q --separate-git-dir .git/worktrees/wt/modules/evil {src} \
             /tmp/evil-$$ && rm -rf /tmp/evil-$$ && \
             printf '#!/bin/sh\\ntouch {mark}\\n' > .git/worktrees/wt/modules/evil/hooks/post-checkout && \
             chmod +x .git/worktrees/wt/modules/evil/hooks/post-checkout && echo planted",
            src = source.display(),
            mark = scene.mark.display()
        );
        let run = sandboxed(user, ws, scene.home.path(), &plant);
        assert!(run.stdout.contains("planted"), "{user:?}: {}\n{}", run.stdout, run.stderr);
        git(
            &checkout,
            &["-c", "protocol.file.allow=always", "submodule", "update", "--init", "evil"],
        );
        assert!(!scene.mark.exists(), "{user:?}: a hook planted for the linked worktree ran");
    }
}

/// The scene's workspace as a repository with a submodule `evil` (from `source`, outside, not
/// checked out) and a linked worktree `wt` whose checkout lies outside; returns both paths.
pub(super) fn with_submodule_and_outside_worktree(
    scene: &Scene,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let ws = scene.ws.path();
    let source = scene.outside.path().join("source");
    repository(&source);
    repository(ws);
    std::fs::write(
        ws.join(".gitmodules"),
        format!("[submodule \"evil\"]\n\tpath = evil\n\turl = {}\n", source.display()),
    )
    .unwrap();
    git(ws, &["add", ".gitmodules"]).assert_ok();
    let entry = format!("160000,{},evil", head(&source));
    git(ws, &["update-index", "--add", "--cacheinfo", &entry]).assert_ok();
    git(ws, &["commit", "-qm", "submodule"]).assert_ok();
    let checkout = scene.outside.path().join("wt");
    git(ws, &["worktree", "add", "-q", checkout.to_str().unwrap()]).assert_ok();
    (source, checkout)
}

/// The commit `dir`'s HEAD names.
pub(super) fn head(dir: &Path) -> String {
    git(dir, &["rev-parse", "HEAD"]).stdout.trim().to_owned()
}

/// A writable root that is `$HOME` (or contains it) is refused unless the user allows it; a
/// root inside `$HOME` keeps the start-up files under it read-only, judged by their place in
/// `$HOME` (`--add-dir ~/.config` does not open `~/.config/git/config`).
#[test]
fn home_as_a_writable_root_is_refused_and_start_up_files_under_home_stay_read_only() {
    require_mount_view!();
    let home = scratch();
    std::fs::create_dir_all(home.path().join(".config/git")).unwrap();
    std::fs::write(home.path().join(".config/git/config"), "").unwrap();
    std::fs::create_dir_all(home.path().join(".local/bin")).unwrap();
    let refused = sandboxed(User::Root, home.path(), home.path(), "true");
    assert_eq!(refused.code, Some(125), "{}", refused.stderr);
    assert!(refused.stderr.contains("--allow-home-root"), "{}", refused.stderr);
    // A HOME that does not exist stands for the password database's home.
    if let Some(user) = nix::unistd::User::from_uid(nix::unistd::getuid()).ok().flatten() {
        let real = user.dir.to_str().unwrap().to_owned();
        let refused: Run = cordon_command(
            User::Root,
            &["exec", "--writes", "direct", "-a", "never", "-C", &real, "--", "true"],
        )
        .env("HOME", home.path().join("missing"))
        .output()
        .unwrap()
        .into();
        assert_eq!(refused.code, Some(125), "{}", refused.stderr);
    }
    let ws = scratch();
    let config = home.path().join(".config");
    // `.config` as a root is sealed: its existing entries are writable, nothing new is.
    std::fs::create_dir_all(config_app(home.path())).unwrap();
    let script = format!(
        "echo '[core] pager = touch x' >> {c}/git/config; echo config=$?; \
         touch {c}/git/new; echo new=$?; echo x > {h}/.local/bin/git; echo bin=$?; \
         touch {c}/autostart; echo sealed=$?; touch {c}/app/ok; echo ok=$?",
        c = config.display(),
        h = home.path().display()
    );
    let run: Run = cordon_command(
        User::Root,
        &[
            "exec",
            "--writes",
            "direct",
            "-a",
            "never",
            "--add-dir",
            config.to_str().unwrap(),
            "--add-dir",
            home.path().join(".local").to_str().unwrap(),
            "-C",
            ws.path().to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ],
    )
    .env("HOME", home.path())
    .output()
    .unwrap()
    .into();
    for step in ["config=0", "new=0", "bin=0", "sealed=0"] {
        assert!(!run.stdout.contains(step), "{step}: {}\n{}", run.stdout, run.stderr);
    }
    assert!(run.stdout.contains("ok=0"), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(std::fs::read_to_string(home.path().join(".config/git/config")).unwrap(), "");
    assert!(!home.path().join(".config/autostart").exists());
}

fn config_app(home: &Path) -> std::path::PathBuf {
    home.join(".config/app")
}

/// `$HOME` allowed as a writable root (`--allow-home-root`) is sealed: its existing plain
/// entries stay writable, but nothing new appears at its top level, and no dot entry
/// (`.bashrc`, `.config/…`, `.local/…`) is writable, nor its entries renamed — as root and as an unprivileged user, with the
/// mount view and with Landlock alone. Checked from outside: a login shell and git, run
/// afterwards, find no marker, and the listing of `$HOME` is unchanged but for what the
/// command wrote into existing entries.
#[test]
fn home_allowed_as_a_root_is_sealed_with_and_without_the_mount_view() {
    require_sandbox!(1);
    for user in USERS {
        let views: &[&[&str]] = if features().mount_view {
            &[&[], &["--no-mount-view", "--best-effort"]]
        } else {
            &[&["--no-mount-view", "--best-effort"]]
        };
        for view in views {
            let home = scratch();
            let outside = scratch();
            let mark = outside.path().join("marker");
            std::fs::create_dir_all(home.path().join("project")).unwrap();
            std::fs::create_dir_all(config_app(home.path())).unwrap();
            std::fs::create_dir_all(home.path().join(".local/share")).unwrap();
            std::fs::write(home.path().join(".bashrc"), "# user's own\n").unwrap();
            std::fs::write(home.path().join("notes"), "1\n").unwrap();
            // What start-up files load, existing: rustup's env, ~/bin on PATH, a vim plugin
            // directory, and a dotfiles repository that ~/.config links into.
            std::fs::create_dir_all(home.path().join(".cargo")).unwrap();
            std::fs::write(home.path().join(".cargo/env"), "# rustup\n").unwrap();
            std::fs::create_dir_all(home.path().join("bin")).unwrap();
            std::fs::create_dir_all(home.path().join(".vim/plugin")).unwrap();
            std::fs::create_dir_all(home.path().join("dotfiles/config")).unwrap();
            std::fs::write(home.path().join("dotfiles/README"), "").unwrap();
            std::os::unix::fs::symlink("dotfiles/config", home.path().join(".xdg")).unwrap();
            if user == User::Nobody {
                chown_nobody(home.path());
                chown_nobody(outside.path());
            }
            let before = listing(home.path());
            let plant = format!("touch {}", mark.display());
            let attack = format!(
                "for f in .bash_profile .zshenv .profile new .config/autostart .local/bin; do \
                   (echo '{plant}' > $f) 2>/dev/null && echo \"planted $f\"; \
                 done; mkdir .config/systemd 2>/dev/null && echo planted systemd; \
                 echo '{plant}' >> .bashrc 2>/dev/null && echo planted bashrc; \
                 mv notes .bash_login 2>/dev/null && echo planted rename; \
                 echo 2 >> notes && echo wrote notes; touch project/ok && echo wrote project; \
                 touch .config/app/ok 2>/dev/null && echo planted config; \
                 touch .local/share/ok 2>/dev/null && echo planted share; \
                 echo '{plant}' >> .cargo/env 2>/dev/null && echo planted cargo-env; \
                 echo '{plant}' > bin/git 2>/dev/null && echo planted bin; \
                 echo '{plant}' > .vim/plugin/x.vim 2>/dev/null && echo planted vim; \
                 mkdir dotfiles/config/git 2>/dev/null && echo planted dotfiles; \
                 echo ok >> dotfiles/README && echo wrote dotfiles"
            );
            let mut args = vec!["exec", "--writes", "direct", "-a", "never", "--allow-home-root"];
            args.extend_from_slice(view);
            args.extend(["-C", home.path().to_str().unwrap(), "--", "sh", "-c", &attack]);
            let run: Run = cordon_command(user, &args)
                .env("HOME", home.path())
                .env("CORDON_HOME", outside.path().join("cordon-home"))
                .output()
                .unwrap()
                .into();
            let what = format!("{user:?} {view:?}: {}\n{}", run.stdout, run.stderr);
            assert!(!run.stdout.contains("planted"), "{what}");
            for wrote in ["notes", "project", "dotfiles"] {
                assert!(run.stdout.contains(&format!("wrote {wrote}")), "{wrote}: {what}");
            }
            // From outside, afterwards: a login shell and git in $HOME.
            Command::new("bash")
                .args(["-lc", "true"])
                .env("HOME", home.path())
                .env_remove("BASH_ENV")
                .stdin(Stdio::null())
                .output()
                .unwrap();
            git(home.path(), &["status"]);
            assert!(!mark.exists(), "{what}: planted code ran outside");
            let after = listing(home.path());
            let new: Vec<&String> = after.iter().filter(|p| !before.contains(p)).collect();
            let expected = ["project/ok"];
            assert!(new.iter().all(|p| expected.contains(&p.as_str())), "{what}\nnew: {new:?}");
            assert_eq!(
                std::fs::read_to_string(home.path().join(".bashrc")).unwrap(),
                "# user's own\n"
            );
        }
    }
}

/// Every path under `dir`, relative, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            out.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.symlink_metadata().unwrap().is_dir() {
                pending.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Everyday git still works inside the sandbox, in the workspace's repository and a nested
/// one — commit, branch, stash, rebase — and leaves nothing of cordon's behind.
#[test]
fn commit_branch_stash_and_rebase_still_work_top_level_and_nested() {
    require_mount_view!();
    let ws = scratch();
    let home = scratch();
    repository(ws.path());
    repository(&ws.path().join("vendor/inner"));
    let work = "set -e; g() { git -c user.name=t -c user.email=t@e \"$@\"; }; \
        for r in . vendor/inner; do (cd $r; \
          g checkout -qb topic; echo 2 > f; g commit -qam two; \
          echo 3 > f; g stash -q; g stash pop -q; g commit -qam three; \
          g checkout -q -; echo other > g; g add g; g commit -qm other; \
          g rebase -q topic; g branch -q done); done; echo all-ok";
    let run = sandboxed(User::Root, ws.path(), home.path(), work);
    assert!(run.stdout.contains("all-ok"), "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("moved aside"), "{}", run.stderr);
    for repo in [ws.path().to_path_buf(), ws.path().join("vendor/inner")] {
        let log = git(&repo, &["log", "--oneline", "done"]);
        assert_eq!(log.stdout.lines().count(), 4, "{repo:?}: {}", log.stdout);
        let planted = std::fs::read_dir(repo.join(".git"))
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().contains("cordon"));
        assert!(!planted, "{repo:?}: cordon left something in .git");
    }
}

/// Other ways around the watch: a `/tmp` (here `$TMPDIR`) filled with directories does not
/// spend the workspace's search; `exec<TAB>` counts as an exec line; names squatted where the
/// planted file would be moved do not keep it in place; `core.hooksPath` inside the workspace
/// is read-only; a start-up directory created under an `--add-dir` inside `$HOME` is moved aside.
#[test]
fn the_watch_holds_against_a_full_tmpdir_tabs_squatters_hooks_path_and_new_start_up_dirs() {
    require_mount_view!();
    let ws = scratch();
    let home = scratch();
    let tmp = scratch();
    let outside = scratch();
    let mark = outside.path().join("marker");
    repository(ws.path());
    git(ws.path(), &["config", "core.hooksPath", ".husky/_"]).assert_ok();
    std::fs::create_dir_all(ws.path().join(".husky/_")).unwrap();
    std::fs::create_dir_all(home.path().join(".config")).unwrap();
    let git_dir = ws.path().join(".git");
    std::fs::create_dir_all(git_dir.join("rebase-merge")).unwrap();
    std::fs::write(git_dir.join("rebase-merge/git-rebase-todo"), "pick 0000000 one\n").unwrap();
    let run = |script: &str| -> Run {
        cordon_command(
            User::Root,
            &[
                "exec",
                "--writes",
                "direct",
                "-a",
                "never",
                "--add-dir",
                home.path().join(".config").to_str().unwrap(),
                "-C",
                ws.path().to_str().unwrap(),
                "--",
                "sh",
                "-c",
                script,
            ],
        )
        .env("HOME", home.path())
        .env("TMPDIR", tmp.path())
        .env("CORDON_HOME", outside.path().join("cordon-home"))
        .output()
        .unwrap()
        .into()
    };
    // 25 000 empty directories in $TMPDIR, a root searched before the workspace.
    run("cd \"$TMPDIR\" && mkdir junk && cd junk && seq 25000 | xargs mkdir").assert_ok();
    let attack = format!(
        "printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/post-commit; echo hook=$?; \
         printf '#!/bin/sh\\ntouch {m}\\n' > .husky/_/post-commit; echo husky=$?; \
         printf 'exec\\ttouch {m}\\n' | cat - .git/rebase-merge/git-rebase-todo > t && \
         cat t > .git/rebase-merge/git-rebase-todo; \
         for i in $(seq 0 50); do mkdir -p .git/commondir.cordon-planted-$i/x; done; \
         echo x > .git/commondir; \
         mkdir -p {c}/git && printf '[core]\\n\\tpager = touch {m}\\n' > {c}/git/config; echo ok",
        m = mark.display(),
        c = home.path().join(".config").display()
    );
    let out = run(&attack);
    assert!(out.stdout.contains("ok"), "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains("hook=0"), "the workspace's hooks were writable: {}", out.stdout);
    assert!(!out.stdout.contains("husky=0"), "core.hooksPath was writable: {}", out.stdout);
    for planted in [".git/commondir", ".git/rebase-merge/git-rebase-todo"] {
        assert!(!ws.path().join(planted).exists(), "{planted} stayed: {}", out.stderr);
    }
    assert!(!home.path().join(".config/git").exists(), "~/.config/git stayed: {}", out.stderr);
}

/// An executor session that plants and is then shut down (no later result) still has what it
/// planted moved aside.
#[test]
fn a_session_shut_down_without_a_last_result_still_has_its_planting_moved_aside() {
    require_mount_view!();
    let mut ex = super::executor::Executor::start(&[]);
    let work = ex.work.path().to_path_buf();
    git(&work, &["init", "-q"]).assert_ok();
    let text = ex.text(
        "exec_command",
        serde_json::json!({"cmd": "sleep 0.5; echo x > .git/commondir; sleep 300", "yield_time_ms": 250}),
    );
    assert!(text.contains("Process running"), "{text}");
    // The command plants half a second after it starts (later on a slow machine).
    let deadline = std::time::Instant::now() + scaled(std::time::Duration::from_secs(10));
    while !work.join(".git/commondir").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(work.join(".git/commondir").exists(), "the command did not plant");
    ex.send(&serde_json::json!({"type": "shutdown", "requestId": "end"}));
    ex.wait_for(std::time::Duration::from_secs(10), |v| v["type"] == "shutdown_response");
    let _ = ex.child.wait();
    assert!(!work.join(".git/commondir").exists(), "the planted commondir stayed");
}

/// A watched git dir swapped for a link to a directory elsewhere during the run: cordon moves
/// nothing there (it renames only within the directories it opened before the run).
#[test]
fn a_git_dir_swapped_for_a_link_never_makes_cordon_rename_elsewhere() {
    require_mount_view!();
    let ws = scratch();
    let home = scratch();
    let victim = scratch();
    std::fs::create_dir_all(victim.path().join("hooks")).unwrap();
    std::fs::write(victim.path().join("config"), "x\n").unwrap();
    for dir in ["b/objects", "b/refs"] {
        std::fs::create_dir_all(ws.path().join(dir)).unwrap();
    }
    std::fs::write(ws.path().join("b/HEAD"), "ref: refs/heads/main\n").unwrap();
    let swap = format!("mv b b.old && ln -s {} b; echo swapped=$?", victim.path().display());
    let run = sandboxed(User::Root, ws.path(), home.path(), &swap);
    assert!(run.stdout.contains("swapped=0"), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(std::fs::read_to_string(victim.path().join("config")).unwrap(), "x\n");
    assert!(victim.path().join("hooks").is_dir());
    let names: Vec<String> = std::fs::read_dir(victim.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains("cordon")), "{names:?}");
}

/// Other spellings of a planted rebase or sequencer state: an existing `exec` line reworded, a
/// todo replaced by a link, a linked worktree's own rebase state and `sequencer/opts` are moved
/// aside; the user's own change to an existing config during a run is not.
#[test]
fn reworded_or_linked_todos_worktree_rebase_state_and_sequencer_opts_are_moved_aside() {
    require_mount_view!();
    let ws = scratch();
    let home = scratch();
    repository(ws.path());
    let git_dir = ws.path().join(".git");
    std::fs::create_dir_all(git_dir.join("rebase-merge")).unwrap();
    std::fs::write(git_dir.join("rebase-merge/git-rebase-todo"), "exec echo legit\n").unwrap();
    std::fs::create_dir_all(git_dir.join("sequencer")).unwrap();
    let worktree = ws.path().join("wt");
    git(ws.path(), &["worktree", "add", "-q", worktree.to_str().unwrap(), "-b", "feat"])
        .assert_ok();
    let wt_git = git_dir.join("worktrees/wt");
    std::fs::create_dir_all(wt_git.join("rebase-merge")).unwrap();
    std::fs::write(wt_git.join("rebase-merge/git-rebase-todo"), "pick 0000000 one\n").unwrap();
    let attack = "sed -i 's/exec echo legit/exec touch planted/' .git/rebase-merge/git-rebase-todo; \
        printf 'exec touch planted\\n' > .git/worktrees/wt/rebase-merge/t && \
        mv -f .git/worktrees/wt/rebase-merge/t .git/worktrees/wt/rebase-merge/git-rebase-todo; \
        printf '[options]\\n\\tstrategy = ../evil\\n' > .git/sequencer/opts; \
        printf 'exec touch planted\\n' > evil && ln -sf ../../evil .git/rebase-merge/link; echo ok";
    let run = sandboxed(User::Root, ws.path(), home.path(), attack);
    assert!(run.stdout.contains("ok"), "{}\n{}", run.stdout, run.stderr);
    for planted in [
        ".git/rebase-merge/git-rebase-todo",
        ".git/worktrees/wt/rebase-merge/git-rebase-todo",
        ".git/sequencer/opts",
    ] {
        assert!(!ws.path().join(planted).exists(), "{planted} stayed: {}", run.stderr);
    }

    // A todo replaced by a link to a file outside git's view.
    std::fs::write(git_dir.join("rebase-merge/git-rebase-todo"), "pick 0000000 one\n").unwrap();
    let link = "printf 'exec touch planted\\n' > evil2; \
        ln -s ../../evil2 .git/rebase-merge/t && mv -f .git/rebase-merge/t .git/rebase-merge/git-rebase-todo";
    let run = sandboxed(User::Root, ws.path(), home.path(), link);
    assert!(
        std::fs::symlink_metadata(git_dir.join("rebase-merge/git-rebase-todo")).is_err(),
        "the linked todo stayed: {}",
        run.stderr
    );

    // The user's own `git config` while a run is under way stays.
    let mut running = cordon_command(
        User::Root,
        &[
            "exec",
            "--writes",
            "direct",
            "-a",
            "never",
            "-C",
            ws.path().to_str().unwrap(),
            "--",
            "sleep",
            "2",
        ],
    )
    .env("HOME", home.path())
    .env("CORDON_HOME", home.path().join(".cordon"))
    .spawn()
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    git(ws.path(), &["config", "user.name", "Mine"]).assert_ok();
    running.wait().unwrap();
    let config = std::fs::read_to_string(git_dir.join("config")).unwrap_or_default();
    assert!(config.contains("Mine"), "the user's own config was moved aside: {config}");
}

/// A repository the command creates (`git init`, a clone, a directory shaped like a bare
/// repository) keeps what `git init` and `git clone` write, and loses — moved aside, reported —
/// a config that would run code, a live hook and a redirection: git run later outside the
/// sandbox in it runs nothing planted. As root and as uid 65534.
#[test]
fn a_repository_the_command_creates_keeps_only_what_init_and_clone_write() {
    require_mount_view!();
    for user in USERS {
        let ws = scratch();
        let home = scratch();
        let outside = scratch();
        let source = outside.path().join("source");
        repository(&source);
        let mark = outside.path().join("marker");
        if user == User::Nobody {
            chown_nobody(ws.path());
            chown_nobody(home.path());
            chown_nobody(outside.path());
        }
        let plant = format!("touch {}", mark.display());
        let attack = format!(
            "git init -q planted && git -C planted config core.fsmonitor '{plant}; false' && \
             printf '#!/bin/sh\\n{plant}\\n' > planted/.git/hooks/post-checkout && \
             chmod +x planted/.git/hooks/post-checkout && echo planted=ok; \
             git init -q hooked && printf '#!/bin/sh\\n{plant}\\n' > hooked/.git/hooks/pre-commit && \
             chmod +x hooked/.git/hooks/pre-commit && echo hooked=ok; \
             mkdir -p bare/objects bare/refs && echo 'ref: refs/heads/main' > bare/HEAD && \
             printf '[core]\\n\\tbare = true\\n\\tfsmonitor = \"{plant}; false\"\\n' > bare/config && echo bare=ok; \
             git -c safe.directory='*' clone -q {src} clone && git -C clone config user.name someone && echo clone=ok",
            src = source.display()
        );
        let run = sandboxed(user, ws.path(), home.path(), &attack);
        for step in ["planted=ok", "hooked=ok", "bare=ok", "clone=ok"] {
            assert!(run.stdout.contains(step), "{user:?}: {step}: {}\n{}", run.stdout, run.stderr);
        }
        assert!(run.stderr.contains("moved aside"), "{user:?}: {}", run.stderr);
        // From outside, afterwards.
        git(&ws.path().join("planted"), &["status"]);
        git(&ws.path().join("hooked"), &["commit", "--allow-empty", "-qm", "x"]);
        Command::new("git")
            .args(["-c", "safe.directory=*", "--git-dir"])
            .arg(ws.path().join("bare"))
            .args(["status"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        git(&ws.path().join("clone"), &["status"]);
        assert!(!mark.exists(), "{user:?}: planted code ran outside the sandbox");
        // What init and clone wrote stays: the clone still knows its origin.
        let origin = git(&ws.path().join("clone"), &["config", "remote.origin.url"]);
        assert!(origin.stdout.contains("source"), "{user:?}: {}{}", origin.stdout, origin.stderr);
        assert!(ws.path().join("hooked/.git/config").exists(), "{user:?}: a plain config moved");
    }
}

/// Without Landlock (a kernel without it, a container's seccomp profile) and with best effort,
/// a sealed `$HOME` still takes no new entry and no write to a dot entry: the mount view then
/// binds its granted entries one by one.
#[test]
fn a_sealed_home_holds_through_the_mount_view_when_landlock_is_missing() {
    require_mount_view!();
    let home = scratch();
    std::fs::create_dir_all(home.path().join("project")).unwrap();
    std::fs::write(home.path().join(".profile"), "# mine\n").unwrap();
    std::fs::create_dir_all(home.path().join(".cargo")).unwrap();
    std::fs::write(home.path().join(".cargo/env"), "# rustup\n").unwrap();
    let script = "mkdir bin 2>/dev/null && echo planted bin; \
                  echo x > .bash_profile 2>/dev/null && echo planted profile; \
                  echo x >> .cargo/env 2>/dev/null && echo planted cargo-env; \
                  touch project/ok && echo wrote project";
    let cordon_home = home.path().join(".cordon-state");
    let words = [
        "cordon",
        "exec",
        "--writes",
        "direct",
        "-a",
        "never",
        "--allow-home-root",
        "--best-effort",
        "-C",
        home.path().to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
    ];
    let args: Vec<&std::ffi::OsStr> = words.iter().map(std::ffi::OsStr::new).collect();
    let no_landlock = [(libc::SYS_landlock_create_ruleset, libc::ENOSYS)];
    let run: Run = under_filter(&no_landlock, Path::new(CORDON), &args)
        .env("HOME", home.path())
        .env("CORDON_HOME", &cordon_home)
        .output()
        .unwrap()
        .into();
    assert!(run.stdout.contains("wrote project"), "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("planted"), "{}\n{}", run.stdout, run.stderr);
    assert!(!home.path().join("bin").exists() && !home.path().join(".bash_profile").exists());
}

/// A home directory inside the temporary directory every workspace-write run may write (HOME
/// under $TMPDIR in a container or CI) is refused with the way out, whatever -C says.
#[test]
fn a_home_inside_the_temporary_directory_is_refused_with_the_way_out() {
    let tmp = scratch();
    let home = tmp.path().join("h");
    std::fs::create_dir_all(home.join("project")).unwrap();
    let run: Run = Command::new(CORDON)
        .args([
            "exec",
            "--writes",
            "direct",
            "-a",
            "never",
            "-C",
            home.join("project").to_str().unwrap(),
            "--",
            "true",
        ])
        .env("HOME", &home)
        .env("TMPDIR", tmp.path())
        .env("CORDON_HOME", tmp.path().join("cordon-home"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("exclude_tmpdir_env_var"), "{}", run.stderr);
}

use std::path::Path;

use super::*;

fn entry(path: &str) -> GitDirEntry {
    let parts: Vec<&str> = path.split('/').collect();
    git_dir_entry(&parts)
}

#[test]
fn what_git_writes_in_its_own_work_is_ordinary() {
    for path in [
        "HEAD",
        "index",
        "index.lock",
        "COMMIT_EDITMSG",
        "packed-refs",
        "objects/ab/cdef",
        "objects/pack/pack-1.idx",
        "refs/heads/main",
        "refs/heads/main.lock",
        "logs/HEAD",
        "info/refs",
        "BISECT_RUN",
        "rebase-merge/head-name",
        "worktrees/wt/HEAD",
        "worktrees/wt/index",
        "worktrees/wt/gitdir",
        "worktrees/wt/logs/HEAD",
        "worktrees/wt/rebase-merge/onto",
        "reftable/tables.list",
        "sharedindex.0123abcd",
    ] {
        assert_eq!(entry(path), GitDirEntry::Ordinary, "{path}");
    }
}

#[test]
fn hooks_and_unknown_files_are_not_and_configs_and_plans_are_read() {
    for path in
        ["hooks/pre-commit", "hooks/x.lock", "hooks/a/b.sample", "branches/x", "remotes/o", "evil"]
    {
        assert_eq!(entry(path), GitDirEntry::Other, "{path}");
    }
    // What `git init` copies from its templates: samples git never runs.
    assert_eq!(entry("hooks"), GitDirEntry::Ordinary);
    assert_eq!(entry("hooks/pre-commit.sample"), GitDirEntry::Ordinary);
    assert_eq!(entry("worktrees/wt/hooks/post-checkout"), GitDirEntry::Other);
    assert_eq!(entry("config"), GitDirEntry::Config);
    assert_eq!(entry("config.worktree"), GitDirEntry::Config);
    assert_eq!(entry("worktrees/wt/config.worktree"), GitDirEntry::Config);
    assert_eq!(entry("rebase-merge/git-rebase-todo"), GitDirEntry::Todo);
    assert_eq!(entry("sequencer/todo"), GitDirEntry::Todo);
    assert_eq!(entry("worktrees/wt/commondir"), GitDirEntry::CommonDir);
    assert_eq!(entry("modules/lib/sub"), GitDirEntry::Modules);
}

#[test]
fn a_config_keeps_only_a_plain_worktree_that_leads_inside() {
    let git_dir = Path::new("/w/cl/.git/modules/lib");
    let inside = |path: &Path| path.starts_with("/w");
    let with = |line: &str| format!("[core]\n\tbare = false\n{line}\n");
    assert!(!repository_config_change_held(
        "",
        &with("\tworktree = ../../../lib"),
        git_dir,
        inside
    ));
    for line in [
        "\tworktree = ../../../../../outside",
        "\tworktree = ../../../../../outside #/../w/sub",
        "\tworktree = ../foo\\\nabbrev=/../../outside",
        "\tworktree = \"../../../lib\"",
        // A `..` after a name is taken on the disk, where the name may be a link.
        "\tworktree = ../../../lnk/..",
        "\tworktree = /w/cl/lnk/..",
    ] {
        assert!(repository_config_change_held("", &with(line), git_dir, inside), "{line}");
    }
}

#[test]
fn sequencer_options_are_held_for_a_new_strategy() {
    assert!(!options_change_held("", "[options]\n\tsignoff = true\n"));
    assert!(options_change_held("", "[options]\n\tstrategy = ./../evil\n"));
    assert_eq!(entry("sequencer/opts"), GitDirEntry::Options);
    assert_eq!(entry("info/exclude"), GitDirEntry::Exclude);
    assert_eq!(entry("objects/info/alternates"), GitDirEntry::Other);
    assert!(!exclude_change_held("", "# git ls-files --others --exclude-from=.git/info/exclude\n"));
    assert!(exclude_change_held("", "# comment\n.x/\n"));
    assert_eq!(entry("rebase-merge/strategy"), GitDirEntry::Other);
}

#[test]
fn a_plan_is_held_only_for_new_exec_lines() {
    assert!(!todo_change_held("pick 1 a\n", "pick 1 a\npick 2 b\n"));
    assert!(todo_change_held("pick 1 a\n", "pick 1 a\nexec make\n"));
    assert!(todo_change_held("", "x sh -c evil\n"));
    assert!(!todo_change_held("exec make test\npick 1\n", "exec make test\n"));
}

#[test]
fn a_config_is_held_when_it_gains_code_or_an_include() {
    let init = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n";
    assert!(!config_change_held("", init));
    let pushed = format!("{init}[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n");
    assert!(!config_change_held(init, &pushed));
    assert!(config_change_held(init, &format!("{init}\tfsmonitor = ./x\n")));
    assert!(config_change_held(init, &format!("{init}[core] hooksPath = .githooks\n")));
    assert!(config_change_held(init, &format!("{init}[include]\n\tpath = ../tools/gitconfig\n")));
}

#[test]
fn tools_are_found_by_the_files_they_load() {
    assert_eq!(tool_loading(Path::new("rust-toolchain.toml")), Some("rustup"));
    assert_eq!(tool_loading(Path::new("a/b/rust-toolchain")), Some("rustup"));
    assert_eq!(tool_loading(Path::new("proj/.cargo/config.toml")), Some("cargo"));
    assert_eq!(tool_loading(Path::new("/tmp/.cargo/config")), Some("cargo"));
    assert_eq!(tool_loading(Path::new("config.toml")), None);
    assert_eq!(tool_loading(Path::new("src/main.rs")), None);
}

#[test]
fn pointers_and_commondirs_are_read_by_their_text() {
    let root = Path::new("/w");
    assert!(pointer_stays_inside("gitdir: ../.git/worktrees/wt\n", Path::new("/w/wt"), root));
    assert!(pointer_stays_inside("gitdir: /w/.git/modules/sub", Path::new("/w/sub"), root));
    assert!(!pointer_stays_inside("gitdir: /tmp/evil\n", Path::new("/w/x"), root));
    assert!(!pointer_stays_inside("gitdir: ../../tmp/evil", Path::new("/w/x"), root));
    assert!(!pointer_stays_inside("evil", Path::new("/w/x"), root));
    // git reads the whole file, line ends inside it included.
    assert_eq!(gitfile_target("gitdir: x\n/../../../o/.git\n"), Some("x\n/../../../o/.git"));
    assert!(!pointer_stays_inside("gitdir: x\n/../../../o/.git\n", Path::new("/w/s"), root));
    assert_eq!(gitfile_target("gitdir:x"), None);
    let git_dir = Path::new("/w/.git");
    assert!(commondir_leads_back("../..\n", Path::new("/w/.git/worktrees/wt"), git_dir));
    assert!(!commondir_leads_back("/tmp/evil", Path::new("/w/.git/worktrees/wt"), git_dir));
}

//! The write gate's decisions: which changes a sandboxed command made to its writable roots
//! may reach them, judged by what a program outside the sandbox would later do with the file
//! (git, a shell, a tool that loads configuration from a directory and its parents).
//!
//! Pure: the caller walks the exact set of changes (a write layer's upper directory), reads
//! what the decisions need (a file's text before and after, where git directories are), and
//! asks here. What passes here is plain data to every program cordon knows to look; what does
//! not is held back for the user to look at.

use std::path::{Component, Path};

use crate::git_config::git_config_gained_code;
use crate::paths::lexically_normal;

/// Why a change is held back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// A file inside a git directory that git's ordinary work does not write (a hook, a
    /// file of unknown use).
    GitDirectory,
    /// A git configuration (a repository's `config`, a worktree's `config.worktree`, or a file
    /// a configuration includes) that gained a line that may run code.
    GitConfig,
    /// A `.git` pointer file or a worktree's `commondir` that leads git somewhere else.
    GitPointer,
    /// A rebase or sequencer plan that gained `exec` lines (run at `git rebase --continue`).
    GitTodo,
    /// A file that `tool` loads from the directory it runs in or a parent of it, new or not
    /// tracked by git (so not shown by `git status` or `git diff` as a change to review).
    ToolConfig { tool: &'static str },
    /// A file a shell, an editor or cordon itself loads on its own (`.envrc`, `.vscode`,
    /// `~/.bashrc`, …).
    StartUp,
    /// A file in the hooks directory a repository's `core.hooksPath` names.
    Hook,
    /// A deletion or replacement of a repository (its history with it).
    RemovesRepository,
    /// A tree that could not be read whole (a directory the gate may not list, a path too
    /// long or too deep): nothing of it was judged, so nothing of it passes.
    Unjudged,
    /// A FIFO, a socket or a device node.
    Special,
    /// A link that leads where the command wrote directly (`/tmp`, `$TMPDIR`), past this gate.
    LeadsOut,
    /// A file the host changed while the command ran: both versions are kept.
    Conflict,
}

impl std::fmt::Display for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Held::GitDirectory => f.write_str("not something git writes in its own work"),
            Held::GitConfig => f.write_str("a git configuration that may run code"),
            Held::GitPointer => f.write_str("leads git to another repository"),
            Held::GitTodo => f.write_str("a rebase plan with new exec lines"),
            Held::ToolConfig { tool } => write!(f, "{tool} loads it, and git does not show it"),
            Held::StartUp => f.write_str("a start-up file"),
            Held::Hook => f.write_str("a hook git runs (core.hooksPath)"),
            Held::RemovesRepository => f.write_str("would remove a repository and its history"),
            Held::Unjudged => f.write_str("could not be read whole, so it was not judged"),
            Held::Special => f.write_str("a FIFO, socket or device"),
            Held::LeadsOut => f.write_str("a link to where the command wrote directly"),
            Held::Conflict => f.write_str("changed outside the sandbox during the run"),
        }
    }
}

/// What a path inside a git directory is, as git uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitDirEntry {
    /// What git writes in its ordinary work: objects, refs, logs, the index, `HEAD` and the
    /// other state files, a worktree's own state.
    Ordinary,
    /// A configuration: judged by its content ([`config_change_held`]).
    Config,
    /// A rebase or sequencer plan: judged by its `exec` lines ([`todo_change_held`]).
    Todo,
    /// A linked worktree's `commondir`: must lead back to this git directory.
    CommonDir,
    /// The sequencer's options (a configuration): judged by its strategy lines
    /// ([`options_change_held`]).
    Options,
    /// `info/exclude`: judged by its new patterns ([`exclude_change_held`]).
    Exclude,
    /// A directory on the way to a submodule's git directory (`modules/a/b`): a directory
    /// passes; a file there is not git's.
    Modules,
    /// Anything else (hooks included): held back.
    Other,
}

/// State files at the top of a git directory that git writes in ordinary work.
const TOP_STATE: &[&str] = &[
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "MERGE_RR",
    "MERGE_AUTOSTASH",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "REBASE_HEAD",
    "AUTO_MERGE",
    "BISECT_LOG",
    "BISECT_NAMES",
    "BISECT_START",
    "BISECT_EXPECTED_REV",
    "BISECT_ANCESTORS_OK",
    "BISECT_TERMS",
    "BISECT_HEAD",
    "BISECT_FIRST_PARENT",
    "BISECT_RUN",
    "COMMIT_EDITMSG",
    "TAG_EDITMSG",
    "NOTES_EDITMSG",
    "SQUASH_MSG",
    "EDIT_DESCRIPTION",
    "index",
    "packed-refs",
    "description",
    "shallow",
    "gc.log",
    "gc.pid",
    "sharedindex",
    "gitdir",
    "locked",
    "logs",
    "objects",
    "refs",
    "rr-cache",
    "lfs",
    "info",
];

/// Directories of in-progress operations git writes and reads back.
const OPERATION_DIRS: &[&str] = &["rebase-merge", "rebase-apply", "sequencer"];

/// Plans in those directories that git executes lines of.
const TODO_FILES: &[&str] = &["git-rebase-todo", "git-rebase-todo.backup", "done", "todo"];

/// What `rel` (components below a git directory) is to git. `rel` is never empty.
pub fn git_dir_entry(rel: &[&str]) -> GitDirEntry {
    let Some((first, rest)) = rel.split_first() else { return GitDirEntry::Other };
    let first = *first;
    // A lock git left behind (`index.lock`, `refs/heads/main.lock`) is as plain as its file.
    if rel.last().is_some_and(|last| last.ends_with(".lock")) && first != "hooks" {
        return GitDirEntry::Ordinary;
    }
    match first {
        "config" | "config.worktree" if rest.is_empty() => GitDirEntry::Config,
        // What `git init` copies from its templates: sample hooks git never runs (it runs a
        // hook by its exact name), and the empty legacy `branches/`.
        "hooks" if rest.is_empty() => GitDirEntry::Ordinary,
        "hooks" if rest.len() == 1 && rest[0].ends_with(".sample") => GitDirEntry::Ordinary,
        "branches" if rest.is_empty() => GitDirEntry::Ordinary,
        "hooks" | "branches" | "remotes" => GitDirEntry::Other,
        // `info/exclude` can hide a planted file from `git status`: judged by its new lines.
        "info" if rest == ["exclude"] => GitDirEntry::Exclude,
        // Another object store git reads (and `git gc` then relies on): a text pointer, like a
        // link, to where the gate never looked.
        "objects" if rest == ["info", "alternates"] || rest == ["info", "http-alternates"] => {
            GitDirEntry::Other
        }
        // `info/` holds `refs`, `sparse-checkout`, `attributes` (a filter or diff driver needs a
        // configuration to run anything).
        "info" | "logs" | "objects" | "refs" | "reftable" | "rr-cache" | "lfs" => {
            GitDirEntry::Ordinary
        }
        // A split index's shared part (`core.splitIndex`).
        name if rest.is_empty() && name.starts_with("sharedindex.") => GitDirEntry::Ordinary,
        op if OPERATION_DIRS.contains(&op) => match rest.last() {
            Some(name) if TODO_FILES.contains(name) => GitDirEntry::Todo,
            // The merge strategy git runs (`git-merge-NAME`, or a path) when it goes on.
            Some(&("strategy" | "strategy_opts")) => GitDirEntry::Other,
            Some(&"opts") => GitDirEntry::Options,
            _ => GitDirEntry::Ordinary,
        },
        "worktrees" => match rest {
            [] | [_] => GitDirEntry::Ordinary,
            [_, name] if *name == "commondir" => GitDirEntry::CommonDir,
            [_, name] if *name == "config.worktree" => GitDirEntry::Config,
            [_, inner @ ..] => match git_dir_entry(inner) {
                // A worktree's own state; hooks and configs are the main git dir's.
                GitDirEntry::Ordinary | GitDirEntry::Todo => git_dir_entry(inner),
                _ => GitDirEntry::Other,
            },
        },
        "modules" => GitDirEntry::Modules,
        name if rest.is_empty() && TOP_STATE.contains(&name) => GitDirEntry::Ordinary,
        _ => GitDirEntry::Other,
    }
}

/// Whether a configuration git reads, replaced by `after` (`before`: what it held before the
/// run, empty when it is new), is held back: it gained a line that may run code or include
/// another file.
pub fn config_change_held(before: &str, after: &str) -> bool {
    git_config_gained_code(before, after)
}

/// [`config_change_held`] for the configuration of the git directory `git_dir` inside the
/// writable root `root`: a `core.worktree` that leads into `root` (what `git submodule` and
/// `git clone --recurse-submodules` write for a submodule's checkout) is plain data there.
///
/// Only a plain value is taken so: no quote, comment, escape or continuation git would read
/// differently, and `leads_inside` (given the path as git resolves it, from `git_dir`) says
/// where it leads on the disk.
pub fn repository_config_change_held(
    before: &str,
    after: &str,
    git_dir: &Path,
    leads_inside: impl Fn(&Path) -> bool,
) -> bool {
    let inside = |value: &str| {
        let value = value.trim();
        let plain = !value.is_empty()
            && !value.contains(['"', '#', ';', '\\'])
            && !value.chars().any(char::is_control);
        let target = Path::new(value);
        // `..` only as a leading climb out of the git directory (what `git submodule` writes,
        // `../../../lib`): after a name, git takes the `..` on the disk — from where a link
        // of that name leads — and the lexical reading below would not.
        let climbs_after_a_name = target
            .components()
            .skip_while(|part| matches!(part, Component::ParentDir | Component::CurDir))
            .any(|part| part == Component::ParentDir);
        let joined = if target.is_absolute() { target.to_path_buf() } else { git_dir.join(target) };
        plain && !climbs_after_a_name && leads_inside(&lexically_normal(&joined))
    };
    let mut section_is_core = false;
    let kept: String = after
        .lines()
        .filter(|line| {
            let trimmed = line.trim();
            if trimmed.starts_with('[') {
                section_is_core = trimmed.eq_ignore_ascii_case("[core]");
                return true;
            }
            let Some((key, value)) = trimmed.split_once('=') else { return true };
            !(section_is_core && key.trim().eq_ignore_ascii_case("worktree") && inside(value))
        })
        .map(|line| format!("{line}\n"))
        .collect();
    config_change_held(before, &kept)
}

/// Whether the sequencer's options, replaced by `after`, gained a line that names a merge
/// strategy (git runs `git-merge-STRATEGY`, or the path it names, when the pick goes on).
pub fn options_change_held(before: &str, after: &str) -> bool {
    gained_line(before, after, |line| line.to_ascii_lowercase().contains("strategy"))
}

/// Whether `info/exclude`, replaced by `after`, gained a pattern: one would hide what the
/// command planted from `git status` (what `git init` writes is comments only).
pub fn exclude_change_held(before: &str, after: &str) -> bool {
    gained_line(before, after, |line| !line.is_empty() && !line.starts_with('#'))
}

/// Whether a rebase or sequencer plan, replaced by `after`, gained an `exec` line (git runs
/// it, outside any sandbox, at `git rebase --continue`).
pub fn todo_change_held(before: &str, after: &str) -> bool {
    gained_line(before, after, |line| matches!(line.split_whitespace().next(), Some("exec" | "x")))
}

/// Whether `after` has a line (trimmed) that `counts` and `before` does not have.
fn gained_line(before: &str, after: &str, counts: impl Fn(&str) -> bool) -> bool {
    let known: Vec<&str> = before.lines().map(str::trim).filter(|line| counts(line)).collect();
    after.lines().map(str::trim).filter(|line| counts(line)).any(|line| !known.contains(&line))
}

/// Files tools load from the directory they run in or one of its parents, with the tool: a
/// planted one runs code the next time the tool runs anywhere below it. Matched on a path's
/// last one or two components.
pub const LOADED_FROM_PARENTS: &[(&str, &str)] = &[
    // rustup: `[toolchain] path = …` runs a toolchain of the file's choosing.
    ("rust-toolchain", "rustup"),
    ("rust-toolchain.toml", "rustup"),
    // cargo: `build.rustc-wrapper`, `target.*.runner`, `[alias]`.
    (".cargo/config", "cargo"),
    (".cargo/config.toml", "cargo"),
    // npm: `script-shell`, `node-options`, `git`.
    (".npmrc", "npm"),
    // direnv: the file is a shell script, run when a shell enters the directory.
    (".envrc", "direnv"),
    // mise: `[env] _.source`, `[hooks]`.
    ("mise.toml", "mise"),
    (".mise.toml", "mise"),
    // Python's debugger runs `.pdbrc` from the current directory.
    (".pdbrc", "pdb"),
    // R runs `.Rprofile` from the current directory at start-up, with `.Renviron`'s settings.
    (".Rprofile", "R"),
    (".Renviron", "R"),
    ("mise.local.toml", "mise"),
    (".mise.local.toml", "mise"),
    ("mise/config.toml", "mise"),
    (".mise/config.toml", "mise"),
    (".config/mise.toml", "mise"),
    (".config/mise/config.toml", "mise"),
    // asdf and mise: the versions name plugins, whose scripts run.
    (".tool-versions", "asdf"),
    // Maven walks up to `.mvn/`: JVM options (`-XX:OnOutOfMemoryError=…`), extensions.
    (".mvn/jvm.config", "maven"),
    (".mvn/maven.config", "maven"),
    (".mvn/extensions.xml", "maven"),
    // yarn: `yarnPath` runs the file it names; bun: `preload`.
    (".yarnrc.yml", "yarn"),
    (".yarnrc", "yarn"),
    ("bunfig.toml", "bun"),
    // MSBuild imports these from every parent directory.
    ("Directory.Build.props", "msbuild"),
    ("Directory.Build.targets", "msbuild"),
    // irb runs `.irbrc` from the current directory.
    (".irbrc", "irb"),
    // Mercurial runs the repository's `[hooks]`.
    (".hg/hgrc", "mercurial"),
    // pytest loads `conftest.py` from the test paths' directories and their parents, and its
    // `pytest.ini` options (`-p plugin`).
    ("conftest.py", "pytest"),
    ("pytest.ini", "pytest"),
    (".pytest.ini", "pytest"),
    ("pytest.toml", "pytest"),
    (".pytest.toml", "pytest"),
];

/// The tool that loads `path` (a path relative to a writable root, or absolute) from a
/// directory and its parents, if any.
pub fn tool_loading(path: &Path) -> Option<&'static str> {
    if !path.file_name().is_some_and(tool_loading_name) {
        return None;
    }
    let names: Vec<&std::ffi::OsStr> = path.iter().collect();
    LOADED_FROM_PARENTS.iter().find_map(|(pattern, tool)| {
        let wanted: Vec<&str> = pattern.split('/').collect();
        let tail = names.len().checked_sub(wanted.len())?;
        names[tail..].iter().zip(&wanted).all(|(name, want)| *name == *want).then_some(*tool)
    })
}

/// Whether a file named `name` may be one of [`LOADED_FROM_PARENTS`] (its last component is
/// one of theirs): the cheap question to ask of every file before [`tool_loading`].
pub fn tool_loading_name(name: &std::ffi::OsStr) -> bool {
    LOADED_FROM_PARENTS
        .iter()
        .any(|(pattern, _)| pattern.rsplit('/').next().is_some_and(|last| name == last))
}

/// Whether a `.git` pointer file's `text` (`gitdir: PATH`) leads inside `root`, from the
/// directory `dir` the pointer file is in (both absolute): a pointer that leads out of the
/// writable root names a git directory whose changes this gate never saw.
pub fn pointer_stays_inside(text: &str, dir: &Path, root: &Path) -> bool {
    let Some(target) = gitfile_target(text) else { return false };
    let target = Path::new(target);
    let joined = if target.is_absolute() { target.to_path_buf() } else { dir.join(target) };
    lexically_normal(&joined).starts_with(root)
}

/// The git directory a `.git` pointer file's `text` names, as git reads it: `gitdir: ` and the
/// rest of the file, line ends and all, but for the line ends at its very end.
pub fn gitfile_target(text: &str) -> Option<&str> {
    let target = text.strip_prefix("gitdir: ")?.trim_end_matches(['\n', '\r']);
    (!target.is_empty()).then_some(target)
}

/// Whether a linked worktree's `commondir` `text`, read in `worktree_dir`
/// (`GIT_DIR/worktrees/NAME`), leads back to `git_dir`.
pub fn commondir_leads_back(text: &str, worktree_dir: &Path, git_dir: &Path) -> bool {
    let target = Path::new(text.trim_end_matches(['\n', '\r']));
    let joined =
        if target.is_absolute() { target.to_path_buf() } else { worktree_dir.join(target) };
    lexically_normal(&joined) == git_dir
}

#[cfg(test)]
#[path = "write_gate_tests.rs"]
mod tests;

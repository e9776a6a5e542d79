//! A repository a sandboxed command created (`git init`, `git clone`, a copied `.git`): git,
//! run later outside the sandbox in that directory, obeys its `config` and runs its hooks. What
//! `git init` and `git clone` write stays; a config with anything else, a hook that is not one
//! of git's inert samples, a redirection (`commondir`, `config.worktree`), a paused rebase or
//! cherry-pick, a config with a second name and a FIFO, socket or device among its files are
//! moved aside.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::Path;

use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;
use rustix::fs::FileType;

use crate::aside::{Planted, move_away, open_dir};

/// The largest config read; a larger one is moved aside unread.
const MAX_CONFIG: i64 = 1024 * 1024;

/// Whether `dir` (at `path`, `GIT_DIR/worktrees/NAME`) holds a `commondir` that is a plain
/// file leading back to `GIT_DIR`.
fn leads_back(dir: &OwnedFd, path: &Path) -> bool {
    let Some(git_dir) = path.parent().filter(|p| p.ends_with("worktrees")).and_then(Path::parent)
    else {
        return false;
    };
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let Ok(fd) = nix::fcntl::openat(dir, "commondir", flags, Mode::empty()) else { return false };
    let Ok(st) = nix::sys::stat::fstat(&fd) else { return false };
    if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_size > 4096 {
        return false;
    }
    let mut text = String::new();
    use std::io::Read;
    if std::fs::File::from(fd).read_to_string(&mut text).is_err() {
        return false;
    }
    let path = cordon_policies::lexically_normal(path);
    let git_dir = cordon_policies::lexically_normal(git_dir);
    cordon_policies::commondir_leads_back(&text, &path, &git_dir)
}

/// What to move aside in the new git dir `dir` (opened, at `path`), moved.
pub(crate) fn planted(dir: &OwnedFd, path: &Path) -> Vec<Planted> {
    let mut planted = Vec::new();
    let config = OsStr::new("config");
    if config_runs_code(dir, config) {
        planted.push(move_away(dir, config, &path.join("config")));
    }
    // Redirections, and a paused rebase, cherry-pick or revert (its todo's `exec` lines run at
    // the user's `git rebase --continue`): git init and clone make none of them.
    for name in ["commondir", "config.worktree", "rebase-merge", "rebase-apply", "sequencer"] {
        let name = OsStr::new(name);
        // A linked worktree's `commondir` that leads back to the git dir holding it is what
        // `git worktree add` writes: without it the worktree is no repository.
        if name == "commondir" && leads_back(dir, path) {
            continue;
        }
        if nix::sys::stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok() {
            planted.push(move_away(dir, name, &path.join(name)));
        }
    }
    // A FIFO, socket or device where git reads a file (`HEAD`, `index`, `packed-refs`) hangs
    // the user's next git command there, or feeds it what a device gives: git makes none.
    for (name, kind) in crate::owner_read::entries_as_owner(dir).unwrap_or_default() {
        if matches!(
            kind,
            Some(
                FileType::Fifo
                    | FileType::Socket
                    | FileType::CharacterDevice
                    | FileType::BlockDevice
            )
        ) {
            let at = path.join(&name);
            planted.push(move_away(dir, &name, &at));
        }
    }
    let hooks = OsStr::new("hooks");
    if let Ok(st) = nix::sys::stat::fstatat(dir, hooks, AtFlags::AT_SYMLINK_NOFOLLOW) {
        match open_dir(Some(dir), hooks) {
            Some(hooks_dir) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => {
                for name in live_hooks(&hooks_dir) {
                    let at = path.join("hooks").join(&name);
                    planted.push(move_away(&hooks_dir, &name, &at));
                }
            }
            // A link or a file where git looks for hooks.
            _ => planted.push(move_away(dir, hooks, &path.join("hooks"))),
        }
    }
    planted
}

/// Whether `name` in `dir` is a config that may run code: anything but a small regular file
/// of the keys `git init`/`git clone` write.
fn config_runs_code(dir: &OwnedFd, name: &OsStr) -> bool {
    match config_at(dir, name) {
        Ok(Some(text)) => cordon_policies::git_config_may_run_code(&text),
        Ok(None) => false,
        Err(()) => true,
    }
}

/// The config `name` in `dir`, read through the directory (never by path): `Ok(None)` when
/// there is none, `Err` when it is there but not a small regular file of text with no other
/// name, which git would read all the same.
pub(crate) fn config_at(dir: &OwnedFd, name: &OsStr) -> Result<Option<String>, ()> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let fd = match nix::fcntl::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(nix::errno::Errno::ENOENT) => return Ok(None),
        Err(_) => return Err(()),
    };
    let st = nix::sys::stat::fstat(&fd).map_err(|_| ())?;
    // A second name for it (a hard link elsewhere in a writable root) stays writable where
    // the sandbox binds this one read-only.
    if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_size > MAX_CONFIG || st.st_nlink > 1 {
        return Err(());
    }
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut text).map_err(|_| ())?;
    String::from_utf8(text).map(Some).map_err(|_| ())
}

/// The entries of a hooks directory that git would run: everything but `*.sample`. Listed
/// through the descriptor, never by path again, and as its owner when the command made it
/// unreadable ([`crate::owner_read`]): git runs a hook by name from a directory it cannot list.
fn live_hooks(hooks: &OwnedFd) -> Vec<std::ffi::OsString> {
    use std::os::unix::ffi::OsStrExt;
    crate::owner_read::entries_as_owner(hooks)
        .unwrap_or_default()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| !name.as_bytes().ends_with(b".sample"))
        .collect()
}

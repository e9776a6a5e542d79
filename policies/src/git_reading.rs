//! git's command line read as rules need it: the global options before the subcommand skipped,
//! and the spellings whose meaning comes from configuration rather than the words — an alias, a
//! command found on `PATH` as `git-NAME`, autocorrection, a `-c` or `--config-env` key not
//! known to be plain data, another exec path — reported as unreadable.

use crate::git_keys::{GitKey, git_key_with_value};
use crate::unreadable::Unreadable;

/// The commands git itself ships (`git --list-cmds=main` of a current git, plus the ones other
/// versions and distributions add). An alias can never shadow one of them; any other name may be
/// an alias or a `git-NAME` program found on `PATH`.
const GIT_COMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archimport",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout--worker",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "citool",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "credential-cache",
    "credential-cache--daemon",
    "credential-store",
    "cvsexportcommit",
    "cvsimport",
    "cvsserver",
    "daemon",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "difftool--helper",
    "fast-export",
    "fast-import",
    "fetch",
    "fetch-pack",
    "filter-branch",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "fsck-objects",
    "fsmonitor--daemon",
    "gc",
    "get-tar-commit-id",
    "gitk",
    "grep",
    "gui",
    "hash-object",
    "help",
    "hook",
    "http-backend",
    "http-fetch",
    "http-push",
    "imap-send",
    "index-pack",
    "init",
    "init-db",
    "instaweb",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-index",
    "merge-octopus",
    "merge-one-file",
    "merge-ours",
    "merge-recursive",
    "merge-recursive-ours",
    "merge-recursive-theirs",
    "merge-resolve",
    "merge-subtree",
    "merge-tree",
    "mergetool",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "p4",
    "pack-objects",
    "pack-redundant",
    "pack-refs",
    "patch-id",
    "pickaxe",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "quiltimport",
    "range-diff",
    "read-tree",
    "rebase",
    "receive-pack",
    "reflog",
    "refs",
    "remote",
    "remote-ext",
    "remote-fd",
    "remote-ftp",
    "remote-ftps",
    "remote-http",
    "remote-https",
    "repack",
    "replace",
    "replay",
    "request-pull",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "scalar",
    "send-email",
    "send-pack",
    "sh-i18n--envsubst",
    "shell",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "submodule--helper",
    "subtree",
    "svn",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "upload-archive",
    "upload-archive--writer",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "web--browse",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// Whether `name` is a command git itself ships (never an alias).
pub(crate) fn is_git_command(name: &str) -> bool {
    GIT_COMMANDS.contains(&name)
}

/// Global options that take the next word as their value.
const WITH_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--exec-path",
    "--super-prefix",
    "--config-env",
    "--attr-source",
    "--list-cmds",
];

/// git's words after the program, from the subcommand on — or why they cannot be read.
pub(crate) fn read_git(args: &[String]) -> Result<Vec<String>, Unreadable> {
    let unreadable = |detail: String| Unreadable::Git { detail };
    let mut index = 0;
    while let Some(word) = args.get(index) {
        if word == "--" {
            index += 1;
            break;
        }
        if !word.starts_with('-') {
            break;
        }
        let (name, attached) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (word.as_str(), None),
        };
        let value = match attached {
            Some(value) => Some(value),
            None if WITH_VALUE.contains(&name) => {
                index += 1;
                args.get(index).map(String::as_str)
            }
            None => None,
        };
        match name {
            "--exec-path" => {
                return Err(unreadable(
                    "`git --exec-path` runs git's commands from another directory".to_owned(),
                ));
            }
            // Both hand git configuration; `--config-env=KEY=VARIABLE` takes the value from
            // the environment, which the words do not show, so the key alone decides.
            "-c" | "--config-env" => {
                let given = value.unwrap_or_default();
                let (key, value) = match name {
                    "-c" => given.split_once('=').map_or((given, None), |(k, v)| (k, Some(v))),
                    // The value is in the environment: judged by the key alone, as if it could
                    // be any URL.
                    _ => (given.rsplit_once('=').map_or(given, |(key, _)| key), Some("::")),
                };
                match git_key_with_value(key, value) {
                    GitKey::Inert => {}
                    GitKey::Code(why) => {
                        return Err(unreadable(format!("`git {name} {key}…`: {why}")));
                    }
                    GitKey::Unknown => {
                        return Err(unreadable(format!(
                            "`git {name} {key}…`: a key cordon does not know to be plain data"
                        )));
                    }
                }
            }
            _ => {}
        }
        index += 1;
    }
    let rest = args.get(index..).unwrap_or_default();
    match rest.first() {
        None => Ok(Vec::new()),
        Some(subcommand) if is_git_command(subcommand) => match runs_commands(rest) {
            Some(how) => Err(unreadable(format!("`git {how}` runs a command it is given"))),
            None => Ok(rest.to_vec()),
        },
        Some(subcommand) => Err(unreadable(format!(
            "`git {subcommand}` is not a git command: an alias or a program on PATH decides what runs"
        ))),
    }
}

/// The git subcommands (and their options) that run a shell command given on the command line:
/// what that command does is not in git's words.
fn runs_commands(rest: &[String]) -> Option<String> {
    let (subcommand, args) = rest.split_first()?;
    // git's option parser takes any unambiguous abbreviation (`git rebase --ex=CMD`); a word
    // that may abbreviate the option counts.
    let has = |option: &str| {
        let name = option.trim_start_matches('-');
        args.iter().any(|a| {
            a.strip_prefix("--").is_some_and(|given| {
                let given = given.split_once('=').map_or(given, |(key, _)| key);
                !given.is_empty() && name.starts_with(given)
            })
        })
    };
    // The `ext::` transport runs the command in the URL (where configuration allows it, and
    // a workspace's repository configuration can).
    if args.iter().any(|a| a.starts_with("ext::")) {
        return Some(subcommand.clone());
    }
    let short = |letter: char| {
        args.iter().any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains(letter))
    };
    let runs = match subcommand.as_str() {
        "submodule" => args.iter().any(|a| a == "foreach"),
        "bisect" => args.first().is_some_and(|a| a == "run"),
        "rebase" => has("--exec") || short('x'),
        "clone" => has("--upload-pack") || short('u') || has("--template"),
        "fetch" | "pull" | "ls-remote" => has("--upload-pack"),
        "push" => has("--receive-pack") || has("--exec"),
        "archive" => has("--exec") || has("--remote"),
        "grep" => has("--open-files-in-pager") || short('O'),
        "send-pack" | "receive-pack" | "upload-pack" | "fetch-pack" | "upload-archive" => true,
        "difftool" | "mergetool" => has("--extcmd") || has("--tool") || short('x') || short('t'),
        "filter-branch" | "for-each-repo" | "daemon" | "instaweb" | "p4" | "svn" | "archimport"
        | "cvsimport" | "cvsexportcommit" | "cvsserver" | "send-email" | "quiltimport" => true,
        _ => false,
    };
    runs.then(|| subcommand.clone())
}

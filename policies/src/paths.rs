//! Default protected and hidden paths (what the Linux mount view and the Seatbelt profile keep
//! read-only or out of sight) and `~` expansion.

use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// Paths inside every writable root that stay read-only: writing them lets a command plant code
/// that runs later outside the sandbox (git hooks, git config's `core.fsmonitor`, direnv's
/// `.envrc`, editor tasks) or loosen cordon's own rules.
///
/// Git runs code from its config (`core.fsmonitor`, `core.hooksPath`, filters, …) and hooks, so
/// every place it reads them in a repository is here: the main config and hooks, the
/// per-worktree config, and `.git/modules` — the git dirs of submodules, whose configs and
/// hooks run at the next `git status` in the superproject. Objects, refs, the index and logs
/// stay writable, so `git add` and `git commit` work in the sandbox; submodule updates do not.
/// (A `.git` *file*, the pointer of a linked worktree or a submodule checkout, is read-only
/// too: the helper treats it so whatever this list says.)
///
/// The shell start-up files and the global git config matter when a writable root is `$HOME`
/// itself (`cordon exec` run from the home directory): written from inside, they would run the
/// command's code in the user's next shell or git command, outside any sandbox. In a project
/// they rarely exist, and a protected path that does not exist costs nothing.
pub const DEFAULT_PROTECTED_PATHS: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".git/config.worktree",
    ".git/modules",
    ".cordon",
    ".codex",
    ".envrc",
    ".vscode",
    ".idea",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".gitconfig",
    ".config/git",
    ".config/fish",
];

/// Files and directories under `$HOME` that a shell, git, Python, ssh or the desktop session
/// loads code or configuration from. The helper keeps each read-only wherever a writable root
/// contains it — judged by its place under `$HOME`, not by its name inside the root, so a
/// root at `~/.config` protects `~/.config/git` as a root at `~` would.
pub const HOME_START_UP_PATHS: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".inputrc",
    ".gitconfig",
    ".config/git",
    ".config/fish",
    ".config/systemd/user",
    ".config/autostart",
    ".config/environment.d",
    ".config/pip",
    ".config/direnv",
    ".config/nvim",
    ".ipython",
    ".local/bin",
    ".local/lib",
    ".pythonrc",
    ".cargo/config.toml",
    ".cargo/config",
    ".cargo/bin",
    ".aws",
    ".kube",
    ".docker",
];

/// Directories in a home directory that are not dot entries but from which programs run later:
/// `~/bin` and `~/go/bin` on `PATH` (Debian's and Ubuntu's `.profile`, Go's install), Node's
/// module lookup climbing to `~/node_modules`, Perl's `local::lib` in `~/perl5`.
pub const HOME_CODE_DIRS: &[&str] = &["bin", "go", "node_modules", "perl5"];

/// [`HOME_START_UP_PATHS`] under `home`.
pub fn home_start_up_paths(home: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    HOME_START_UP_PATHS.iter().map(move |name| home.join(name))
}

/// Expands a leading `~` or `~/` against `home`. Returns `None` for `~` paths when there is no
/// home, so a hidden path is never silently resolved against `/`.
pub fn expand_home(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    if path == "~" {
        return home.map(Path::to_path_buf);
    }
    match path.strip_prefix("~/") {
        Some(rest) => home.map(|home| home.join(rest)),
        None => Some(PathBuf::from(path)),
    }
}

/// Expands a policy path: a leading `~` (see [`expand_home`]), and the tokens `$UID`,
/// `$XDG_RUNTIME_DIR`, `$SSH_AUTH_SOCK`, `$DBUS_SESSION_BUS_ADDRESS` (the socket file of the
/// session bus) and `$KRB5CCNAME` (the file or directory of the Kerberos ticket cache). `None` when something it names is not set (the path then names nothing).
pub fn expand_path(path: &str, env: &crate::PolicyEnv<'_>) -> Option<PathBuf> {
    if !path.contains('$') {
        return expand_home(path, env.home);
    }
    let mut text = path.to_owned();
    let tokens: [(&str, Option<String>); 5] = [
        ("$XDG_RUNTIME_DIR", env.runtime_dir.map(|p| p.display().to_string())),
        ("$SSH_AUTH_SOCK", env.ssh_auth_sock.map(|p| p.display().to_string())),
        ("$DBUS_SESSION_BUS_ADDRESS", env.session_bus.map(|p| p.display().to_string())),
        ("$KRB5CCNAME", env.kerberos_cache.map(|p| p.display().to_string())),
        ("$UID", env.uid.map(|uid| uid.to_string())),
    ];
    for (token, value) in tokens {
        if text.contains(token) {
            text = text.replace(token, value.as_deref().filter(|v| !v.is_empty())?);
        }
    }
    expand_home(&text, env.home)
}

/// The file or directory a Kerberos cache name (`$KRB5CCNAME`) keeps tickets in: `FILE:PATH`,
/// `DIR:PATH` or a bare absolute path. `None` for caches that are no file (`KEYRING:`, `KCM:`,
/// `MEMORY:`, `API:`) or a relative path.
pub fn kerberos_cache_file(name: &str) -> Option<PathBuf> {
    let path = match name.split_once(':') {
        Some(("FILE" | "DIR", path)) => path,
        Some(_) => return None,
        None => name,
    };
    // `DIR::PATH` names one cache inside a collection: its file.
    let path = path.strip_prefix(':').unwrap_or(path);
    Path::new(path).is_absolute().then(|| PathBuf::from(path))
}

/// The socket file of a D-Bus address (`$DBUS_SESSION_BUS_ADDRESS`): the first `unix:path=`
/// among its `;`-separated addresses, `%XX` escapes decoded. `None` for an address without one
/// (`unix:abstract=…` names no file; `tcp:` none on this machine).
pub fn session_bus_socket(address: &str) -> Option<PathBuf> {
    address.split(';').find_map(|one| {
        let params = one.strip_prefix("unix:")?;
        let value = params.split(',').find_map(|param| param.strip_prefix("path="))?;
        let path = PathBuf::from(std::ffi::OsString::from_vec(unescape_dbus(value)?));
        // A socket is a file: `unix:path=/` would name the root directory.
        (path.is_absolute() && path.file_name().is_some()).then_some(path)
    })
}

/// D-Bus address values escape every byte but letters, digits and `-_/.\*` as `%XX`.
fn unescape_dbus(value: &str) -> Option<Vec<u8>> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// `a/./b/../c` → `a/c`: `.` components, repeated and trailing slashes taken out, each `..`
/// taking the component before it away, without touching the disk (the path may not exist,
/// or be another machine's) and so without resolving any link.
pub fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_kerberos_cache_name_gives_its_file_only_when_it_is_one() {
        for (name, file) in [
            ("FILE:/tmp/krb5cc_1000", Some("/tmp/krb5cc_1000")),
            ("/tmp/krb5cc_x", Some("/tmp/krb5cc_x")),
            ("DIR:/run/user/1000/krb5cc", Some("/run/user/1000/krb5cc")),
            ("DIR::/run/user/1000/krb5cc/tkt", Some("/run/user/1000/krb5cc/tkt")),
            ("KEYRING:persistent:1000", None),
            ("KCM:", None),
            ("MEMORY:x", None),
            ("FILE:relative", None),
        ] {
            assert_eq!(kerberos_cache_file(name), file.map(PathBuf::from), "{name}");
        }
    }
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn tilde_expands_against_home_only() {
        let home = Path::new("/home/u");
        assert_eq!(expand_home("~/.ssh", Some(home)), Some(PathBuf::from("/home/u/.ssh")));
        assert_eq!(expand_home("~", Some(home)), Some(PathBuf::from("/home/u")));
        assert_eq!(expand_home("~/.ssh", None), None);
        assert_eq!(expand_home("/etc/x", None), Some(PathBuf::from("/etc/x")));
        // `~user` is not expanded: it is taken literally (and will usually not exist).
        assert_eq!(expand_home("~bob/x", Some(home)), Some(PathBuf::from("~bob/x")));
    }

    #[test]
    fn tokens_expand_or_name_nothing() {
        let env = crate::PolicyEnv {
            uid: Some(1000),
            runtime_dir: Some(Path::new("/run/user/1000")),
            ..crate::PolicyEnv::default()
        };
        assert_eq!(expand_path("/tmp/tmux-$UID", &env), Some(PathBuf::from("/tmp/tmux-1000")));
        assert_eq!(
            expand_path("$XDG_RUNTIME_DIR/bus", &env),
            Some(PathBuf::from("/run/user/1000/bus"))
        );
        assert_eq!(expand_path("$SSH_AUTH_SOCK", &env), None);
        assert_eq!(expand_path("$DBUS_SESSION_BUS_ADDRESS", &env), None);
        let bus = crate::PolicyEnv { session_bus: Some(Path::new("/tmp/dbus-x")), ..env };
        assert_eq!(
            expand_path("$DBUS_SESSION_BUS_ADDRESS", &bus),
            Some(PathBuf::from("/tmp/dbus-x"))
        );
        assert_eq!(expand_path("/x/$OTHER", &env), Some(PathBuf::from("/x/$OTHER")));
    }

    #[test]
    fn the_session_bus_socket_is_the_first_unix_path_of_the_address() {
        let cases = [
            ("unix:path=/run/user/1000/bus", Some("/run/user/1000/bus")),
            ("unix:path=/tmp/dbus-AbC,guid=0123abcd", Some("/tmp/dbus-AbC")),
            ("unix:abstract=/tmp/dbus-x,guid=1;unix:path=/tmp/b%20us", Some("/tmp/b us")),
            ("unix:abstract=/tmp/dbus-x,guid=1", None),
            ("tcp:host=localhost,port=1234", None),
            ("unix:path=relative", None),
            ("unix:path=/", None),
            ("unix:path=/tmp/bad%2", None),
            ("", None),
        ];
        for (address, expected) in cases {
            assert_eq!(session_bus_socket(address), expected.map(PathBuf::from), "{address}");
        }
    }
}

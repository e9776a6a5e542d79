//! Default protected and hidden paths (what the Linux mount view and the Seatbelt profile keep
//! read-only or out of sight) and `~` expansion.

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

/// Secrets a command should not read: replaced by an empty read-only directory (or `/dev/null`
/// for files) inside the sandbox. The container-engine sockets are on the list because a
/// connection to them is root on the host, and neither Landlock (before ABI 9) nor a read-only
/// mount stops `connect()` on a UNIX socket.
pub const DEFAULT_HIDDEN_PATHS: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.npmrc",
    "~/.pypirc",
    "~/.cargo/credentials.toml",
    "~/.config/gh",
    "~/.config/hub",
    "~/.vault-token",
    "~/.terraformrc",
    "~/.terraform.d",
    "~/.password-store",
    "~/.local/share/keyrings",
    "~/.gem/credentials",
    "~/.config/rclone",
    // Databases: passwords in client config, and histories that hold what was typed.
    "~/.pgpass",
    "~/.my.cnf",
    "~/.mylogin.cnf",
    "~/.psql_history",
    "~/.mysql_history",
    "~/.sqlite_history",
    "~/.rediscli_history",
    // Shell and REPL histories: tokens pasted on a command line stay there.
    "~/.bash_history",
    "~/.zsh_history",
    "~/.zhistory",
    "~/.histfile",
    "~/.local/share/fish/fish_history",
    "~/.python_history",
    "~/.node_repl_history",
    // Cloud and hosting command-line tools.
    "~/.config/doctl",
    "~/.config/hcloud",
    "~/.fly",
    "~/.config/netlify",
    "~/.netlify",
    "~/.local/share/com.vercel.cli",
    "~/.wrangler",
    "~/.config/.wrangler",
    "~/.oci",
    "~/.bluemix",
    "~/.config/linode-cli",
    "~/.s3cfg",
    "~/.boto",
    "~/.config/helm",
    "~/.config/containers/auth.json",
    // Package registries (files that are also a tool's configuration stay hidden until that
    // tool's preset passes the non-secret settings through its own variables).
    "~/.gradle/gradle.properties",
    "~/.m2/settings.xml",
    "~/.m2/settings-security.xml",
    "~/.composer/auth.json",
    "~/.config/composer/auth.json",
    "~/.nuget/NuGet/NuGet.Config",
    "~/.yarnrc.yml",
    "~/.config/pip/pip.conf",
    "~/.pip/pip.conf",
    // Source hosts and git's own credential store.
    "~/.config/glab-cli",
    "~/.config/git/credentials",
    // Password managers and their agents.
    "~/.config/Bitwarden",
    "~/.config/Bitwarden CLI",
    "~/.config/op",
    "~/.1password",
    // Browser profiles (cookies, saved logins) and mail clients.
    "~/.mozilla",
    "~/.config/google-chrome",
    "~/.config/chromium",
    "~/.config/BraveSoftware",
    "~/.config/microsoft-edge",
    "~/.config/vivaldi",
    "~/.thunderbird",
    "~/.msmtprc",
    "~/.mbsyncrc",
    "~/.fetchmailrc",
    // The same on macOS.
    "~/Library/Keychains",
    "~/Library/Cookies",
    "~/Library/Application Support/Google/Chrome",
    "~/Library/Application Support/Firefox",
    "~/Library/Application Support/BraveSoftware",
    // uid 0 owns these, and a root caller keeps uid 0 inside the sandbox (without
    // capabilities, but the owner needs none): password hashes and the host's private keys.
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh/ssh_host_rsa_key",
    "/etc/ssh/ssh_host_ecdsa_key",
    "/etc/ssh/ssh_host_ed25519_key",
    "/etc/ssh/ssh_host_dsa_key",
    "/root/.ssh",
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    // The same engines' per-user sockets (Docker Desktop, Colima, Lima, OrbStack, a Podman
    // machine): a route to a root container, on macOS and on Linux.
    "~/.docker/run",
    "~/.colima",
    "~/.lima",
    "~/.orbstack/run",
    "~/.local/share/containers/podman/machine",
    // Sockets that run commands outside the sandbox for whoever connects. With the network
    // off seccomp already refuses connect(); with it on, only hiding them keeps them out of
    // reach (until Landlock ABI 9 decides connect() on socket files).
    "$SSH_AUTH_SOCK",
    "/tmp/tmux-$UID",
    "/tmp/.X11-unix",
    // The user's runtime directory: the D-Bus session bus, the systemd user manager, gpg-agent,
    // the keyring, rootless docker and podman.
    "$XDG_RUNTIME_DIR",
    "/run/user/$UID",
    "/run/dbus/system_bus_socket",
    "/run/screen",
];

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
/// `$XDG_RUNTIME_DIR` and `$SSH_AUTH_SOCK`. `None` when something it names is not set (the path
/// then names nothing).
pub fn expand_path(path: &str, env: &crate::PolicyEnv<'_>) -> Option<PathBuf> {
    let mut text = path.to_owned();
    let tokens: [(&str, Option<String>); 3] = [
        ("$XDG_RUNTIME_DIR", env.runtime_dir.map(|p| p.display().to_string())),
        ("$SSH_AUTH_SOCK", env.ssh_auth_sock.map(|p| p.display().to_string())),
        ("$UID", env.uid.map(|uid| uid.to_string())),
    ];
    for (token, value) in tokens {
        if text.contains(token) {
            text = text.replace(token, value.as_deref().filter(|v| !v.is_empty())?);
        }
    }
    expand_home(&text, env.home)
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
        assert_eq!(expand_path("/x/$OTHER", &env), Some(PathBuf::from("/x/$OTHER")));
    }
}

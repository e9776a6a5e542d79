use super::*;
use pretty_assertions::assert_eq;

const TOKENS: [&str; 5] =
    ["$XDG_RUNTIME_DIR", "$SSH_AUTH_SOCK", "$DBUS_SESSION_BUS_ADDRESS", "$KRB5CCNAME", "/"];

#[test]
fn the_default_hidden_paths_are_the_catalogue_in_order() {
    let paths: Vec<&str> = SECRET_FILES.iter().map(|entry| entry.path).collect();
    assert_eq!(DEFAULT_HIDDEN_PATHS.to_vec(), paths);
    assert_eq!(secret_file("~/.pgpass").map(|entry| entry.tool), Some("PostgreSQL"));
    assert_eq!(secret_file("~/.gitconfig"), None);
}

#[test]
fn every_entry_is_spelled_as_a_hidden_path_once_with_its_tool_and_why() {
    let mut seen = std::collections::BTreeSet::new();
    for entry in SECRET_FILES {
        assert!(seen.insert(entry.path), "{} twice", entry.path);
        let relocated = RELOCATING_VARIABLES.iter().any(|name| {
            entry.path == format!("${name}") || entry.path.starts_with(&format!("${name}/"))
        });
        assert!(
            entry.path.starts_with("~/")
                || TOKENS.iter().any(|t| entry.path.starts_with(t))
                || relocated,
            "{}",
            entry.path
        );
        assert!(!entry.path.ends_with('/') && !entry.path.contains("/../"), "{}", entry.path);
        assert!(!entry.tool.is_empty() && !entry.why.is_empty(), "{}", entry.path);
        // What lives in ~/Library is macOS's.
        if entry.path.starts_with("~/Library/") {
            assert_eq!(entry.platform, Platform::MacOs, "{}", entry.path);
        }
    }
}

/// Hiding any of these, or a directory above one, would break everyday work: git, cargo, pip,
/// npm and the shell read them, and they hold no secret.
#[test]
fn what_everyday_tools_need_stays_readable() {
    let everyday = [
        "~/.gitconfig",
        "~/.config/git/config",
        "~/.config/git/ignore",
        "~/.cargo/config.toml",
        "~/.cargo/bin",
        "~/.cargo/registry",
        "~/.rustup",
        "~/.npm",
        "~/.cache/pip",
        "~/.local/bin",
        "~/.local/lib",
        "~/.config/nvim",
        "~/.bashrc",
        "~/.profile",
        "~/.zshrc",
        "~/.docker/contexts/meta",
        "~/.m2/repository",
        "~/.gradle/caches",
        "~/.gem/ruby",
        "~/.nuget/packages",
        "~/.config/containers/registries.conf",
        "~/go/pkg",
        "~/.cache/huggingface/hub",
        "~/.ssh-not-a-key",
    ];
    for path in everyday {
        for entry in SECRET_FILES {
            let above = path == entry.path || path.starts_with(&format!("{}/", entry.path));
            assert!(!above, "{} hides {path}", entry.path);
        }
    }
}

#[test]
fn the_catalogue_covers_each_family_the_sandbox_promises() {
    let has = |path: &str| secret_file(path).is_some();
    for path in [
        "~/.ssh",
        "~/.pgpass",
        "~/.my.cnf",
        "~/.bash_history",
        "~/.zsh_history",
        "~/.python_history",
        "~/.psql_history",
        "~/.config/glab-cli",
        "~/.m2/settings.xml",
        "~/.config/pip/pip.conf",
        "~/.config/google-chrome",
        "~/.mozilla",
        "~/.config/chromium",
        "~/.config/hcloud",
        "~/.config/doctl",
        "~/.fly",
        "~/.gradle/gradle.properties",
        "~/.composer/auth.json",
        "~/.s3cfg",
        "~/.yarnrc.yml",
        "~/.gem/credentials",
        "~/.config/containers/auth.json",
        "~/.local/share/keyrings",
        "~/.1password",
        "~/.bitwarden-ssh-agent.sock",
        "$XDG_RUNTIME_DIR/bus",
        "$DBUS_SESSION_BUS_ADDRESS",
        "$XDG_RUNTIME_DIR/gnupg",
        "$XDG_RUNTIME_DIR/keyring",
        "~/Library/Keychains",
        "~/Library/Cookies",
    ] {
        assert!(has(path), "{path} is missing");
    }
    let kinds = |kind: SecretKind| SECRET_FILES.iter().filter(|e| e.kind == kind).count();
    assert!(kinds(SecretKind::Socket) >= 8, "{}", kinds(SecretKind::Socket));
    assert!(kinds(SecretKind::SocketDirectory) >= 10, "{}", kinds(SecretKind::SocketDirectory));
}

#[test]
fn docs_secrets_md_lists_every_entry() {
    let docs = include_str!("../../docs/secrets.md");
    for entry in SECRET_FILES {
        let row = format!("| {} | `{}` |", entry.tool, entry.path);
        assert!(docs.contains(&row), "docs/secrets.md lacks {row}");
    }
}

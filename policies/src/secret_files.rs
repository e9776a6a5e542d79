//! The catalogue of what a sandboxed command may not read: credential files and directories of
//! the tools developers commonly have, shell and REPL histories, browser and mail profiles,
//! password stores, the sockets of agents and buses that hand out secrets or run commands
//! outside the sandbox, and a few root-owned system secrets. One entry per path, with the tool
//! that keeps it there and why it is hidden; [`DEFAULT_HIDDEN_PATHS`] is this table's paths.
//!
//! Paths are spelled as hidden paths are: `~/…` (the home directory), `$XDG_RUNTIME_DIR/…`,
//! `$UID`, `$SSH_AUTH_SOCK`, `$DBUS_SESSION_BUS_ADDRESS` (the session bus's socket file),
//! `$KRB5CCNAME` (the Kerberos ticket cache's file), one of
//! the [`RELOCATING_VARIABLES`] (`$GNUPGHOME`, `$CARGO_HOME/credentials.toml`), or absolute. Every entry is hidden on every platform: a path that does not exist costs nothing,
//! and tools keep their Linux places on macOS often enough; [`Platform`] says where a tool
//! puts it.
//!
//! Files that are also a tool's configuration (`.npmrc`, `pip.conf`, `.m2/settings.xml`,
//! `.yarnrc.yml`, `gradle.properties`) are hidden whole: what in them is not secret (a registry,
//! an index URL) has to reach the tool another way.

/// What is expected at a catalogue path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    File,
    Directory,
    /// A UNIX socket: an agent or a bus that answers whoever connects.
    Socket,
    /// A directory that holds such sockets.
    SocketDirectory,
}

/// Where a tool keeps the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    All,
    Linux,
    #[serde(rename = "macos")]
    MacOs,
}

/// One catalogue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SecretFile {
    /// The tool (or the system) that keeps it.
    pub tool: &'static str,
    /// The hidden path, in hidden-path spelling.
    pub path: &'static str,
    pub kind: SecretKind,
    pub platform: Platform,
    /// What it holds that a command must not read (or reach).
    pub why: &'static str,
}

impl SecretFile {
    const fn linux(self) -> SecretFile {
        SecretFile { platform: Platform::Linux, ..self }
    }

    const fn macos(self) -> SecretFile {
        SecretFile { platform: Platform::MacOs, ..self }
    }
}

const fn entry(tool: &'static str, path: &'static str, kind: SecretKind) -> SecretFile {
    SecretFile { tool, path, kind, platform: Platform::All, why: "" }
}

const fn file(tool: &'static str, path: &'static str, why: &'static str) -> SecretFile {
    SecretFile { why, ..entry(tool, path, SecretKind::File) }
}

const fn dir(tool: &'static str, path: &'static str, why: &'static str) -> SecretFile {
    SecretFile { why, ..entry(tool, path, SecretKind::Directory) }
}

const fn socket(tool: &'static str, path: &'static str, why: &'static str) -> SecretFile {
    SecretFile { why, ..entry(tool, path, SecretKind::Socket) }
}

const fn sockets(tool: &'static str, path: &'static str, why: &'static str) -> SecretFile {
    SecretFile { why, ..entry(tool, path, SecretKind::SocketDirectory) }
}

const KEYS: &str = "private keys";
const TOKEN: &str = "API token";
const TOKENS: &str = "access tokens";
const PASSWORDS: &str = "passwords";
const HISTORY: &str = "what was typed, pasted tokens and passwords included";
const PROFILE: &str = "cookies, saved passwords, session tokens";
const MAIL: &str = "mail server passwords";
const REGISTRY: &str = "registry credentials (also its configuration)";
const VAULT: &str = "the password vault";
const RUNS_CODE: &str = "runs commands outside the sandbox for whoever connects";
const ROOT_ENGINE: &str = "a container engine: root on the host for whoever connects";

/// The variables that move a tool's secrets out of its default place. An entry spelled
/// `$NAME` or `$NAME/…` is hidden where the variable (in cordon's own environment) points; the
/// XDG base directories move the `~/.config`, `~/.local/share`, `~/.cache` and `~/.local/state`
/// entries.
pub const RELOCATING_VARIABLES: &[&str] = &[
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "GNUPGHOME",
    "PASSWORD_STORE_DIR",
    "CARGO_HOME",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "GH_CONFIG_DIR",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "KUBECONFIG",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "AZURE_CONFIG_DIR",
    "NPM_CONFIG_USERCONFIG",
    "PIP_CONFIG_FILE",
    "GRADLE_USER_HOME",
    "TF_CLI_CONFIG_FILE",
    "RCLONE_CONFIG",
    "NETRC",
    "PGPASSFILE",
    "HISTFILE",
    "PSQL_HISTORY",
    "PYTHON_HISTORY",
    "NODE_REPL_HISTORY",
];

/// Every path hidden by default.
pub const SECRET_FILES: &[SecretFile] = &[
    // Keys and agents.
    dir("OpenSSH", "~/.ssh", "private keys, known hosts"),
    dir("GnuPG", "~/.gnupg", "private keys, the agent's sockets"),
    socket("ssh-agent", "$SSH_AUTH_SOCK", "signs with the user's keys for whoever connects"),
    sockets("1Password", "~/.1password", "the SSH agent (agent.sock)").linux(),
    socket("Bitwarden", "~/.bitwarden-ssh-agent.sock", "the SSH agent").linux(),
    // git's credential cache daemon: its socket hands out the stored passwords to whoever asks
    // (`git credential-cache get`); where git puts it by default, and its older place.
    sockets("git credential-cache", "~/.cache/git/credential", "hands out stored passwords"),
    sockets("git credential-cache", "~/.git-credential-cache", "hands out stored passwords"),
    // MIT Kerberos's default ticket cache (FILE:/tmp/krb5cc_UID): authenticates as the user.
    file("Kerberos", "/tmp/krb5cc_$UID", "tickets that authenticate as the user").linux(),
    // Wherever `$KRB5CCNAME` puts them (a file, or a `DIR:` collection).
    file("Kerberos", "$KRB5CCNAME", "tickets that authenticate as the user"),
    dir("age / SOPS", "~/.config/sops/age", KEYS),
    dir("age / SOPS", "~/Library/Application Support/sops/age", KEYS).macos(),
    file("X11", "~/.Xauthority", "the cookie that lets a client type into other windows").linux(),
    file("X11", "~/.ICEauthority", "session-manager cookies").linux(),
    dir("NSS", "~/.pki", "client certificates and their keys").linux(),
    // Cloud and hosting command-line tools.
    dir("AWS CLI", "~/.aws", "access keys, SSO tokens"),
    dir("Google Cloud SDK", "~/.config/gcloud", "OAuth tokens, service-account keys"),
    dir("Azure CLI", "~/.azure", TOKENS),
    dir("DigitalOcean doctl", "~/.config/doctl", TOKEN),
    dir("DigitalOcean doctl", "~/Library/Application Support/doctl", TOKEN).macos(),
    dir("Hetzner hcloud", "~/.config/hcloud", TOKENS),
    dir("Hetzner hcloud", "~/Library/Application Support/hcloud", TOKENS).macos(),
    dir("Fly.io flyctl", "~/.fly", TOKEN),
    dir("Netlify CLI", "~/.config/netlify", TOKEN),
    dir("Netlify CLI", "~/.netlify", TOKEN),
    dir("Netlify CLI", "~/Library/Preferences/netlify", TOKEN).macos(),
    dir("Vercel CLI", "~/.local/share/com.vercel.cli", TOKEN),
    dir("Vercel CLI", "~/Library/Application Support/com.vercel.cli", TOKEN).macos(),
    dir("Vercel CLI", "~/.now", TOKEN),
    dir("Cloudflare wrangler", "~/.wrangler", TOKENS),
    dir("Cloudflare wrangler", "~/.config/.wrangler", TOKENS),
    dir("Cloudflare wrangler", "~/Library/Preferences/.wrangler", TOKENS).macos(),
    dir("Cloudflare cloudflared", "~/.cloudflared", "tunnel credentials"),
    dir("Oracle Cloud CLI", "~/.oci", "API signing keys"),
    dir("IBM Cloud CLI", "~/.bluemix", TOKENS),
    dir("Alibaba Cloud CLI", "~/.aliyun", "access keys"),
    dir("Linode CLI", "~/.config/linode-cli", TOKEN),
    dir("Scaleway CLI", "~/.config/scw", "access keys"),
    file("OVHcloud", "~/.ovh.conf", "application keys"),
    dir("Exoscale CLI", "~/.config/exoscale", "API keys"),
    file("s3cmd", "~/.s3cfg", "access keys"),
    file("boto / gsutil", "~/.boto", "access keys"),
    file("s3fs", "~/.passwd-s3fs", "access keys"),
    file("Backblaze B2", "~/.b2_account_info", "application keys"),
    dir("MinIO client", "~/.mc", "access keys"),
    dir("MinIO client", "~/.mcli", "access keys"),
    dir("rclone", "~/.config/rclone", "cloud storage tokens"),
    file("netrc", "~/.netrc", "logins for curl, git, Go modules, the Heroku CLI"),
    dir("Railway CLI", "~/.railway", TOKEN),
    dir("Supabase CLI", "~/.supabase", TOKEN),
    file("Firebase CLI", "~/.config/configstore/firebase-tools.json", "OAuth tokens"),
    dir("Pulumi", "~/.pulumi", TOKENS),
    file("HashiCorp Vault", "~/.vault-token", TOKEN),
    file("Terraform", "~/.terraformrc", TOKENS),
    dir("Terraform", "~/.terraform.d", TOKENS),
    dir("ngrok", "~/.config/ngrok", TOKEN),
    dir("ngrok", "~/.ngrok2", TOKEN),
    dir("ngrok", "~/Library/Application Support/ngrok", TOKEN).macos(),
    dir("Stripe CLI", "~/.config/stripe", "API keys"),
    dir("Twilio CLI", "~/.twilio-cli", "API keys"),
    file("Sentry CLI", "~/.sentryclirc", TOKEN),
    dir("CircleCI CLI", "~/.circleci", TOKEN),
    file("Databricks CLI", "~/.databrickscfg", TOKENS),
    dir("Snowflake SnowSQL", "~/.snowsql", PASSWORDS),
    dir("Snowflake CLI", "~/.config/snowflake", PASSWORDS),
    dir("Kaggle", "~/.kaggle", TOKEN),
    file("Hugging Face", "~/.cache/huggingface/token", TOKEN),
    file("Hugging Face", "~/.huggingface/token", TOKEN),
    file("OpenAI Codex", "~/.codex/auth.json", "API key, OAuth tokens"),
    file("Claude Code", "~/.claude/.credentials.json", "OAuth tokens"),
    file("Gemini CLI", "~/.gemini/oauth_creds.json", "OAuth tokens"),
    dir("GitHub Copilot", "~/.config/github-copilot", "OAuth tokens"),
    file("WakaTime", "~/.wakatime.cfg", TOKEN),
    // Containers and clusters.
    dir("Kubernetes", "~/.kube", "cluster credentials"),
    dir("minikube", "~/.minikube", "cluster keys"),
    dir("Talos", "~/.talos", "cluster keys"),
    dir("Helm", "~/.config/helm", "repository and registry passwords"),
    file("Docker", "~/.docker/config.json", "registry credentials"),
    dir("Docker", "~/.docker/contexts/tls", "TLS client keys of docker contexts"),
    file("Podman", "~/.config/containers/auth.json", "registry credentials"),
    file("Podman", "$XDG_RUNTIME_DIR/containers/auth.json", "registry credentials").linux(),
    // Package registries.
    file("npm", "~/.npmrc", REGISTRY),
    file("Yarn", "~/.yarnrc.yml", REGISTRY),
    file("pnpm", "~/.config/pnpm/rc", REGISTRY),
    file("Bun", "~/.bunfig.toml", REGISTRY),
    file("PyPI", "~/.pypirc", "upload tokens"),
    file("pip", "~/.config/pip/pip.conf", "index URLs with passwords (also its configuration)"),
    file("pip", "~/.pip/pip.conf", "index URLs with passwords (also its configuration)"),
    file("pip", "~/Library/Application Support/pip/pip.conf", "index URLs with passwords").macos(),
    file("Poetry", "~/.config/pypoetry/auth.toml", "repository passwords"),
    file("Poetry", "~/Library/Application Support/pypoetry/auth.toml", PASSWORDS).macos(),
    dir("uv", "~/.local/share/uv/credentials", "index credentials"),
    dir("Python keyring", "~/.local/share/python_keyring", "stored passwords"),
    file("Cargo", "~/.cargo/credentials.toml", "crates.io token"),
    file("Cargo", "~/.cargo/credentials", "crates.io token"),
    file("RubyGems", "~/.gem/credentials", "API keys"),
    file("Bundler", "~/.bundle/config", "gem source credentials (also its configuration)"),
    file("Maven", "~/.m2/settings.xml", REGISTRY),
    file("Maven", "~/.m2/settings-security.xml", "the master password"),
    file("Gradle", "~/.gradle/gradle.properties", REGISTRY),
    file("Gradle", "~/.gradle/enterprise/keys.properties", "build-scan access keys"),
    file("Composer", "~/.composer/auth.json", REGISTRY),
    file("Composer", "~/.config/composer/auth.json", REGISTRY),
    file("NuGet", "~/.nuget/NuGet/NuGet.Config", REGISTRY),
    file("NuGet", "~/.config/NuGet/NuGet.Config", REGISTRY),
    file("Dart pub", "~/.config/dart/pub-credentials.json", "OAuth tokens"),
    file("Dart pub", "~/.config/dart/pub-tokens.json", TOKENS),
    dir("Dart pub", "~/Library/Application Support/dart", TOKENS).macos(),
    dir("JFrog CLI", "~/.jfrog", TOKENS),
    // Source hosts and git's credential stores.
    dir("GitHub CLI", "~/.config/gh", "OAuth token"),
    dir("hub", "~/.config/hub", "OAuth token"),
    dir("GitLab glab", "~/.config/glab-cli", TOKENS),
    dir("GitLab glab", "~/Library/Application Support/glab-cli", TOKENS).macos(),
    dir("Gitea tea", "~/.config/tea", TOKENS),
    dir("SourceHut hut", "~/.config/hut", TOKENS),
    file("git", "~/.git-credentials", "stored logins (GitHub, GitLab, Bitbucket, …)"),
    file("git", "~/.config/git/credentials", "stored logins (GitHub, GitLab, Bitbucket, …)"),
    dir("Git Credential Manager", "~/.gcm", "stored logins"),
    file("Emacs auth-source", "~/.authinfo", "logins"),
    file("Emacs auth-source", "~/.authinfo.gpg", "logins"),
    // Databases.
    file("PostgreSQL", "~/.pgpass", PASSWORDS),
    file("PostgreSQL", "~/.pg_service.conf", PASSWORDS),
    file("MySQL", "~/.my.cnf", PASSWORDS),
    file("MySQL", "~/.mylogin.cnf", PASSWORDS),
    file("mycli", "~/.myclirc", PASSWORDS),
    dir("pgcli", "~/.config/pgcli", "saved connections, history"),
    dir("pgAdmin", "~/.pgadmin", "saved passwords"),
    dir("DBeaver", "~/.local/share/DBeaverData", "saved passwords"),
    dir("DBeaver", "~/Library/DBeaverData", "saved passwords").macos(),
    dir("MongoDB Shell", "~/.mongodb", "history, saved connections"),
    dir("Cassandra cqlsh", "~/.cassandra", "passwords, history"),
    dir("ClickHouse client", "~/.clickhouse-client", PASSWORDS),
    dir("InfluxDB CLI", "~/.influxdbv2", TOKENS),
    file("dbt", "~/.dbt/profiles.yml", "warehouse passwords (also its configuration)"),
    // Shell and REPL histories.
    file("bash", "~/.bash_history", HISTORY),
    file("zsh", "~/.zsh_history", HISTORY),
    file("zsh", "~/.zhistory", HISTORY),
    file("zsh", "~/.histfile", HISTORY),
    dir("zsh", "~/.zsh_sessions", HISTORY).macos(),
    file("ksh", "~/.sh_history", HISTORY),
    file("BusyBox ash", "~/.ash_history", HISTORY),
    file("tcsh", "~/.history", HISTORY),
    file("fish", "~/.local/share/fish/fish_history", HISTORY),
    file("Nushell", "~/.config/nushell/history.txt", HISTORY),
    file("Nushell", "~/Library/Application Support/nushell/history.txt", HISTORY).macos(),
    dir("Atuin", "~/.local/share/atuin", HISTORY),
    dir("McFly", "~/.local/share/mcfly", HISTORY),
    dir("McFly", "~/Library/Application Support/McFly", HISTORY).macos(),
    file("Python", "~/.python_history", HISTORY),
    file("bpython", "~/.pythonhist", HISTORY),
    file("Node.js", "~/.node_repl_history", HISTORY),
    file("Ruby irb", "~/.irb_history", HISTORY),
    file("Ruby pry", "~/.pry_history", HISTORY),
    file("GHCi", "~/.ghc/ghci_history", HISTORY),
    file("Julia", "~/.julia/logs/repl_history.jl", HISTORY),
    file("R", "~/.Rhistory", HISTORY),
    file("PostgreSQL psql", "~/.psql_history", HISTORY),
    file("MySQL", "~/.mysql_history", HISTORY),
    file("mycli", "~/.mycli-history", HISTORY),
    file("SQLite", "~/.sqlite_history", HISTORY),
    file("DuckDB", "~/.duckdb_history", HISTORY),
    file("Redis redis-cli", "~/.rediscli_history", HISTORY),
    file("MongoDB mongo", "~/.dbshell", HISTORY),
    file("ClickHouse client", "~/.clickhouse-client-history", HISTORY),
    file("InfluxDB CLI", "~/.influx_history", HISTORY),
    file("usql", "~/.usql_history", HISTORY),
    // Password managers and keyrings.
    dir("pass", "~/.password-store", "encrypted passwords"),
    dir("gopass", "~/.local/share/gopass", "encrypted passwords"),
    dir("GNOME Keyring", "~/.local/share/keyrings", "the login keyring").linux(),
    dir("KWallet", "~/.local/share/kwalletd", "the wallet").linux(),
    dir("KWallet", "~/.kde/share/apps/kwallet", "the wallet").linux(),
    dir("KWallet", "~/.kde4/share/apps/kwallet", "the wallet").linux(),
    dir("macOS Keychain", "~/Library/Keychains", "the login keychain").macos(),
    dir("1Password", "~/.config/1Password", VAULT).linux(),
    dir("1Password CLI", "~/.config/op", "sessions"),
    dir("1Password CLI", "~/.op", "sessions"),
    dir("1Password", "~/Library/Group Containers/2BUA8C4S2C.com.1password", VAULT).macos(),
    dir("Bitwarden", "~/.config/Bitwarden", VAULT).linux(),
    dir("Bitwarden CLI", "~/.config/Bitwarden CLI", VAULT).linux(),
    dir("Bitwarden", "~/.var/app/com.bitwarden.desktop", "the vault, the SSH agent").linux(),
    dir("Bitwarden", "~/Library/Application Support/Bitwarden", VAULT).macos(),
    dir("Bitwarden CLI", "~/Library/Application Support/Bitwarden CLI", VAULT).macos(),
    dir("Bitwarden", "~/Library/Containers/com.bitwarden.desktop", "the vault, the SSH agent")
        .macos(),
    dir("Secretive", "~/Library/Containers/com.maxgoedjen.Secretive.SecretAgent", "the SSH agent")
        .macos(),
    dir("LastPass CLI", "~/.local/share/lpass", "the vault").linux(),
    dir("LastPass CLI", "~/.lpass", "the vault"),
    // Browser profiles and chat clients.
    dir("Firefox", "~/.mozilla", PROFILE).linux(),
    dir("Firefox", "~/snap/firefox/common/.mozilla", PROFILE).linux(),
    dir("Firefox", "~/.var/app/org.mozilla.firefox", PROFILE).linux(),
    dir("LibreWolf", "~/.librewolf", PROFILE).linux(),
    dir("Google Chrome", "~/.config/google-chrome", PROFILE).linux(),
    dir("Google Chrome", "~/.config/google-chrome-beta", PROFILE).linux(),
    dir("Google Chrome", "~/.config/google-chrome-unstable", PROFILE).linux(),
    dir("Google Chrome", "~/.var/app/com.google.Chrome", PROFILE).linux(),
    dir("Chromium", "~/.config/chromium", PROFILE).linux(),
    dir("Chromium", "~/snap/chromium/common/chromium", PROFILE).linux(),
    dir("Chromium", "~/.var/app/org.chromium.Chromium", PROFILE).linux(),
    dir("Brave", "~/.config/BraveSoftware", PROFILE).linux(),
    dir("Brave", "~/.var/app/com.brave.Browser", PROFILE).linux(),
    dir("Microsoft Edge", "~/.config/microsoft-edge", PROFILE).linux(),
    dir("Microsoft Edge", "~/.config/microsoft-edge-beta", PROFILE).linux(),
    dir("Microsoft Edge", "~/.config/microsoft-edge-dev", PROFILE).linux(),
    dir("Vivaldi", "~/.config/vivaldi", PROFILE).linux(),
    dir("Opera", "~/.config/opera", PROFILE).linux(),
    dir("GNOME Web", "~/.local/share/epiphany", PROFILE).linux(),
    dir("Slack", "~/.config/Slack", "session tokens").linux(),
    dir("Discord", "~/.config/discord", "session token").linux(),
    dir("Google Chrome", "~/Library/Application Support/Google/Chrome", PROFILE).macos(),
    dir("Chromium", "~/Library/Application Support/Chromium", PROFILE).macos(),
    dir("Firefox", "~/Library/Application Support/Firefox", PROFILE).macos(),
    dir("Brave", "~/Library/Application Support/BraveSoftware", PROFILE).macos(),
    dir("Microsoft Edge", "~/Library/Application Support/Microsoft Edge", PROFILE).macos(),
    dir("Vivaldi", "~/Library/Application Support/Vivaldi", PROFILE).macos(),
    dir("Arc", "~/Library/Application Support/Arc", PROFILE).macos(),
    dir("Opera", "~/Library/Application Support/com.operasoftware.Opera", PROFILE).macos(),
    dir("Safari", "~/Library/Safari", "history, saved form data").macos(),
    dir("Safari", "~/Library/Containers/com.apple.Safari", PROFILE).macos(),
    dir("macOS", "~/Library/Cookies", "cookies").macos(),
    dir("Slack", "~/Library/Application Support/Slack", "session tokens").macos(),
    dir("Discord", "~/Library/Application Support/discord", "session token").macos(),
    // Mail clients.
    dir("Thunderbird", "~/.thunderbird", "saved passwords, mail").linux(),
    dir("Thunderbird", "~/snap/thunderbird/common/.thunderbird", "saved passwords, mail").linux(),
    dir("Thunderbird", "~/.var/app/org.mozilla.Thunderbird", "saved passwords, mail").linux(),
    dir("Thunderbird", "~/Library/Thunderbird", "saved passwords, mail").macos(),
    dir("Evolution", "~/.local/share/evolution", "mail").linux(),
    dir("Apple Mail", "~/Library/Mail", "mail").macos(),
    file("msmtp", "~/.msmtprc", MAIL),
    dir("msmtp", "~/.config/msmtp", MAIL),
    file("isync", "~/.mbsyncrc", MAIL),
    file("isync", "~/.config/isyncrc", MAIL),
    file("fetchmail", "~/.fetchmailrc", MAIL),
    file("OfflineIMAP", "~/.offlineimaprc", MAIL),
    file("Mutt", "~/.muttrc", MAIL),
    dir("Mutt", "~/.mutt", MAIL),
    dir("Mutt", "~/.config/mutt", MAIL),
    file("NeoMutt", "~/.neomuttrc", MAIL),
    dir("NeoMutt", "~/.config/neomutt", MAIL),
    dir("aerc", "~/.config/aerc", MAIL),
    dir("FileZilla", "~/.config/filezilla", "saved server passwords"),
    // Buses and agents in the user's runtime directory: the whole directory is hidden; the
    // entries below stay hidden when a user un-hides it.
    sockets("user runtime directory", "$XDG_RUNTIME_DIR", "the buses and agents below").linux(),
    sockets("user runtime directory", "/run/user/$UID", "the buses and agents below").linux(),
    socket("D-Bus", "$XDG_RUNTIME_DIR/bus", "the Secret Service (keyrings), systemd --user")
        .linux(),
    socket("D-Bus", "$DBUS_SESSION_BUS_ADDRESS", "the session bus, wherever it listens"),
    sockets("GnuPG", "$XDG_RUNTIME_DIR/gnupg", "gpg-agent: decrypts and signs").linux(),
    sockets("GNOME Keyring", "$XDG_RUNTIME_DIR/keyring", "keyring control, SSH agent").linux(),
    sockets("gcr", "$XDG_RUNTIME_DIR/gcr", "the SSH agent").linux(),
    sockets("systemd", "$XDG_RUNTIME_DIR/systemd", RUNS_CODE).linux(),
    socket("Docker (rootless)", "$XDG_RUNTIME_DIR/docker.sock", RUNS_CODE).linux(),
    sockets("Podman (rootless)", "$XDG_RUNTIME_DIR/podman", RUNS_CODE).linux(),
    socket("D-Bus", "/run/dbus/system_bus_socket", "system services (polkit, logind)").linux(),
    sockets("tmux", "/tmp/tmux-$UID", "types into the user's shells"),
    sockets("X11", "/tmp/.X11-unix", "types into the user's windows").linux(),
    sockets("GNU screen", "/run/screen", "types into the user's shells").linux(),
    // Container engines: a connection is root on the host (or in its VM).
    socket("Docker", "/var/run/docker.sock", ROOT_ENGINE),
    socket("Docker", "/run/docker.sock", ROOT_ENGINE).linux(),
    socket("containerd", "/run/containerd/containerd.sock", ROOT_ENGINE).linux(),
    socket("Podman", "/run/podman/podman.sock", ROOT_ENGINE).linux(),
    sockets("Docker Desktop", "~/.docker/run", ROOT_ENGINE),
    sockets("Docker Desktop", "~/.docker/desktop", ROOT_ENGINE).linux(),
    sockets("Colima", "~/.colima", ROOT_ENGINE).macos(),
    sockets("Lima", "~/.lima", ROOT_ENGINE),
    sockets("OrbStack", "~/.orbstack/run", ROOT_ENGINE).macos(),
    sockets("Rancher Desktop", "~/.rd", ROOT_ENGINE),
    sockets("Podman machine", "~/.local/share/containers/podman/machine", ROOT_ENGINE),
    // The same secrets where the user's variables put them.
    dir("GnuPG", "$GNUPGHOME", "private keys, the agent's sockets"),
    dir("pass", "$PASSWORD_STORE_DIR", "encrypted passwords"),
    file("Cargo", "$CARGO_HOME/credentials.toml", "crates.io token"),
    file("Cargo", "$CARGO_HOME/credentials", "crates.io token"),
    file("Docker", "$DOCKER_CONFIG/config.json", "registry credentials"),
    dir("Docker", "$DOCKER_CONFIG/contexts/tls", "TLS client keys of docker contexts"),
    dir("Docker", "$DOCKER_CERT_PATH", "client keys for a remote daemon"),
    dir("GitHub CLI", "$GH_CONFIG_DIR", "OAuth token"),
    file("AWS CLI", "$AWS_SHARED_CREDENTIALS_FILE", "access keys"),
    file("AWS CLI", "$AWS_CONFIG_FILE", "access keys, SSO settings"),
    file("Kubernetes", "$KUBECONFIG", "cluster credentials"),
    file("Google Cloud", "$GOOGLE_APPLICATION_CREDENTIALS", "a service-account key"),
    dir("Google Cloud SDK", "$CLOUDSDK_CONFIG", "OAuth tokens, service-account keys"),
    dir("Azure CLI", "$AZURE_CONFIG_DIR", TOKENS),
    file("npm", "$NPM_CONFIG_USERCONFIG", REGISTRY),
    file("pip", "$PIP_CONFIG_FILE", "index URLs with passwords (also its configuration)"),
    file("Gradle", "$GRADLE_USER_HOME/gradle.properties", REGISTRY),
    file("Terraform", "$TF_CLI_CONFIG_FILE", TOKENS),
    file("rclone", "$RCLONE_CONFIG", "cloud storage tokens"),
    file("netrc", "$NETRC", "logins"),
    file("PostgreSQL", "$PGPASSFILE", PASSWORDS),
    file("bash", "$HISTFILE", HISTORY),
    file("PostgreSQL psql", "$PSQL_HISTORY", HISTORY),
    file("Python", "$PYTHON_HISTORY", HISTORY),
    file("Node.js", "$NODE_REPL_HISTORY", HISTORY),
    // uid 0 owns these, and a root caller keeps uid 0 inside the sandbox (without
    // capabilities, but the owner needs none): password hashes and the host's private keys.
    file("system", "/etc/shadow", "password hashes").linux(),
    file("system", "/etc/shadow-", "password hashes").linux(),
    file("system", "/etc/gshadow", "password hashes").linux(),
    file("system", "/etc/gshadow-", "password hashes").linux(),
    file("OpenSSH server", "/etc/ssh/ssh_host_rsa_key", "the host key"),
    file("OpenSSH server", "/etc/ssh/ssh_host_ecdsa_key", "the host key"),
    file("OpenSSH server", "/etc/ssh/ssh_host_ed25519_key", "the host key"),
    file("OpenSSH server", "/etc/ssh/ssh_host_dsa_key", "the host key"),
    dir("OpenSSH", "/root/.ssh", "root's private keys").linux(),
];

const HIDDEN_PATHS: [&str; SECRET_FILES.len()] = {
    let mut paths = [""; SECRET_FILES.len()];
    let mut i = 0;
    while i < SECRET_FILES.len() {
        paths[i] = SECRET_FILES[i].path;
        i += 1;
    }
    paths
};

/// The paths of [`SECRET_FILES`]: what the Linux mount view replaces by empty read-only
/// stand-ins (an empty directory, `/dev/null`) and the Seatbelt profile denies, unless a policy
/// names its own list.
pub const DEFAULT_HIDDEN_PATHS: &[&str] = &HIDDEN_PATHS;

/// The catalogue entry for a hidden-path spelling, if it is one.
pub fn secret_file(path: &str) -> Option<&'static SecretFile> {
    SECRET_FILES.iter().find(|entry| entry.path == path)
}

#[cfg(test)]
#[path = "secret_files_tests.rs"]
mod tests;

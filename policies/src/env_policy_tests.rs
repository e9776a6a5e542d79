//! The default excludes, one row per variable: the same table as `docs/environment.md`.

use super::*;
use pretty_assertions::assert_eq;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Kept,
    Removed(RemovalReason),
    /// Kept with this value.
    Redacted(&'static str),
}

use Expect::{Kept, Redacted, Removed};
use RemovalReason::{SecretName, SecretValue, UrlCredentials};

const PEM: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n";

/// (name, value, what the default policy does with it).
const TABLE: &[(&str, &str, Expect)] = &[
    // Ordinary variables, including the borderline names kept on purpose.
    ("PATH", "/usr/local/bin:/usr/bin", Kept),
    ("HOME", "/home/u", Kept),
    ("PWD", "/home/u/project", Kept),
    ("OLDPWD", "/home/u", Kept),
    ("LANG", "en_US.UTF-8", Kept),
    ("TERM", "xterm-256color", Kept),
    ("EDITOR", "vim", Kept),
    ("CLASSPATH", "/usr/share/java", Kept),
    ("CARGO_HOME", "/home/u/.cargo", Kept),
    ("RUST_LOG", "debug", Kept),
    ("AWS_REGION", "eu-west-1", Kept),
    ("AWS_PROFILE", "dev", Kept),
    ("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt", Kept),
    ("NODE_EXTRA_CA_CERTS", "/etc/ssl/corp-ca.pem", Kept),
    ("XDG_SESSION_TYPE", "wayland", Kept),
    ("DESKTOP_SESSION", "gnome", Kept),
    ("GIT_AUTHOR_NAME", "Ada Lovelace", Kept),
    ("GIT_AUTHOR_EMAIL", "ada@example.com", Kept),
    ("HTTP_PROXY", "http://proxy.internal:3128", Kept),
    ("UPSTREAM", "ssh://git@github.com/org/repo.git", Kept),
    ("MODEL_DIR", "/opt/sk-learn-models-directory-abc", Kept),
    ("DOC", "see https://example.com/a:b@c for details", Kept),
    // Credential names.
    ("MYSQL_PWD", "hunter2", Removed(SecretName)),
    ("GPG_PASSPHRASE", "correct horse", Removed(SecretName)),
    ("PASSWD", "hunter2", Removed(SecretName)),
    ("PGPASSWORD", "hunter2", Removed(SecretName)),
    ("GITHUB_PAT", "abc", Removed(SecretName)),
    ("github_token", "abc", Removed(SecretName)),
    ("AWS_SECRET_ACCESS_KEY", "abc", Removed(SecretName)),
    ("GOOGLE_CREDENTIALS", "{\"type\":\"service_account\"}", Removed(SecretName)),
    ("GOOGLE_APPLICATION_CREDENTIALS", "/home/u/key.json", Removed(SecretName)),
    ("NPM_CONFIG__AUTH", "dXNlcjpwYXNz", Removed(SecretName)),
    ("DOCKER_AUTH_CONFIG", "{\"auths\":{}}", Removed(SecretName)),
    ("CI_JOB_JWT", "abc", Removed(SecretName)),
    ("AUTH_COOKIE", "abc", Removed(SecretName)),
    ("SENTRY_DSN", "https://abc@o1.ingest.sentry.io/1", Removed(SecretName)),
    ("SESSION_SECRET", "abc", Removed(SecretName)),
    ("UPSTREAM_AUTHZ", "abc", Removed(SecretName)),
    // Borderline names that go: pointers to credential stores and helpers.
    ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1", Removed(SecretName)),
    ("XAUTHORITY", "/home/u/.Xauthority", Removed(SecretName)),
    ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus", Removed(SecretName)),
    ("XDG_SESSION_ID", "3", Removed(SecretName)),
    ("SESSION_MANAGER", "local/host:@/tmp/.ICE-unix/1234", Removed(SecretName)),
    ("PASSWORD_STORE_DIR", "/home/u/.password-store", Kept),
    ("DB_PW", "hunter2", Removed(SecretName)),
    ("DB_CREDS", "admin:hunter2", Removed(SecretName)),
    ("SLACK_WEBHOOK", "https://example.test/x", Removed(SecretName)),
    ("AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true", Removed(SecretName)),
    (
        "STORAGE",
        "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abcDEF123456==",
        Removed(SecretValue),
    ),
    (
        "NOTIFY",
        "https://hooks.slack.com/services/T0000/B0000/abcdefghijklmnopqrstuvwx",
        Removed(SecretValue),
    ),
    ("PROXY_HEADER", "Authorization: Basic dXNlcjpwYXNzd29yZA==", Removed(SecretValue)),
    (
        "AWS_CONFIG_LINE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        Removed(SecretValue),
    ),
    (
        "MAIL_KEY_VALUE",
        "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
        Removed(SecretName),
    ),
    (
        "MAILER",
        "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
        Removed(SecretValue),
    ),
    ("MAPS", "AIza0123456789abcdefghijABCDEFGHIJ01234", Removed(SecretValue)),
    ("JSON_CONF", "{\"password\":\"hunter2hunter2\"}", Removed(SecretValue)),
    ("CALLBACK", "https://example.test/cb?id=1&token=abc123def456", Removed(SecretValue)),
    ("DB_ARGS", "--host db --password=hunter2hunter2", Removed(SecretValue)),
    ("API_HEADERS", "accept: json, x-api-key: abcdef123456", Removed(SecretValue)),
    ("OLD_DIR", "/home/u/src/pwd-tools", Kept),
    ("GREP_COLORS", "ms=01;31:mc=01;31:sl=:cx=:fn=35", Kept),
    ("HISTCONTROL", "ignoreboth", Kept),
    ("LESSOPEN", "| /usr/bin/lesspipe %s", Kept),
    ("PROMPT_COMMAND", "history -a; echo basic setup done", Kept),
    ("JAVA_TOOL_OPTIONS", "-Dfile.encoding=UTF-8", Kept),
    ("GIT_ASKPASS", "/usr/share/code/askpass.sh", Removed(SecretName)),
    ("SSH_ASKPASS", "/usr/lib/ssh/ssh-askpass", Removed(SecretName)),
    ("KEYBOARD_LAYOUT", "us", Removed(SecretName)),
    ("LESSKEY", "/home/u/.less", Removed(SecretName)),
    // Credential values under innocent names.
    ("NOTES", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", Removed(SecretValue)),
    (
        "REMOTE",
        "https://x-access-token:gho_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r",
        Removed(SecretValue),
    ),
    ("FINE", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", Removed(SecretValue)),
    ("GL", "glpat-abcdefghij0123456789", Removed(SecretValue)),
    ("SLACK_HOOK", "xoxb-123456789012-abcdefABCDEF", Removed(SecretValue)),
    ("AWS_ID", "AKIAIOSFODNN7EXAMPLE", Removed(SecretValue)),
    ("STS_ID", "ASIAY34FZKBOKMUTVV7A", Removed(SecretValue)),
    ("OPENAI", "sk-proj-Abc123def456GHI789jkl012MNO", Removed(SecretValue)),
    ("ANTHROPIC", "sk-ant-api03-Abc123def456GHI789jkl012MNO", Removed(SecretValue)),
    ("ID", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", Removed(SecretValue)),
    ("DEPLOY", PEM, Removed(SecretValue)),
    ("EXTRA_HEADER", "Authorization: Bearer abcdefghijklmnopqrstuvwx", Removed(SecretValue)),
    // More shapes in neutral names, each with a harmless value of the same kind beside it.
    ("CORP_PROXY", "alice:pw@proxy.corp:3128", Removed(SecretValue)),
    ("GTK_MODULES", "gail:atk-bridge", Kept),
    ("LANGUAGE", "en_US:en", Kept),
    ("FLASK_APP", "app:create_app", Kept),
    ("CONTACT", "alice@example.com", Kept),
    ("GIT_REMOTE", "git@github.com:org/repo.git", Kept),
    (
        "BLOB",
        "https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=AbCdEf0123456789xyzXYZ%3D",
        Removed(SecretValue),
    ),
    ("BLOB_PLAIN", "https://a.blob.core.windows.net/c/f?sv=2022-11-02", Kept),
    ("GROQ", "gsk_AbCdEf0123456789AbCdEf0123456789AbCdEf0123456789ab", Removed(SecretValue)),
    (
        "GROK",
        "xai-AbCdEf0123456789AbCdEf0123456789AbCdEf0123456789AbCdEf0123456789ab",
        Removed(SecretValue),
    ),
    ("GOOGLE_APP", "GOCSPX-AbCdEf0123456789AbCdEf012345", Removed(SecretValue)),
    (
        "ARTIFACTS",
        "AKCp8AbCdEf0123456789AbCdEf0123456789AbCdEf0123456789AbCdEf0123456789AbCdE",
        Removed(SecretValue),
    ),
    (
        "AGE",
        "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
        Removed(SecretValue),
    ),
    ("MAIL", "key-0123456789abcdef0123456789abcdef", Removed(SecretValue)),
    (
        "DOCKER_CONFIG_JSON",
        "{\"auths\":{\"r.example\":{\"auth\":\"dXNlcjpwYXNz\"}}}",
        Removed(SecretValue),
    ),
    ("NPMRC", "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnop", Removed(SecretValue)),
    ("KUBE", "YXBpVmVyc2lvbjogdjEKY2x1c3RlcnM6Cg==", Removed(SecretValue)),
    ("MAPPING", "key-value", Kept),
    ("SCHEME", "s.example.com", Kept),
    // Passwords in URLs: the user:password@ part goes, the variable stays.
    (
        "DATABASE_URL",
        "postgres://user:secret@db.internal:5432/app",
        Redacted("postgres://db.internal:5432/app"),
    ),
    ("HTTPS_PROXY", "http://u:p@proxy:8080", Redacted("http://proxy:8080")),
    (
        "PIP_INDEX_URL",
        "https://__token__:abc@pypi.example/simple",
        Redacted("https://pypi.example/simple"),
    ),
    ("REDIS_URL", "redis://:pa@ss@cache:6379/0", Redacted("redis://cache:6379/0")),
    (
        "MIRRORS",
        "https://a:1@one.example https://two.example",
        Redacted("https://one.example https://two.example"),
    ),
];

/// What happened to one variable, owned (a redacted value is computed).
#[derive(Debug, PartialEq, Eq)]
enum Got {
    Kept,
    Removed(RemovalReason),
    Redacted(String),
}

impl From<Expect> for Got {
    fn from(expect: Expect) -> Self {
        match expect {
            Kept => Got::Kept,
            Removed(reason) => Got::Removed(reason),
            Redacted(value) => Got::Redacted(value.to_owned()),
        }
    }
}

#[test]
fn the_default_excludes_keep_and_remove_what_the_table_says() {
    assert!(TABLE.len() >= 40);
    let input = TABLE.iter().map(|(n, v, _)| ((*n).to_owned(), (*v).to_owned()));
    let filtered = ShellEnvironmentPolicy::default().apply(input);
    let got: Vec<(&str, Got)> = TABLE
        .iter()
        .map(|(name, value, _)| {
            let removed = filtered.removed.iter().find(|r| r.name == *name).map(|r| r.reason);
            let got = match (filtered.vars.get(*name), removed) {
                (Some(kept), None) if kept == value => Got::Kept,
                (Some(kept), Some(UrlCredentials)) => Got::Redacted(kept.clone()),
                (None, Some(reason)) => Got::Removed(reason),
                (kept, reason) => panic!("{name}: inconsistent result {kept:?} {reason:?}"),
            };
            (*name, got)
        })
        .collect();
    let want: Vec<(&str, Got)> = TABLE.iter().map(|(n, _, e)| (*n, Got::from(*e))).collect();
    assert_eq!(got, want);
}

#[test]
fn the_removed_list_names_variables_and_never_holds_values() {
    let policy = ShellEnvironmentPolicy {
        exclude: vec!["EDITOR".to_owned()],
        set: BTreeMap::from([("API_TOKEN".to_owned(), "set-on-purpose".to_owned())]),
        ..Default::default()
    };
    let input = TABLE.iter().map(|(n, v, _)| ((*n).to_owned(), (*v).to_owned()));
    let filtered = policy.apply(input);
    let text = format!("{:?}", filtered.removed);
    for (_, value, expect) in TABLE {
        if *expect != Kept && value.len() > 3 {
            assert!(!text.contains(value), "a value leaked into the removed list: {value}");
        }
    }
    assert!(
        filtered
            .removed
            .contains(&RemovedVar { name: "EDITOR".to_owned(), reason: RemovalReason::Excluded })
    );
    assert_eq!(filtered.vars.get("API_TOKEN").map(String::as_str), Some("set-on-purpose"));
    let names: Vec<&str> = filtered.removed.iter().map(|r| r.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
}

#[test]
fn ignore_default_excludes_turns_off_name_and_value_rules() {
    let policy = ShellEnvironmentPolicy { ignore_default_excludes: true, ..Default::default() };
    let input = TABLE.iter().map(|(n, v, _)| ((*n).to_owned(), (*v).to_owned()));
    let filtered = policy.apply(input);
    assert_eq!(filtered.removed, Vec::new());
    assert_eq!(filtered.vars.len(), TABLE.len());
    assert_eq!(
        filtered.vars.get("DATABASE_URL").map(String::as_str),
        Some("postgres://user:secret@db.internal:5432/app")
    );
}

#[test]
fn docs_environment_md_tables_every_row() {
    let docs = include_str!("../../docs/environment.md");
    for (name, _, _) in TABLE {
        assert!(docs.contains(&format!("| `{name}` |")), "docs/environment.md lacks {name}");
    }
}

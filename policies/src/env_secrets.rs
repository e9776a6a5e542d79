//! What the default excludes of `shell_environment_policy` treat as a credential: names that
//! spell one, and values that carry one whatever the variable is called (`docs/environment.md`
//! has the table of decisions).

use std::sync::{LazyLock, OnceLock};

use regex_lite::Regex;

/// Names dropped unless `ignore_default_excludes`: case-insensitive globs over the whole name.
/// They are substring rules on purpose: credentials come under every spelling (`MYSQL_PWD`,
/// `GPG_PASSPHRASE`, `NPM_CONFIG__AUTH`), and a dropped ordinary variable costs a `set` line
/// while a passed secret cannot be taken back.
pub const DEFAULT_EXCLUDES: &[&str] = &[
    "*KEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASS*",
    "*PWD*",
    "*_PAT",
    "*CREDENTIAL*",
    "*AUTH*",
    "*JWT*",
    "*COOKIE*",
    "*DSN*",
    "*SESSION*",
    "*_PW",
    "*CREDS*",
    "*WEBHOOK*",
    "*CONNECTION_STRING*",
    "*CONN_STR*",
];

/// Exact names (case-sensitive, as the environment is) that the name rules above keep: each is
/// ordinary state that programs rely on and that never holds a credential. Value rules still
/// apply to them.
pub const DEFAULT_EXCLUDE_EXCEPTIONS: &[&str] = &[
    // The shell's current and previous directory (`*PWD*`).
    "PWD",
    "OLDPWD",
    // Which display stack and desktop the login uses; toolkits pick a backend from them
    // (`*SESSION*`). XDG_SESSION_ID is not here: only logind's D-Bus API uses it.
    "XDG_SESSION_TYPE",
    "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP",
    "DESKTOP_SESSION",
    "GNOME_SHELL_SESSION_MODE",
    // Who git records as a commit's author (`*AUTH*`).
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    // Where `pass` keeps its store (`*PASS*`): a directory, never a secret itself.
    "PASSWORD_STORE_DIR",
];

/// A credential shape recognised inside a value.
struct Shape {
    what: &'static str,
    pattern: &'static str,
    /// Also require an upper-case letter, a lower-case letter and a digit in the match: for
    /// prefixes like `sk-` that ordinary words and paths also start with.
    mixed_case_and_digits: bool,
    /// Literals one of which every match contains, written in lower case and compared with
    /// the value lower-cased (ignoring ASCII case only lets more values through to the pattern): the pattern is compiled and run only for a
    /// value that has one. Compiling every pattern up front would outweigh the rest of
    /// cordon's start-up, and most environments hold none of these literals.
    hints: &'static [&'static str],
}

/// One whitespace character of any script, spelled out (the pattern engine knows ASCII's
/// only): ASCII's, NEL, no-break space, Ogham space mark, the spaces U+2000..U+200A, line and
/// paragraph separators, narrow no-break space, medium mathematical space and ideographic
/// space — Unicode's `White_Space`.
macro_rules! ws {
    () => {
        r"[\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]"
    };
}

/// Token shapes dropped whatever the variable is called. Each starts at a word boundary so a
/// prefix inside a longer word (`desk-…`, `mask-…`) does not count.
const SHAPES: &[Shape] = &[
    Shape {
        what: "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_)",
        pattern: r"(?:^|[^A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}",
        hints: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "GitHub fine-grained token (github_pat_)",
        pattern: r"github_pat_[A-Za-z0-9_]{22,}",
        hints: &["github_pat_"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "GitLab token (glpat-)",
        pattern: r"glpat-[A-Za-z0-9_-]{20,}",
        hints: &["glpat-"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "Slack token (xoxa-, xoxb-, xoxp-, …)",
        pattern: r"(?:^|[^A-Za-z0-9_])xox[abpesor]-[A-Za-z0-9-]{10,}",
        hints: &["xox"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "AWS access key id (AKIA…, ASIA…)",
        pattern: r"(?:^|[^A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?:$|[^A-Za-z0-9])",
        hints: &["akia", "asia"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "OpenAI / Anthropic key (sk-, sk-proj-, sk-ant-)",
        pattern: r"(?:^|[^A-Za-z0-9_])sk-[A-Za-z0-9_-]{20,}",
        hints: &["sk-"],
        mixed_case_and_digits: true,
    },
    Shape {
        what: "Stripe key (sk_live_, rk_live_)",
        pattern: r"(?:^|[^A-Za-z0-9_])[sr]k_live_[A-Za-z0-9]{16,}",
        hints: &["k_live_"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "npm token (npm_)",
        pattern: r"(?:^|[^A-Za-z0-9_])npm_[A-Za-z0-9]{36}",
        hints: &["npm_"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "PyPI token (pypi-)",
        pattern: r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{16,}",
        hints: &["pypi-"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "Hugging Face token (hf_)",
        pattern: r"(?:^|[^A-Za-z0-9_])hf_[A-Za-z0-9]{30,}",
        hints: &["hf_"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "Google API key (AIza)",
        pattern: r"AIza[0-9A-Za-z_-]{35}",
        hints: &["aiza"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "JSON Web Token (eyJ….eyJ….…)",
        pattern: r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
        hints: &["eyj"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "HTTP bearer credential (Bearer …)",
        pattern: concat!(r"(?i)(?:^|[^a-z0-9_])bearer", ws!(), "+", r"[A-Za-z0-9._~+/=-]{16,}"),
        hints: &["bearer"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "HTTP Authorization header (Authorization: Basic|Bearer|Token|Digest …)",
        pattern: concat!(
            "(?i)authorization",
            ws!(),
            "*:",
            ws!(),
            "*(?:basic|bearer|token|digest)",
            ws!(),
            r"+[^\t-\r ]{8,}"
        ),
        hints: &["authorization"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "HTTP basic credential (Basic base64)",
        pattern: concat!(r"(?:^|[^A-Za-z0-9_])Basic", ws!(), r"+[A-Za-z0-9+/]{12,}={0,2}"),
        hints: &["basic"],
        mixed_case_and_digits: true,
    },
    Shape {
        what: "a secret in a key=value setting (AccountKey=, aws_secret_access_key =, password=, …)",
        pattern: concat!(
            r#"(?i)(?:^|[;,&?"'-]|"#,
            ws!(),
            r#")(?:accountkey|sharedaccesskey|aws_secret_access_key|password|passwd|pass|pwd|secret|secret[_-]?key|client[_-]secret|api[_-]?key|access[_-]token|token)"?"#,
            ws!(),
            "*[=:]",
            ws!(),
            r#"*"?[^;,&"'\t-\r ]{6,}"#
        ),
        hints: &[
            "accountkey",
            "sharedaccesskey",
            "secret_access_key",
            "pass",
            "pwd",
            "secret",
            "api_key",
            "apikey",
            "api-key",
            "access_token",
            "access-token",
            "token",
        ],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "Slack or Discord webhook URL",
        pattern: r"(?:hooks\.slack\.com/(?:services|workflows|triggers)/|discord(?:app)?\.com/api/webhooks/)[A-Za-z0-9/_-]{16,}",
        hints: &["hooks.slack.com", "/api/webhooks/"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "SendGrid key (SG.)",
        pattern: r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        hints: &["sg."],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "prefixed provider tokens (DigitalOcean dop_v1_, Shopify shpat_, Databricks dapi, \
               Doppler dp.pt., Linear lin_api_, Postman PMAK-, Vault hvs., Grafana glsa_/glc_, \
               Sentry sntrys_, GitLab glptt-/gldt-, Fly fo1_, Atlassian ATATT)",
        pattern: r"(?:^|[^A-Za-z0-9_])(?:dop_v1_[a-f0-9]{64}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|dapi[a-h0-9]{32}|dp\.pt\.[A-Za-z0-9]{40,}|lin_api_[A-Za-z0-9]{40}|PMAK-[A-Za-z0-9]{24}-[A-Za-z0-9]{34}|hvs\.[A-Za-z0-9_-]{24,}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}|sntrys_[A-Za-z0-9+/=_-]{40,}|gl(?:ptt|dt)-[A-Za-z0-9_-]{20,}|fo1_[A-Za-z0-9_-]{40,}|ATATT3[A-Za-z0-9_=-]{100,})",
        hints: &[
            "dop_v1_", "shpat_", "shpca_", "shppa_", "shpss_", "dapi", "dp.pt.", "lin_api_",
            "pmak-", "hvs.", "glsa_", "glc_", "sntrys_", "glptt-", "gldt-", "fo1_", "atatt3",
        ],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "more prefixed provider tokens (Groq gsk_, xAI xai-, Google OAuth GOCSPX-, \
               Artifactory AKCp, age AGE-SECRET-KEY-1, Mailgun key-)",
        pattern: r"(?:^|[^A-Za-z0-9_.])(?:gsk_[A-Za-z0-9]{40,}|xai-[A-Za-z0-9]{40,}|GOCSPX-[A-Za-z0-9_-]{24,}|AKCp[A-Za-z0-9]{50,}|AGE-SECRET-KEY-1[0-9A-Z]{50,}|key-[a-f0-9]{32})(?:$|[^A-Za-z0-9])",
        hints: &["gsk_", "xai-", "gocspx-", "akcp", "age-secret-key-1", "key-"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "a signed URL's signature (Azure SAS sig=, AWS X-Amz-Signature=)",
        pattern: r"(?i)[?&](?:sig|x-amz-signature|x-goog-signature)=[A-Za-z0-9%+/=_-]{16,}",
        hints: &["sig=", "signature="],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "credentials without a scheme (user:password@host[:port])",
        pattern: r"(?:^|[\t-\r ,;=])[A-Za-z0-9._%+~-]+:[^@\t-\r /:,;]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[0-9]{1,5})?(?:$|[\t-\r ,;/])",
        hints: &["@"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "a credential file's contents (a Docker {\"auths\": …}, an npm _authToken=, a \
               kubeconfig, base64 or not)",
        pattern: r#"(?i)"auths"\s*:\s*\{|_authtoken\s*=\s*[^\t-\r ]{8,}|client-key-data\s*:|YXBpVmVyc2lvbj"#,
        hints: &["\"auths\"", "_authtoken", "client-key-data", "yxbpvmvyc2lvbj"],
        mixed_case_and_digits: false,
    },
    Shape {
        what: "PEM private key block",
        pattern: r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----",
        hints: &["-----begin "],
        mixed_case_and_digits: false,
    },
];

/// `scheme://userinfo@`: the authority ends at the first `/`, `?`, `#` or blank, and the
/// greedy match takes the userinfo up to its last `@` (an unencoded `@` in a password stays
/// inside what is removed).
const URL_USERINFO: &str = r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\t-\r ]*)@";

/// Descriptions of the value rules, for `cordon doctor`.
pub fn value_rules() -> Vec<String> {
    std::iter::once(
        "scheme://user:password@… in a value: the user:password@ part is removed, the variable \
         kept"
            .to_owned(),
    )
    .chain(
        SHAPES.iter().map(|shape| format!("{} anywhere in a value: variable dropped", shape.what)),
    )
    .collect()
}

/// Each shape's pattern, compiled the first time a value carries one of its hints.
static SHAPE_REGEXES: [OnceLock<Option<Regex>>; SHAPES.len()] =
    [const { OnceLock::new() }; SHAPES.len()];

/// Every match of [`URL_USERINFO`] contains this.
const URL_HINT: &str = "://";
static URL_REGEX: LazyLock<Option<Regex>> = LazyLock::new(|| compile(URL_USERINFO));

fn shape_regex(index: usize) -> Option<&'static Regex> {
    let shape = SHAPES.get(index)?;
    SHAPE_REGEXES.get(index)?.get_or_init(|| compile(shape.pattern)).as_ref()
}

/// A pattern as these rules write it, compiled by `regex-lite`: a pattern is compiled on a
/// launch whose environment carries one of its hints, so what compilation costs is paid by
/// every such launch, and the full engine's optimizations cost several times this engine's
/// whole compilation for values a few hundred bytes long. Its classes and case are ASCII's:
/// whitespace around a secret is still any whitespace ([`ws!`]); a run of token characters
/// excludes ASCII whitespace only, so a non-ASCII character counts as part of a token, which
/// can only find more secrets, never fewer.
fn compile(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

/// What the value rules make of one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueVerdict {
    /// Nothing recognised.
    Clean,
    /// A token shape or private key: drop the variable.
    Secret,
    /// `scheme://user:password@` occurred: this is the value without the userinfo.
    Redacted(String),
}

/// Classifies a value. A password in a URL is cut out with its user name, because the user
/// half is sometimes the token itself (`https://TOKEN:x-oauth-basic@github.com`).
pub fn classify_value(value: &str) -> ValueVerdict {
    // Lower-cased once for the hint search (a substring search per hint over it, instead of
    // comparing every window of the value with every hint).
    let lower = value.to_ascii_lowercase();
    for (index, shape) in SHAPES.iter().enumerate() {
        if !shape.hints.iter().any(|hint| lower.contains(hint)) {
            continue;
        }
        // The patterns are constants covered by a unit test; if one ever failed to compile, a
        // value it might match counts as a secret rather than none.
        let Some(regex) = shape_regex(index) else {
            return ValueVerdict::Secret;
        };
        let hit = regex.find_iter(value).any(|m| {
            !shape.mixed_case_and_digits || {
                let text = m.as_str().as_bytes();
                text.iter().any(|b| b.is_ascii_uppercase())
                    && text.iter().any(|b| b.is_ascii_lowercase())
                    && text.iter().any(|b| b.is_ascii_digit())
            }
        });
        if hit {
            return ValueVerdict::Secret;
        }
    }
    if !value.contains(URL_HINT) {
        return ValueVerdict::Clean;
    }
    let Some(url) = URL_REGEX.as_ref() else {
        return ValueVerdict::Secret;
    };
    let mut redacted = false;
    let cleaned = url.replace_all(value, |caps: &regex_lite::Captures<'_>| {
        let (scheme, userinfo) = (&caps[1], &caps[2]);
        if userinfo.contains(':') {
            redacted = true;
            scheme.to_owned()
        } else {
            // `ssh://git@host`: a user name alone is an address, not a credential.
            format!("{scheme}{userinfo}@")
        }
    });
    if !redacted {
        return ValueVerdict::Clean;
    }
    ValueVerdict::Redacted(cleaned.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hint_is_written_in_lower_case() {
        for shape in SHAPES {
            for hint in shape.hints {
                assert_eq!(*hint, hint.to_ascii_lowercase(), "{}", shape.what);
            }
        }
    }

    #[test]
    fn every_pattern_compiles() {
        assert!((0..SHAPES.len()).all(|i| shape_regex(i).is_some()));
        assert!(URL_REGEX.is_some());
        assert_eq!(value_rules().len(), SHAPES.len() + 1);
    }

    /// One value per shape, in the order of `SHAPES`: each is caught, so no hint keeps its
    /// pattern from running.
    #[test]
    fn every_shape_is_caught_through_its_hints() {
        let samples = [
            "x ghp_0123456789abcdefghijABCDEFGHIJ0123",
            "github_pat_0123456789abcdefghijAB",
            "glpat-0123456789abcdefghij",
            "xoxb-0123456789-abc",
            "AKIA0123456789ABCDEF",
            "sk-proj-Ab0123456789abcdefghij",
            "rk_live_0123456789abcdef",
            "npm_0123456789abcdefghijABCDEFGHIJ012345",
            "pypi-AgEIcHlwaS5vcmc0123456789abcdef",
            "hf_0123456789abcdefghijABCDEFGHIJ0123",
            "AIza0123456789abcdefghijABCDEFGHIJ01234",
            "eyJhbGci.eyJzdWIi.sig",
            "Authorization: BEARER 0123456789abcdefXYZ",
            "Authorization: Basic dXNlcjpwYXNzd29yZA==",
            "Basic dXNlcjpwYXNzd29yZA==",
            "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abcdef123456==;",
            "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
            "dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "gsk_0123456789abcdefghijABCDEFGHIJ0123456789abcd",
            "https://acct.blob.core.windows.net/c?sv=2022-11-02&se=2030&sp=r&sig=AbCdEf0123456789%2Bxyz%3D",
            "alice:pw@proxy.corp:3128",
            "{\"auths\":{\"registry.example\":{\"auth\":\"dXNlcjpwYXNz\"}}}",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
        ];
        assert_eq!(samples.len(), SHAPES.len());
        for (shape, sample) in SHAPES.iter().zip(samples) {
            assert_eq!(classify_value(sample), ValueVerdict::Secret, "{}", shape.what);
            let regex = compile(shape.pattern).unwrap();
            assert!(regex.is_match(sample), "{}: the sample does not match", shape.what);
        }
        assert_eq!(
            classify_value("https://user:pw@example.com/x"),
            ValueVerdict::Redacted("https://example.com/x".into())
        );
        assert_eq!(classify_value("/usr/local/bin:/usr/bin"), ValueVerdict::Clean);
    }

    /// The whitespace the patterns spell out is exactly Unicode's.
    #[test]
    fn the_spelled_out_whitespace_is_unicodes() {
        let whole = compile(concat!("^", ws!(), "$")).unwrap();
        for c in (0..=0x10FFFF_u32).filter_map(char::from_u32) {
            let mut bytes = [0; 4];
            assert_eq!(whole.is_match(c.encode_utf8(&mut bytes)), c.is_whitespace(), "{c:?}");
        }
    }

    /// A token is cut at whitespace only, not at other non-ASCII text.
    #[test]
    fn a_token_with_non_ascii_letters_is_still_one() {
        assert_eq!(classify_value("password=h\u{e9}llo-w\u{f6}rld"), ValueVerdict::Secret);
        assert_eq!(classify_value("password\u{a0}h\u{e9}"), ValueVerdict::Clean);
    }

    /// Whitespace is any whitespace, not only ASCII's: a secret behind a no-break space, an
    /// em or ideographic space, NEL or a line separator is still one.
    #[test]
    fn secrets_beside_unicode_whitespace_are_caught() {
        for value in [
            "Bearer\u{2003}abcdefghijklmnop123456",
            "api_key\u{3000}=\u{3000}hunter2hunter2",
            "Authorization: Bearer\u{a0}abcdefghijklmnop123456",
            "a\u{85}password=hunter2hunter2",
            "x\u{2028}password=hunter2hunter2",
            "secret\u{a0}=\u{a0}hunter2hunter2",
            "Bearer\u{a0}abcdefghijklmnop123456",
        ] {
            assert_eq!(classify_value(value), ValueVerdict::Secret, "{value:?}");
        }
    }
}

use super::*;
use crate::sandbox_exec_argv;
use cordon_policies::{PolicyEnv, SandboxPolicy, WorkspaceWrite};
use pretty_assertions::assert_eq;
use std::collections::BTreeMap;
use std::ffi::OsString;

// ---- helpers ----------------------------------------------------------------------------------

/// One SBPL token. Comments are dropped; `#"..."` regex literals lex as `#` then a string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Open,
    Close,
    Atom(String),
    Str(String),
}

/// Splits SBPL into tokens, respecting string literals (with `\` escapes) and `;` comments.
fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            ';' => {
                for (_, c) in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '"' => {
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some((_, '\\')) => match chars.next() {
                            Some((_, escaped)) => s.push(escaped),
                            None => return Err(format!("unterminated string at byte {at}")),
                        },
                        Some((_, '"')) => break,
                        Some((_, c)) => s.push(c),
                        None => return Err(format!("unterminated string at byte {at}")),
                    }
                }
                tokens.push(Token::Str(s));
            }
            '(' => tokens.push(Token::Open),
            ')' => tokens.push(Token::Close),
            c if c.is_whitespace() => {}
            c => {
                let mut atom = String::from(c);
                while let Some(&(_, next)) = chars.peek() {
                    if next.is_whitespace() || matches!(next, '(' | ')' | '"' | ';') {
                        break;
                    }
                    atom.push(next);
                    chars.next();
                }
                tokens.push(Token::Atom(atom));
            }
        }
    }
    Ok(tokens)
}

/// Checks that `text` is a sequence of balanced lists with nothing outside them; returns the
/// number of top-level forms.
fn check_balanced_lists(text: &str) -> Result<usize, String> {
    let mut depth = 0usize;
    let mut forms = 0;
    for token in tokenize(text)? {
        match token {
            Token::Open => {
                if depth == 0 {
                    forms += 1;
                }
                depth += 1;
            }
            Token::Close => {
                depth = depth.checked_sub(1).ok_or_else(|| "`)` without `(`".to_owned())?;
            }
            Token::Atom(_) | Token::Str(_) if depth == 0 => {
                return Err(format!("{token:?} outside any list"));
            }
            Token::Atom(_) | Token::Str(_) => {}
        }
    }
    if depth != 0 {
        return Err(format!("{depth} list(s) left open"));
    }
    Ok(forms)
}

/// Every name used as `(param "NAME")`, with how often it is used.
fn params_used(text: &str) -> BTreeMap<String, usize> {
    let tokens = tokenize(text).unwrap();
    let mut used = BTreeMap::new();
    for window in tokens.windows(3) {
        if let [Token::Open, Token::Atom(op), Token::Str(name)] = window {
            if op == "param" {
                *used.entry(name.clone()).or_insert(0) += 1;
            }
        }
    }
    used
}

fn resolve(policy: &SandboxPolicy, cwd: &str) -> ResolvedPolicy {
    let env = PolicyEnv {
        tmpdir: Some(Path::new("/var/folders/zz/abc/T")),
        home: Some(Path::new("/Users/u")),
        ..PolicyEnv::default()
    };
    // Identity canonicalisation: the paths are made up and the profile is built from values.
    policy.resolve(Path::new(cwd), &env, |p| Ok(p.to_path_buf())).unwrap()
}

fn strings(items: &[&str]) -> Option<Vec<String>> {
    Some(items.iter().map(|s| (*s).to_owned()).collect())
}

fn params(items: &[(&str, &str)]) -> Vec<(String, PathBuf)> {
    items.iter().map(|(name, path)| ((*name).to_owned(), PathBuf::from(path))).collect()
}

/// Compares the generated part of `profile` (after [`BASE_PROFILE`]) with
/// `tests/golden/NAME.sbpl`; `CORDON_UPDATE_GOLDEN=1` rewrites the file instead.
fn assert_golden(name: &str, profile: &SeatbeltProfile) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/{name}.sbpl"));
    let generated = profile.text.strip_prefix(BASE_PROFILE).unwrap();
    if std::env::var_os("CORDON_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, generated).unwrap();
    }
    let golden = std::fs::read_to_string(&path).unwrap();
    assert_eq!(profile.text, format!("{BASE_PROFILE}{golden}"));
}

fn read_only() -> ResolvedPolicy {
    resolve(&SandboxPolicy::ReadOnly { hidden_paths: None }, "/Users/u/project")
}

fn two_roots() -> ResolvedPolicy {
    resolve(
        &SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
            exclude_tmpdir_env_var: true,
            protected_paths: strings(&[".git/hooks", ".envrc", "/Users/u/project/build/keep"]),
            hidden_paths: strings(&["~/.ssh"]),
            ..WorkspaceWrite::default()
        }),
        "/Users/u/project",
    )
}

fn with_network() -> ResolvedPolicy {
    resolve(
        &SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
            network_access: true,
            exclude_slash_tmp: true,
            hidden_paths: strings(&["~/.aws", "/var/run/docker.sock"]),
            ..WorkspaceWrite::default()
        }),
        "/Users/u/project",
    )
}

/// Paths that would break out of a string literal, close a list, start a comment or a new line
/// if they were ever spliced into the text. Each carries a marker that must not appear there.
fn hostile() -> ResolvedPolicy {
    ResolvedPolicy {
        network_domains: None,
        writable_roots: vec![
            PathBuf::from("/Users/u/MARKER1\")) (allow default) ;"),
            PathBuf::from("/tmp/MARKER2(\n(allow file-write*"),
        ],
        network_access: false,
        protected_paths: vec![
            "MARKER3\\\"; (".to_owned(),
            "/tmp/MARKER2(\n(allow file-write*/MARKER4 )".to_owned(),
        ],
        hidden_paths: vec![
            PathBuf::from("/Users/u/MARKER5\"\n)"),
            PathBuf::from("/var/MARKER6;#\"x\""),
        ],
        allowed_sockets: Vec::new(),
    }
}

// ---- golden profiles --------------------------------------------------------------------------

#[test]
fn read_only_profile_matches_golden() {
    let policy = read_only();
    let profile = seatbelt_profile(&policy);
    assert_golden("read_only", &profile);
    // One HIDDEN_i per default hidden path, in order, spelled as macOS resolves it (`/var`,
    // `/tmp` and `/etc` under `/private`); `$SSH_AUTH_SOCK`, `$UID` and `$XDG_RUNTIME_DIR`
    // are unset here, so those entries name nothing.
    let expected: Vec<(String, PathBuf)> = policy
        .hidden_paths
        .iter()
        .enumerate()
        .map(|(i, path)| (format!("HIDDEN_{i}"), crate::macos_real_path(path)))
        .collect();
    assert_eq!(profile.params, expected);
    assert!(expected.contains(&("HIDDEN_0".to_owned(), PathBuf::from("/Users/u/.ssh"))));
    assert!(expected.iter().any(|(_, p)| p == Path::new("/private/var/run/docker.sock")));
    assert!(expected.iter().any(|(_, p)| p == Path::new("/private/etc/shadow")));
    assert_eq!(profile.env, vec![SANDBOX_ENV, ("CORDON_SANDBOX_NETWORK_DISABLED", "1")]);
}

#[test]
fn workspace_write_with_two_roots_matches_golden() {
    let profile = seatbelt_profile(&two_roots());
    assert_golden("workspace_write_two_roots", &profile);
    assert_eq!(
        profile.params,
        params(&[
            ("WRITABLE_ROOT_0", "/private/tmp"),
            ("WRITABLE_ROOT_0_PROTECTED_0", "/private/tmp/.git/hooks"),
            ("WRITABLE_ROOT_0_PROTECTED_1", "/private/tmp/.envrc"),
            ("WRITABLE_ROOT_0_ANCESTOR_0", "/private/tmp/.git"),
            ("WRITABLE_ROOT_0_ANCESTOR_1", "/private/tmp"),
            ("WRITABLE_ROOT_1", "/Users/u/project"),
            ("WRITABLE_ROOT_1_PROTECTED_0", "/Users/u/project/build/keep"),
            ("WRITABLE_ROOT_1_PROTECTED_1", "/Users/u/project/.git/hooks"),
            ("WRITABLE_ROOT_1_PROTECTED_2", "/Users/u/project/.envrc"),
            // Protecting `build/keep` keeps `build` itself from being renamed or removed.
            ("WRITABLE_ROOT_1_ANCESTOR_0", "/Users/u/project/build"),
            ("WRITABLE_ROOT_1_ANCESTOR_1", "/Users/u/project"),
            ("WRITABLE_ROOT_1_ANCESTOR_2", "/Users/u/project/.git"),
            ("HIDDEN_0", "/Users/u/.ssh"),
        ])
    );
}

#[test]
fn workspace_write_with_network_matches_golden() {
    let profile = seatbelt_profile(&with_network());
    assert_golden("workspace_write_network", &profile);
    assert_eq!(
        profile.params,
        params(&[
            ("WRITABLE_ROOT_0", "/Users/u/project"),
            ("WRITABLE_ROOT_0_PROTECTED_0", "/Users/u/project/.git/hooks"),
            ("WRITABLE_ROOT_0_PROTECTED_1", "/Users/u/project/.git/config"),
            ("WRITABLE_ROOT_0_PROTECTED_2", "/Users/u/project/.git/config.worktree"),
            ("WRITABLE_ROOT_0_PROTECTED_3", "/Users/u/project/.git/modules"),
            ("WRITABLE_ROOT_0_PROTECTED_4", "/Users/u/project/.cordon"),
            ("WRITABLE_ROOT_0_PROTECTED_5", "/Users/u/project/.codex"),
            ("WRITABLE_ROOT_0_PROTECTED_6", "/Users/u/project/.envrc"),
            ("WRITABLE_ROOT_0_PROTECTED_7", "/Users/u/project/.vscode"),
            ("WRITABLE_ROOT_0_PROTECTED_8", "/Users/u/project/.idea"),
            ("WRITABLE_ROOT_0_PROTECTED_9", "/Users/u/project/.bashrc"),
            ("WRITABLE_ROOT_0_PROTECTED_10", "/Users/u/project/.bash_profile"),
            ("WRITABLE_ROOT_0_PROTECTED_11", "/Users/u/project/.bash_login"),
            ("WRITABLE_ROOT_0_PROTECTED_12", "/Users/u/project/.profile"),
            ("WRITABLE_ROOT_0_PROTECTED_13", "/Users/u/project/.zshrc"),
            ("WRITABLE_ROOT_0_PROTECTED_14", "/Users/u/project/.zshenv"),
            ("WRITABLE_ROOT_0_PROTECTED_15", "/Users/u/project/.zprofile"),
            ("WRITABLE_ROOT_0_PROTECTED_16", "/Users/u/project/.zlogin"),
            ("WRITABLE_ROOT_0_PROTECTED_17", "/Users/u/project/.gitconfig"),
            ("WRITABLE_ROOT_0_PROTECTED_18", "/Users/u/project/.config/git"),
            ("WRITABLE_ROOT_0_PROTECTED_19", "/Users/u/project/.config/fish"),
            ("WRITABLE_ROOT_0_ANCESTOR_0", "/Users/u/project/.git"),
            ("WRITABLE_ROOT_0_ANCESTOR_1", "/Users/u/project"),
            ("WRITABLE_ROOT_0_ANCESTOR_2", "/Users/u/project/.config"),
            ("WRITABLE_ROOT_1", "/private/var/folders/zz/abc/T"),
            ("WRITABLE_ROOT_1_PROTECTED_0", "/private/var/folders/zz/abc/T/.git/hooks"),
            ("WRITABLE_ROOT_1_PROTECTED_1", "/private/var/folders/zz/abc/T/.git/config"),
            ("WRITABLE_ROOT_1_PROTECTED_2", "/private/var/folders/zz/abc/T/.git/config.worktree"),
            ("WRITABLE_ROOT_1_PROTECTED_3", "/private/var/folders/zz/abc/T/.git/modules"),
            ("WRITABLE_ROOT_1_PROTECTED_4", "/private/var/folders/zz/abc/T/.cordon"),
            ("WRITABLE_ROOT_1_PROTECTED_5", "/private/var/folders/zz/abc/T/.codex"),
            ("WRITABLE_ROOT_1_PROTECTED_6", "/private/var/folders/zz/abc/T/.envrc"),
            ("WRITABLE_ROOT_1_PROTECTED_7", "/private/var/folders/zz/abc/T/.vscode"),
            ("WRITABLE_ROOT_1_PROTECTED_8", "/private/var/folders/zz/abc/T/.idea"),
            ("WRITABLE_ROOT_1_PROTECTED_9", "/private/var/folders/zz/abc/T/.bashrc"),
            ("WRITABLE_ROOT_1_PROTECTED_10", "/private/var/folders/zz/abc/T/.bash_profile"),
            ("WRITABLE_ROOT_1_PROTECTED_11", "/private/var/folders/zz/abc/T/.bash_login"),
            ("WRITABLE_ROOT_1_PROTECTED_12", "/private/var/folders/zz/abc/T/.profile"),
            ("WRITABLE_ROOT_1_PROTECTED_13", "/private/var/folders/zz/abc/T/.zshrc"),
            ("WRITABLE_ROOT_1_PROTECTED_14", "/private/var/folders/zz/abc/T/.zshenv"),
            ("WRITABLE_ROOT_1_PROTECTED_15", "/private/var/folders/zz/abc/T/.zprofile"),
            ("WRITABLE_ROOT_1_PROTECTED_16", "/private/var/folders/zz/abc/T/.zlogin"),
            ("WRITABLE_ROOT_1_PROTECTED_17", "/private/var/folders/zz/abc/T/.gitconfig"),
            ("WRITABLE_ROOT_1_PROTECTED_18", "/private/var/folders/zz/abc/T/.config/git"),
            ("WRITABLE_ROOT_1_PROTECTED_19", "/private/var/folders/zz/abc/T/.config/fish"),
            ("WRITABLE_ROOT_1_ANCESTOR_0", "/private/var/folders/zz/abc/T/.git"),
            ("WRITABLE_ROOT_1_ANCESTOR_1", "/private/var/folders/zz/abc/T"),
            ("WRITABLE_ROOT_1_ANCESTOR_2", "/private/var/folders/zz/abc/T/.config"),
            ("HIDDEN_0", "/Users/u/.aws"),
            ("HIDDEN_1", "/private/var/run/docker.sock"),
        ])
    );
    assert_eq!(profile.env, vec![SANDBOX_ENV]);
}

// ---- structure --------------------------------------------------------------------------------

#[test]
fn balance_checker_respects_strings_and_comments() {
    assert_eq!(check_balanced_lists("(a \"(\" b) ; ) (\n(c #\"[)]\")"), Ok(2));
    assert_eq!(check_balanced_lists("(a \"\\\")\")"), Ok(1));
    assert!(check_balanced_lists("(a (b)").is_err());
    assert!(check_balanced_lists("(a))").is_err());
    assert!(check_balanced_lists("(a \"b)").is_err());
    assert!(check_balanced_lists("(a) b").is_err());
    assert!(check_balanced_lists("(a \"x\" ; \"\n)").is_ok());
}

fn with_an_allowed_socket() -> ResolvedPolicy {
    resolve(
        &SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
            network_access: true,
            hidden_paths: strings(&["~/.docker", "~/.colima"]),
            allow_unix_sockets: vec!["~/.docker/run/docker.sock".into()],
            ..WorkspaceWrite::default()
        }),
        "/Users/u/project",
    )
}

#[test]
fn an_allowed_socket_is_opened_after_the_hidden_paths_and_nothing_else_of_its_directory() {
    let profile = seatbelt_profile(&with_an_allowed_socket());
    let text = &profile.text;
    let hidden = text.find("(deny network-outbound").unwrap();
    let allowed = text.find("(remote unix-socket (path-literal (param \"ALLOWED_SOCKET_0\")))");
    assert!(allowed.is_some_and(|at| at > hidden), "{text}");
    assert!(text.contains("(literal (param \"ALLOWED_SOCKET_0\"))"), "{text}");
    assert!(!text.contains("(subpath (param \"ALLOWED_SOCKET_0\"))"), "{text}");
    assert!(
        profile.params.contains(&(
            "ALLOWED_SOCKET_0".to_owned(),
            PathBuf::from("/Users/u/.docker/run/docker.sock")
        )),
        "{:?}",
        profile.params
    );
    // The directory itself stays hidden.
    assert!(
        profile.params.iter().any(|(k, v)| k.starts_with("HIDDEN_") && v.ends_with(".docker")),
        "{:?}",
        profile.params
    );
}

#[test]
fn every_profile_is_a_sequence_of_balanced_lists() {
    for policy in [read_only(), two_roots(), with_network(), hostile(), with_an_allowed_socket()] {
        let text = seatbelt_profile(&policy).text;
        let forms = check_balanced_lists(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
        assert!(forms > 10, "{forms} forms:\n{text}");
    }
    for part in [BASE_PROFILE, NETWORK_ON, NETWORK_OFF] {
        check_balanced_lists(part).unwrap();
    }
}

#[test]
fn every_param_used_is_passed_exactly_once_and_every_passed_param_is_used() {
    for policy in [read_only(), two_roots(), with_network(), hostile(), with_an_allowed_socket()] {
        let profile = seatbelt_profile(&policy);
        let argv = sandbox_exec_argv(&profile, &[OsString::from("true")]);
        let mut passed: BTreeMap<String, usize> = BTreeMap::new();
        for arg in &argv {
            let arg = arg.to_string_lossy();
            if let Some(define) = arg.strip_prefix("-D") {
                let (name, _) = define.split_once('=').unwrap();
                *passed.entry(name.to_owned()).or_insert(0) += 1;
            }
        }
        let used = params_used(&profile.text);
        assert_eq!(passed.keys().collect::<Vec<_>>(), used.keys().collect::<Vec<_>>());
        assert!(passed.values().all(|n| *n == 1), "{passed:?}");
    }
}

#[test]
fn no_policy_path_reaches_the_profile_text() {
    let policy = hostile();
    let profile = seatbelt_profile(&policy);
    for marker in ["MARKER", "allow default"] {
        assert!(!profile.text.contains(marker), "{marker} in:\n{}", profile.text);
    }
    let paths = policy
        .writable_roots
        .iter()
        .chain(&policy.hidden_paths)
        .map(|p| p.to_string_lossy().into_owned())
        .chain(policy.protected_paths.iter().cloned());
    for path in paths {
        assert!(!profile.text.contains(&path), "{path:?} in the text");
    }
    // The paths arrive intact as parameters instead.
    let argv = sandbox_exec_argv(&profile, &[OsString::from("true")]);
    assert!(
        argv.contains(&OsString::from("-DWRITABLE_ROOT_0=/Users/u/MARKER1\")) (allow default) ;"))
    );
    assert!(argv.contains(&OsString::from("-DHIDDEN_0=/Users/u/MARKER5\"\n)")));
    assert!(argv.contains(&OsString::from("-DHIDDEN_1=/private/var/MARKER6;#\"x\"")));
}

// ---- rules ------------------------------------------------------------------------------------

#[test]
fn hidden_path_denies_come_after_every_allow() {
    let text = seatbelt_profile(&with_network()).text;
    let deny = text.find("(deny file-read* file-write* file-clone file-link").unwrap();
    let last_allow = text.rfind("(allow ").unwrap();
    assert!(deny > last_allow, "{text}");
    assert!(text.trim_end().ends_with("(remote unix-socket (subpath (param \"HIDDEN_1\"))))"));
}

#[test]
fn nested_roots_keep_the_inner_roots_protected_paths_and_names_out_of_the_outer_rule() {
    let policy = ResolvedPolicy {
        network_domains: None,
        writable_roots: vec![PathBuf::from("/w"), PathBuf::from("/w/sub")],
        network_access: false,
        protected_paths: vec![".git/hooks".to_owned()],
        hidden_paths: Vec::new(),
        allowed_sockets: Vec::new(),
    };
    assert_eq!(
        seatbelt_profile(&policy).params,
        params(&[
            ("WRITABLE_ROOT_0", "/w"),
            ("WRITABLE_ROOT_0_PROTECTED_0", "/w/.git/hooks"),
            ("WRITABLE_ROOT_0_PROTECTED_1", "/w/sub/.git/hooks"),
            ("WRITABLE_ROOT_0_ANCESTOR_0", "/w/.git"),
            ("WRITABLE_ROOT_0_ANCESTOR_1", "/w"),
            // The inner root cannot be renamed through the outer root's rule, which would take
            // its protected paths along to an unprotected name.
            ("WRITABLE_ROOT_0_ANCESTOR_2", "/w/sub/.git"),
            ("WRITABLE_ROOT_0_ANCESTOR_3", "/w/sub"),
            ("WRITABLE_ROOT_1", "/w/sub"),
            ("WRITABLE_ROOT_1_PROTECTED_0", "/w/sub/.git/hooks"),
            ("WRITABLE_ROOT_1_ANCESTOR_0", "/w/sub/.git"),
            ("WRITABLE_ROOT_1_ANCESTOR_1", "/w/sub"),
        ])
    );
}

#[test]
fn absolute_protected_paths_apply_to_the_roots_they_touch() {
    let policy = ResolvedPolicy {
        network_domains: None,
        writable_roots: vec![PathBuf::from("/a"), PathBuf::from("/b/c"), PathBuf::from("/d")],
        network_access: false,
        protected_paths: vec!["/a/x".to_owned(), "/b".to_owned(), "/elsewhere".to_owned()],
        hidden_paths: Vec::new(),
        allowed_sockets: Vec::new(),
    };
    let profile = seatbelt_profile(&policy);
    assert_eq!(
        profile.params,
        params(&[
            ("WRITABLE_ROOT_0", "/a"),
            ("WRITABLE_ROOT_0_PROTECTED_0", "/a/x"),
            ("WRITABLE_ROOT_0_ANCESTOR_0", "/a"),
            // `/b` contains the root: protecting it protects the whole root.
            ("WRITABLE_ROOT_1", "/b/c"),
            ("WRITABLE_ROOT_1_PROTECTED_0", "/b"),
            ("WRITABLE_ROOT_2", "/d"),
        ])
    );
    assert!(profile.text.contains(
        "(allow file-write* file-clone file-link (subpath (param \"WRITABLE_ROOT_2\")))\n"
    ));
}

#[test]
fn roots_and_hidden_paths_that_meet_under_private_are_listed_once() {
    let policy = ResolvedPolicy {
        network_domains: None,
        writable_roots: vec![PathBuf::from("/tmp"), PathBuf::from("/private/tmp")],
        network_access: true,
        protected_paths: Vec::new(),
        hidden_paths: vec![
            PathBuf::from("/var/run/docker.sock"),
            PathBuf::from("/private/var/run/docker.sock"),
        ],
        allowed_sockets: Vec::new(),
    };
    assert_eq!(
        seatbelt_profile(&policy).params,
        params(&[
            ("WRITABLE_ROOT_0", "/private/tmp"),
            ("HIDDEN_0", "/private/var/run/docker.sock"),
        ])
    );
}

/// The profile's top-level forms, each as its tokens.
fn top_level_forms(text: &str) -> Vec<Vec<Token>> {
    let mut forms = Vec::new();
    let mut depth = 0usize;
    for token in tokenize(text).unwrap() {
        if depth == 0 {
            forms.push(Vec::new());
        }
        match token {
            Token::Open => depth += 1,
            Token::Close => depth -= 1,
            Token::Atom(_) | Token::Str(_) => {}
        }
        if let Some(form) = forms.last_mut() {
            form.push(token);
        }
    }
    forms
}

#[test]
fn terminal_input_injection_is_denied_by_number_and_nothing_after_allows_an_ioctl() {
    let atom = |s: &str| Token::Atom(s.to_owned());
    let deny_tiocsti = vec![
        Token::Open,
        atom("deny"),
        atom("file-ioctl"),
        Token::Open,
        atom("ioctl-command"),
        // _IOW('t', 114, char): the request number of TIOCSTI on macOS.
        atom(&((1u32 << 31) | (1 << 16) | (u32::from(b't') << 8) | 114).to_string()),
        Token::Close,
        Token::Close,
    ];
    let mut with_proxy = seatbelt_profile(&read_only());
    allow_proxy_port(&mut with_proxy, 3128);
    let profiles = [read_only(), two_roots(), with_network(), hostile(), with_an_allowed_socket()]
        .into_iter()
        .map(|policy| seatbelt_profile(&policy).text)
        .chain([with_proxy.text]);
    for text in profiles {
        let forms = top_level_forms(&text);
        let at = forms.iter().position(|form| *form == deny_tiocsti);
        let at = at.unwrap_or_else(|| panic!("no TIOCSTI deny in:\n{text}"));
        for form in &forms[at + 1..] {
            let allows_ioctl = form.get(1) == Some(&atom("allow"))
                && form.iter().any(|t| matches!(t, Token::Atom(a) if a.starts_with("file-ioctl")));
            assert!(!allows_ioctl, "an ioctl allowed after the TIOCSTI deny: {form:?}\n{text}");
        }
    }
}

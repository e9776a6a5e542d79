use super::*;
use pretty_assertions::assert_eq;

fn identity(p: &Path) -> io::Result<PathBuf> {
    Ok(p.to_path_buf())
}

#[test]
fn codex_json_shapes_parse_with_defaults() {
    assert_eq!(
        SandboxPolicy::from_json(r#"{"type":"danger-full-access"}"#).unwrap(),
        SandboxPolicy::DangerFullAccess {}
    );
    assert_eq!(
        SandboxPolicy::from_json(r#"{"type":"read-only"}"#).unwrap(),
        SandboxPolicy::ReadOnly { hidden_paths: None }
    );
    assert_eq!(
        SandboxPolicy::from_json(r#"{"type":"workspace-write","writable_roots":["/w"]}"#).unwrap(),
        SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
            writable_roots: vec![PathBuf::from("/w")],
            ..WorkspaceWrite::default()
        })
    );
    let full = r#"{"type":"workspace-write","writable_roots":[],"network_access":true,
        "exclude_tmpdir_env_var":true,"exclude_slash_tmp":true,"protected_paths":[".git"],
        "hidden_paths":["~/.x"]}"#;
    let parsed = SandboxPolicy::from_json(full).unwrap();
    assert_eq!(SandboxPolicy::from_json(&parsed.to_json()).unwrap(), parsed);
}

#[test]
fn unknown_fields_and_types_are_errors() {
    for bad in [
        r#"{"type":"workspace-write","writable_root":["/w"]}"#,
        r#"{"type":"read-only","network_access":true}"#,
        r#"{"type":"danger-full-access","x":1}"#,
        r#"{"type":"full"}"#,
        r#"{"writable_roots":[]}"#,
        r#"{"type":"workspace-write","network_access":"yes"}"#,
        "",
        "[]",
    ] {
        assert!(SandboxPolicy::from_json(bad).is_err(), "accepted {bad}");
    }
}

#[test]
fn writable_roots_follow_design_order_and_flags() {
    let policy = SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
        writable_roots: vec![PathBuf::from("/extra"), PathBuf::from("rel")],
        ..WorkspaceWrite::default()
    });
    let cwd = Path::new("/work");
    assert_eq!(
        policy.candidate_writable_roots(cwd, Some(Path::new("/var/tmp/t"))),
        vec![
            PathBuf::from("/extra"),
            PathBuf::from("/work/rel"),
            PathBuf::from("/work"),
            PathBuf::from("/tmp"),
            PathBuf::from("/var/tmp/t"),
        ]
    );
    let excluded = SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
        exclude_slash_tmp: true,
        exclude_tmpdir_env_var: true,
        ..WorkspaceWrite::default()
    });
    assert_eq!(
        excluded.candidate_writable_roots(cwd, Some(Path::new("/t"))),
        vec![PathBuf::from("/work")]
    );
    // A relative TMPDIR is ignored rather than resolved against the cwd.
    assert_eq!(
        SandboxPolicy::from_mode(SandboxMode::WorkspaceWrite)
            .candidate_writable_roots(cwd, Some(Path::new("tmp"))),
        vec![PathBuf::from("/work"), PathBuf::from("/tmp")]
    );
    assert!(
        SandboxPolicy::from_mode(SandboxMode::ReadOnly)
            .candidate_writable_roots(cwd, None)
            .is_empty()
    );
}

#[test]
fn resolve_canonicalises_skips_missing_and_dedups() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
    let policy = SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
        writable_roots: vec![dir.path().join("link"), dir.path().join("missing")],
        exclude_slash_tmp: true,
        exclude_tmpdir_env_var: true,
        ..WorkspaceWrite::default()
    });
    let canonical_real = std::fs::canonicalize(&real).unwrap();
    let resolved = policy
        .resolve(&canonical_real, &PolicyEnv::default(), |p| std::fs::canonicalize(p))
        .unwrap();
    assert_eq!(resolved.writable_roots, vec![canonical_real]);
    assert!(!resolved.network_access);
}

#[test]
fn resolve_rejects_relative_cwd_and_expands_hidden_paths() {
    let policy = SandboxPolicy::from_mode(SandboxMode::ReadOnly);
    assert!(matches!(
        policy.resolve(Path::new("rel"), &PolicyEnv::default(), identity),
        Err(PolicyError::RelativeCwd(_))
    ));
    let env = PolicyEnv { home: Some(Path::new("/home/u")), ..PolicyEnv::default() };
    let resolved = policy.resolve(Path::new("/w"), &env, identity).unwrap();
    assert!(resolved.hidden_paths.contains(&PathBuf::from("/home/u/.ssh")));
    assert!(resolved.writable_roots.is_empty());
    // Without HOME the `~` defaults are dropped, absolute ones stay.
    let resolved = policy.resolve(Path::new("/w"), &PolicyEnv::default(), identity).unwrap();
    assert!(resolved.hidden_paths.iter().all(|p| !p.starts_with("~")));
    assert!(resolved.hidden_paths.contains(&PathBuf::from("/run/docker.sock")));
    // An explicit `~` path without HOME is an error, not a silent no-op.
    let explicit = SandboxPolicy::ReadOnly { hidden_paths: Some(vec!["~/.secret".into()]) };
    assert!(matches!(
        explicit.resolve(Path::new("/w"), &PolicyEnv::default(), identity),
        Err(PolicyError::NoHome { .. })
    ));
}

#[test]
fn mode_round_trips_through_policy() {
    for mode in SandboxMode::ALL {
        assert_eq!(SandboxPolicy::from_mode(mode).mode(), mode);
    }
}

#[test]
fn the_user_view_reads_cordon_home_or_defaults_it_under_home_and_round_trips_as_json() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |key: &str| {
            pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| std::ffi::OsString::from(v))
        }
    };
    let snapshot = EnvSnapshot::from_lookup(
        env(&[
            ("HOME", "/home/u"),
            ("TMPDIR", ""),
            ("SSH_AUTH_SOCK", "/run/a.sock"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/tmp/dbus-x,guid=01"),
            ("KRB5CCNAME", "FILE:/var/krb/cc"),
        ]),
        Some(1000),
    );
    assert_eq!(
        snapshot,
        EnvSnapshot {
            home: Some(PathBuf::from("/home/u")),
            tmpdir: None,
            runtime_dir: None,
            ssh_auth_sock: Some(PathBuf::from("/run/a.sock")),
            session_bus: Some(PathBuf::from("/tmp/dbus-x")),
            kerberos_cache: Some(PathBuf::from("/var/krb/cc")),
            account_home: None,
            relocations: Default::default(),
            uid: Some(1000),
            cordon_home: Some(PathBuf::from("/home/u/.cordon")),
            cordon_executables: Vec::new(),
            path_dirs: Vec::new(),
        }
    );
    let explicit =
        EnvSnapshot::from_lookup(env(&[("HOME", "/home/u"), ("CORDON_HOME", "/srv/c")]), None);
    assert_eq!(explicit.cordon_home, Some(PathBuf::from("/srv/c")));
    assert_eq!(EnvSnapshot::from_lookup(env(&[]), None), EnvSnapshot::default());

    let json = serde_json::to_string(&snapshot).unwrap();
    assert_eq!(
        json,
        r#"{"home":"/home/u","ssh_auth_sock":"/run/a.sock","session_bus":"/tmp/dbus-x","kerberos_cache":"/var/krb/cc","uid":1000,"cordon_home":"/home/u/.cordon"}"#
    );
    assert_eq!(serde_json::from_str::<EnvSnapshot>(&json).unwrap(), snapshot);
    assert!(serde_json::from_str::<EnvSnapshot>(r#"{"HOME":"/x"}"#).is_err());
}

#[test]
fn allowed_sockets_expand_leave_the_hidden_list_and_need_the_network() {
    let env = PolicyEnv {
        home: Some(Path::new("/home/u")),
        ssh_auth_sock: Some(Path::new("/tmp/ssh-x/agent.1")),
        ..PolicyEnv::default()
    };
    let policy = |network_access| {
        SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
            network_access,
            allow_unix_sockets: vec!["$SSH_AUTH_SOCK".into(), "~/.docker/run/docker.sock".into()],
            ..WorkspaceWrite::default()
        })
    };
    let resolved = policy(true).resolve(Path::new("/w"), &env, identity).unwrap();
    assert_eq!(
        resolved.allowed_sockets,
        vec![PathBuf::from("/tmp/ssh-x/agent.1"), PathBuf::from("/home/u/.docker/run/docker.sock")]
    );
    // The agent socket is hidden by default; allowed, it is not hidden any more.
    assert!(!resolved.hidden_paths.contains(&PathBuf::from("/tmp/ssh-x/agent.1")));
    assert!(resolved.hidden_paths.contains(&PathBuf::from("/home/u/.ssh")));
    assert!(matches!(
        policy(false).resolve(Path::new("/w"), &env, identity),
        Err(PolicyError::SocketsNeedNetwork { .. })
    ));
    // Relative, or climbing out of the directory that holds it.
    for bad in ["run/x.sock", "/run/user/1000/../../../tmp/x.sock"] {
        let policy = SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
            network_access: true,
            allow_unix_sockets: vec![bad.into()],
            ..WorkspaceWrite::default()
        });
        assert!(
            matches!(
                policy.resolve(Path::new("/w"), &env, identity),
                Err(PolicyError::RelativeSocket { .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn hidden_paths_under_home_are_hidden_under_the_account_home_too() {
    let policy = SandboxPolicy::from_mode(SandboxMode::ReadOnly);
    let env = PolicyEnv {
        home: Some(Path::new("/elsewhere")),
        account_home: Some(Path::new("/home/u")),
        session_bus: Some(Path::new("/tmp/dbus-x")),
        ..PolicyEnv::default()
    };
    let resolved = policy.resolve(Path::new("/w"), &env, identity).unwrap();
    for path in ["/elsewhere/.ssh", "/home/u/.ssh", "/home/u/.pgpass", "/tmp/dbus-x"] {
        assert!(resolved.hidden_paths.contains(&PathBuf::from(path)), "{path}");
    }
    // The same home once; an explicit `~` entry needs one of the two.
    let same = PolicyEnv { home: Some(Path::new("/home/u")), ..env };
    let resolved = policy.resolve(Path::new("/w"), &same, identity).unwrap();
    let ssh = resolved.hidden_paths.iter().filter(|p| p.ends_with(".ssh")).count();
    assert_eq!(ssh, 2, "{:?}", resolved.hidden_paths); // ~/.ssh and /root/.ssh
    let explicit = SandboxPolicy::ReadOnly { hidden_paths: Some(vec!["~/.secret".into()]) };
    let account_only = PolicyEnv { home: None, ..env };
    let resolved = explicit.resolve(Path::new("/w"), &account_only, identity).unwrap();
    assert_eq!(resolved.hidden_paths, vec![PathBuf::from("/home/u/.secret")]);
}

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

use super::*;

const CWD: &str = "/var/tmp/ws";

fn read(json: &str) -> Result<SandboxPolicy, ProfileError> {
    policy_from_permission_profile(json, Path::new(CWD), Some(Path::new("/var/tmp/t")))
}

fn workspace(policy: SandboxPolicy) -> WorkspaceWrite {
    match policy {
        SandboxPolicy::WorkspaceWrite(ww) => ww,
        other => panic!("not workspace-write: {other:?}"),
    }
}

/// What Codex 0.169 sends for `codex sandbox -P :workspace` in `/var/tmp/ws`.
const WORKSPACE: &str = r#"{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"},{"path":{"type":"path","path":"/var/tmp/ws"},"access":"write"},{"path":{"type":"special","value":{"kind":"slash_tmp"}},"access":"write"},{"path":{"type":"special","value":{"kind":"tmpdir"}},"access":"write"},{"path":{"type":"path","path":"/var/tmp/ws/.git"},"access":"read","missing_path_behavior":"skip"},{"path":{"type":"path","path":"/var/tmp/ws/.agents"},"access":"read","missing_path_behavior":"skip"},{"path":{"type":"path","path":"/var/tmp/ws/.codex"},"access":"read","missing_path_behavior":"skip"},{"path":{"type":"path","path":"/var/tmp/ws/.aws"},"access":"read","missing_path_behavior":"skip"}]},"network":"restricted"}"#;

#[test]
fn codexs_workspace_profile_is_workspace_write_with_its_read_only_entries_and_cordons() {
    let ww = workspace(read(WORKSPACE).unwrap());
    assert_eq!(ww.writable_roots, Vec::<PathBuf>::new());
    assert!(!ww.exclude_policy_cwd && !ww.exclude_slash_tmp && !ww.exclude_tmpdir_env_var);
    assert!(!ww.network_access);
    let protected = ww.protected_paths.unwrap();
    for path in DEFAULT_PROTECTED_PATHS.iter().chain(CODEX_PROTECTED_NAMES) {
        assert!(protected.iter().any(|p| p == path), "{path} in {protected:?}");
    }
    for path in ["/var/tmp/ws/.git", "/var/tmp/ws/.agents", "/var/tmp/ws/.aws"] {
        assert!(protected.iter().any(|p| p == path), "{path} in {protected:?}");
    }
    assert_eq!(ww.hidden_paths.unwrap().len(), DEFAULT_HIDDEN_PATHS.len());
}

#[test]
fn read_only_network_on_and_no_sandbox_profiles_map_to_their_policies() {
    let read_only = r#"{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"}"#;
    assert!(matches!(read(read_only).unwrap(), SandboxPolicy::ReadOnly { .. }));
    let network = r#"{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"},{"path":{"type":"special","value":{"kind":"slash_tmp"}},"access":"write"},{"path":{"type":"special","value":{"kind":"tmpdir"}},"access":"write"},{"path":{"type":"path","path":"/var/tmp/ws"},"access":"write"}]},"network":"enabled"}"#;
    let ww = workspace(read(network).unwrap());
    assert!(ww.network_access && !ww.exclude_policy_cwd);
    assert_eq!(read(r#"{"type":"disabled"}"#).unwrap(), SandboxPolicy::DangerFullAccess {});
    let external = r#"{"type":"external","network":"enabled"}"#;
    assert_eq!(read(external).unwrap(), SandboxPolicy::DangerFullAccess {});
    let unrestricted =
        r#"{"type":"managed","file_system":{"type":"unrestricted"},"network":"enabled"}"#;
    assert_eq!(read(unrestricted).unwrap(), SandboxPolicy::DangerFullAccess {});
}

#[test]
fn project_roots_deny_entries_and_a_cwd_that_is_not_granted() {
    let json = r#"{"type":"managed","file_system":{"type":"restricted","entries":[
        {"path":{"type":"special","value":{"kind":"root"}},"access":"read"},
        {"path":{"type":"special","value":{"kind":"current_working_directory","subpath":"out"}},"access":"write"},
        {"path":{"type":"path","path":"/var/tmp/ws/out/keep"},"access":"read"},
        {"path":{"type":"path","path":"/var/tmp/secret"},"access":"none"},
        {"path":{"type":"special","value":{"kind":"minimal"}},"access":"read"},
        {"path":{"type":"special","value":{"kind":"unknown","path":":future"}},"access":"write"}]},
        "network":"restricted"}"#;
    let ww = workspace(read(json).unwrap());
    assert_eq!(ww.writable_roots, vec![PathBuf::from("/var/tmp/ws/out")]);
    assert!(ww.exclude_policy_cwd && ww.exclude_slash_tmp && ww.exclude_tmpdir_env_var);
    assert!(ww.protected_paths.unwrap().iter().any(|p| p == "/var/tmp/ws/out/keep"));
    assert!(ww.hidden_paths.unwrap().iter().any(|p| p == "/var/tmp/secret"));
    let policy = SandboxPolicy::WorkspaceWrite(workspace(read(json).unwrap()));
    let roots = policy.candidate_writable_roots(Path::new(CWD), Some(Path::new("/var/tmp/t")));
    assert_eq!(roots, vec![PathBuf::from("/var/tmp/ws/out")]);
}

#[test]
fn what_cordon_cannot_enforce_as_codex_means_it_is_refused() {
    let entries = |list: &str| {
        format!(
            r#"{{"type":"managed","file_system":{{"type":"restricted","entries":[{list}]}},"network":"restricted"}}"#
        )
    };
    let root = r#"{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}"#;
    for (json, expected) in [
        (entries(r#"{"path":{"type":"path","path":"/var/tmp/ws"},"access":"write"}"#), "restricts reads"),
        (entries(&format!(r#"{root},{{"path":{{"type":"glob_pattern","pattern":"**/*.env"}},"access":"deny"}}"#)), "glob"),
        (entries(r#"{"path":{"type":"special","value":{"kind":"root"}},"access":"write"}"#), "everywhere"),
        (r#"{"type":"managed","file_system":{"type":"unrestricted"},"network":"restricted"}"#.to_owned(), "everywhere"),
        (r#"{"type":"external","network":"restricted"}"#.to_owned(), "everywhere"),
        (entries(&format!(r#"{root},{{"path":{{"type":"path","path":"rel"}},"access":"write"}}"#)), "absolute"),
        (entries(&format!(r#"{root},{{"path":{{"type":"path","path":"/w"}},"access":"write"}},{{"path":{{"type":"path","path":"/w/a"}},"access":"deny"}},{{"path":{{"type":"path","path":"/w/a/b"}},"access":"write"}}"#)), "reopen"),
        (entries(&format!(r#"{root},{{"path":{{"type":"path","path":"/w"}},"access":"write"}},{{"path":{{"type":"path","path":"/w/.git"}},"access":"read"}},{{"path":{{"type":"path","path":"/w/.git/x"}},"access":"write"}}"#)), "reopen"),
        (entries(&format!(r#"{root},{{"path":{{"type":"special","value":{{"kind":"unknown","path":":x"}}}},"access":"deny"}}"#)), "dropped"),
        (entries(&format!(r#"{root},{{"path":{{"type":"special","value":{{"kind":"future_thing"}}}},"access":"read"}}"#)), "unknown variant"),
        (entries(&format!(r#"{root},{{"path":{{"type":"path","path":"/w"}},"access":"rw"}}"#)), "unknown variant"),
        (entries(&format!(r#"{root},{{"path":{{"type":"path","path":"/w"}},"access":"write","missing_path_behavior":"create"}}"#)), "unknown variant"),
        (entries(&format!(r#"{root},{{"path":{{"type":"path","path":"/w"}},"access":"write","future":1}}"#)), "unknown field"),
        (r#"{"type":"managed","file_system":{"type":"restricted","entries":[]},"network":"full"}"#.to_owned(), "unknown variant"),
        (r#"{"file_system":{"write":["/w"]}}"#.to_owned(), "without \"type\""),
        (r#"{"type":"managed","network":"restricted"}"#.to_owned(), "missing field"),
    ] {
        let error = read(&json).expect_err(&json).to_string();
        assert!(error.contains(expected), "{json}: {error}");
    }
}

fn with_root(list: &str, network: &str) -> String {
    format!(
        r#"{{"type":"managed","file_system":{{"type":"restricted","entries":[{{"path":{{"type":"special","value":{{"kind":"root"}}}},"access":"read"}},{list}]}},"network":"{network}"}}"#
    )
}

#[test]
fn read_entries_in_tmp_and_tmpdir_stay_read_only_and_places_are_resolved_as_codex_resolves_them() {
    let json = with_root(
        r#"{"path":{"type":"special","value":{"kind":"tmpdir"}},"access":"write"},
           {"path":{"type":"special","value":{"kind":"slash_tmp"}},"access":"write"},
           {"path":{"type":"path","path":"/var/tmp/t/ro"},"access":"read"},
           {"path":{"type":"path","path":"/tmp/x"},"access":"read"},
           {"path":{"type":"path","path":"/var/tmp/ws/real/.."},"access":"write"},
           {"path":{"type":"path","path":"/var/tmp/ws/x/../sub"},"access":"read"},
           {"path":{"type":"path","path":"/var/tmp/ws/x/../secf"},"access":"deny"}"#,
        "restricted",
    );
    let ww = workspace(read(&json).unwrap());
    let protected = ww.protected_paths.unwrap();
    for path in ["/var/tmp/t/ro", "/tmp/x", "/var/tmp/ws/sub"] {
        assert!(protected.iter().any(|p| p == path), "{path} in {protected:?}");
    }
    assert!(ww.hidden_paths.unwrap().iter().any(|p| p == "/var/tmp/ws/secf"));
    assert!(!ww.exclude_policy_cwd, "/var/tmp/ws/real/.. is the cwd");
    assert_eq!(ww.writable_roots, Vec::<PathBuf>::new());
}

#[test]
fn narrowed_write_everywhere_reopened_tmp_places_duplicates_and_nul_are_refused() {
    for (json, expected) in [
        (
            with_root(
                r#"{"path":{"type":"special","value":{"kind":"root"}},"access":"write"},
                   {"path":{"type":"path","path":"/secret"},"access":"deny"}"#,
                "enabled",
            ),
            "carve",
        ),
        (
            with_root(
                r#"{"path":{"type":"path","path":"/"},"access":"write"},
                   {"path":{"type":"path","path":"/outside"},"access":"read"}"#,
                "enabled",
            ),
            "carve",
        ),
        (
            with_root(
                r#"{"path":{"type":"special","value":{"kind":"tmpdir"}},"access":"write"},
                   {"path":{"type":"path","path":"/var/tmp/t/a"},"access":"read"},
                   {"path":{"type":"path","path":"/var/tmp/t/a/b"},"access":"write"}"#,
                "restricted",
            ),
            "reopen",
        ),
        (
            with_root(
                r#"{"path":{"type":"special","value":{"kind":"slash_tmp"}},"access":"write"},
                   {"path":{"type":"path","path":"/tmp/a"},"access":"read"},
                   {"path":{"type":"path","path":"/tmp/a/b"},"access":"write"}"#,
                "restricted",
            ),
            "reopen",
        ),
        (
            r#"{"type":"managed","file_system":{"type":"restricted","entries":[]},"network":"restricted","network":"enabled"}"#.to_owned(),
            "duplicate field",
        ),
        (with_root(r#"{"path":{"type":"path","path":"/w/a\u0000b"},"access":"deny"}"#, "restricted"), "NUL"),
    ] {
        let error = read(&json).expect_err(&json).to_string();
        assert!(error.contains(expected), "{json}: {error}");
    }
    // `/` as a path with nothing narrowing it is the root: no sandbox with the network on.
    let everywhere =
        with_root(r#"{"path":{"type":"path","path":"/"},"access":"write"}"#, "enabled");
    assert_eq!(read(&everywhere).unwrap(), SandboxPolicy::DangerFullAccess {});
    // Read everything with the network on and nothing writable: the network stays on.
    let ww = workspace(
        read(&with_root(r#"{"path":{"type":"path","path":"/x"},"access":"read"}"#, "enabled"))
            .unwrap(),
    );
    assert!(ww.network_access && ww.exclude_policy_cwd && ww.exclude_slash_tmp);
}

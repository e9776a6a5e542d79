//! The messages people see most when they get something wrong, as golden files
//! (`tests/golden/errors/*.txt`; `CORDON_UPDATE_GOLDEN=1` rewrites them). Each run's stderr is
//! stored with the scratch directories replaced by `$DIR` and `$HOME`.

use std::path::Path;
use std::process::{Command, Stdio};

use super::util::*;

/// One mistake: a name, the arguments, and a config file to plant first (if any).
struct Mistake {
    name: &'static str,
    args: &'static [&'static str],
    config: Option<&'static str>,
    rules: Option<&'static str>,
}

const MISTAKES: &[Mistake] = &[
    Mistake { name: "no_subcommand", args: &[], config: None, rules: None },
    Mistake { name: "subcommand_typo", args: &["exce", "--", "true"], config: None, rules: None },
    Mistake { name: "no_command", args: &["exec"], config: None, rules: None },
    Mistake {
        name: "unknown_policy",
        args: &["exec", "-a", "sometimes", "--", "true"],
        config: None,
        rules: None,
    },
    Mistake {
        name: "unknown_mode",
        args: &["exec", "-s", "open", "--", "true"],
        config: None,
        rules: None,
    },
    Mistake {
        name: "flag_typo",
        args: &["exec", "--netwrok", "--", "true"],
        config: None,
        rules: None,
    },
    Mistake {
        name: "timeout_without_unit_is_seconds",
        args: &["exec", "-a", "never", "--timeout", "nope", "--", "true"],
        config: None,
        rules: None,
    },
    Mistake {
        name: "timeout_zero",
        args: &["exec", "--timeout", "0s", "--", "true"],
        config: None,
        rules: None,
    },
    Mistake {
        name: "yolo_with_policy",
        args: &["exec", "--yolo", "-a", "never", "--", "true"],
        config: None,
        rules: None,
    },
    Mistake {
        name: "full_auto_with_mode",
        args: &["exec", "--full-auto", "-s", "read-only", "--", "true"],
        config: None,
        rules: None,
    },
    Mistake {
        name: "network_on_read_only",
        args: &["exec", "-s", "read-only", "--network", "--", "true"],
        config: None,
        rules: None,
    },
    Mistake {
        name: "bad_override",
        args: &["exec", "-c", "nokey", "--", "true"],
        config: None,
        rules: None,
    },
    Mistake {
        name: "unknown_override_key",
        args: &["exec", "-c", "sandbox_mood=read-only", "--", "true"],
        config: None,
        rules: None,
    },
    Mistake {
        name: "missing_cd_dir",
        args: &["exec", "-C", "/nonexistent/dir", "--", "true"],
        config: None,
        rules: None,
    },
    Mistake {
        name: "config_invalid_toml",
        args: &["exec", "--", "true"],
        config: Some("approval_policy = never\n"),
        rules: None,
    },
    Mistake {
        name: "config_unknown_key",
        args: &["exec", "--", "true"],
        config: Some("sandbox_mood = \"read-only\"\n"),
        rules: None,
    },
    Mistake {
        name: "config_bad_value",
        args: &["exec", "--", "true"],
        config: Some("approval_policy = \"sometimes\"\n"),
        rules: None,
    },
    Mistake {
        name: "rules_typo",
        args: &["exec", "--", "true"],
        config: None,
        rules: Some("[[rule]]\nprefix = [\"ls\"]\ndecison = \"allow\"\n"),
    },
    Mistake {
        name: "rules_empty_prefix",
        args: &["exec", "--", "true"],
        config: None,
        rules: Some("[[rule]]\nprefix = []\ndecision = \"forbidden\"\n"),
    },
];

/// The other platform's `cordon sandbox`: the one mistake whose message differs by platform.
const OTHER_PLATFORM: Mistake = if cfg!(target_os = "macos") {
    Mistake {
        name: "sandbox_linux_on_macos",
        args: &["sandbox", "linux", "--", "true"],
        config: None,
        rules: None,
    }
} else {
    Mistake {
        name: "sandbox_macos_on_linux",
        args: &["sandbox", "macos", "--", "true"],
        config: None,
        rules: None,
    }
};

#[test]
fn the_commonest_mistakes_get_clear_messages() {
    let update = std::env::var_os("CORDON_UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/errors");
    let mut mismatches = Vec::new();
    for mistake in MISTAKES.iter().chain([&OTHER_PLATFORM]) {
        let home = scratch();
        let work = scratch();
        if let Some(config) = mistake.config {
            std::fs::write(home.path().join("config.toml"), config).unwrap();
        }
        if let Some(rules) = mistake.rules {
            std::fs::write(home.path().join("rules.toml"), rules).unwrap();
        }
        let out = Command::new(CORDON)
            .args(mistake.args)
            .current_dir(work.path())
            .env("CORDON_HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr)
            .replace(&home.path().display().to_string(), "$HOME")
            .replace(&work.path().display().to_string(), "$DIR");
        let actual = format!("exit: {:?}\n{stderr}", out.status.code());
        assert!(!actual.contains("panicked"), "{}: {actual}", mistake.name);
        let path = golden_dir.join(format!("{}.txt", mistake.name));
        if update {
            std::fs::write(&path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_default();
        if expected != actual {
            mismatches
                .push(format!("--- {}\nexpected:\n{expected}\nactual:\n{actual}", path.display()));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{}\n(CORDON_UPDATE_GOLDEN=1 rewrites them)",
        mismatches.join("\n")
    );
}

#[test]
fn the_bash_completion_script_loads() {
    let out = Command::new(CORDON).args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let dir = scratch();
    let script = dir.path().join("cordon.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let check = Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p cordon", script.display()))
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    assert!(String::from_utf8_lossy(&check.stdout).contains("cordon"));
    for shell in ["zsh", "fish"] {
        let out = Command::new(CORDON).args(["completions", shell]).output().unwrap();
        assert!(out.status.success() && !out.stdout.is_empty(), "{shell}");
    }
    let man = Command::new(CORDON).arg("man").output().unwrap();
    assert!(String::from_utf8_lossy(&man.stdout).contains(".TH cordon"));
}

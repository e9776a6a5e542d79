//! The `sandbox-exec` command line for a profile. Builds values only; the caller spawns.

use std::ffi::OsString;
use std::process::Command;

use crate::profile::SeatbeltProfile;

/// Where macOS ships `sandbox-exec`. Always this absolute path, never a `PATH` lookup: a
/// `sandbox-exec` earlier in `PATH` would run the command unconfined.
pub const SANDBOX_EXEC_PATH: &str = "/usr/bin/sandbox-exec";

/// The full argv that runs `command` under `profile`:
/// `[SANDBOX_EXEC_PATH, "-p", TEXT, "-DNAME=PATH"..., "--", command...]`.
///
/// Paths are appended as raw `OsString`s (no UTF-8 or quoting concerns: `sandbox-exec` splits
/// each `-D` argument at its first `=`, and parameter names contain none). `--` ends
/// `sandbox-exec`'s options, so a command starting with `-` is still the command. `command` must
/// not be empty; the caller checks that (the CLI requires a command).
pub fn sandbox_exec_argv(profile: &SeatbeltProfile, command: &[OsString]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = Vec::with_capacity(4 + profile.params.len() + command.len());
    argv.push(SANDBOX_EXEC_PATH.into());
    argv.push("-p".into());
    argv.push(profile.text.as_str().into());
    for (name, path) in &profile.params {
        let mut arg = OsString::from(format!("-D{name}="));
        arg.push(path.as_os_str());
        argv.push(arg);
    }
    argv.push("--".into());
    argv.extend(command.iter().cloned());
    argv
}

/// A [`Command`] for [`sandbox_exec_argv`] with the profile's environment additions
/// ([`SeatbeltProfile::env`]) set. The caller adds the working directory and stdio, and spawns
/// it; only on macOS does `/usr/bin/sandbox-exec` exist.
pub fn sandbox_exec_command(profile: &SeatbeltProfile, command: &[OsString]) -> Command {
    let mut cmd = Command::new(SANDBOX_EXEC_PATH);
    cmd.args(sandbox_exec_argv(profile, command).into_iter().skip(1));
    cmd.envs(profile.env.iter().copied());
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SANDBOX_ENV;
    use pretty_assertions::assert_eq;
    use std::ffi::OsStr;
    use std::path::PathBuf;

    fn profile() -> SeatbeltProfile {
        SeatbeltProfile {
            text: "(version 1)".to_owned(),
            params: vec![
                ("WRITABLE_ROOT_0".to_owned(), PathBuf::from("/w")),
                ("HIDDEN_0".to_owned(), PathBuf::from("/h/a=b c")),
            ],
            env: vec![SANDBOX_ENV],
        }
    }

    fn os(items: &[&str]) -> Vec<OsString> {
        items.iter().map(OsString::from).collect()
    }

    #[test]
    fn argv_is_absolute_sandbox_exec_profile_params_then_command() {
        assert_eq!(
            sandbox_exec_argv(&profile(), &os(&["-rf", "x y"])),
            os(&[
                "/usr/bin/sandbox-exec",
                "-p",
                "(version 1)",
                "-DWRITABLE_ROOT_0=/w",
                "-DHIDDEN_0=/h/a=b c",
                "--",
                "-rf",
                "x y",
            ])
        );
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_paths_travel_unchanged() {
        use std::os::unix::ffi::OsStrExt;
        let mut profile = profile();
        profile.params =
            vec![("WRITABLE_ROOT_0".to_owned(), PathBuf::from(OsStr::from_bytes(b"/w/\xff")))];
        let argv = sandbox_exec_argv(&profile, &os(&["true"]));
        assert_eq!(argv[3].as_bytes(), b"-DWRITABLE_ROOT_0=/w/\xff");
    }

    #[test]
    fn command_runs_sandbox_exec_by_absolute_path_with_the_profile_env() {
        let cmd = sandbox_exec_command(&profile(), &os(&["true"]));
        assert_eq!(cmd.get_program(), OsStr::new("/usr/bin/sandbox-exec"));
        assert_eq!(
            cmd.get_args().collect::<Vec<_>>(),
            ["-p", "(version 1)", "-DWRITABLE_ROOT_0=/w", "-DHIDDEN_0=/h/a=b c", "--", "true"]
                .map(OsStr::new)
        );
        assert_eq!(
            cmd.get_envs().collect::<Vec<_>>(),
            vec![(OsStr::new("CORDON_SANDBOX"), Some(OsStr::new("seatbelt")))]
        );
    }
}

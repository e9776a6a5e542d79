//! The oracle for forbidding and asking rules (`tests/oracle/`): commands generated from a
//! grammar of wrappers, shell constructs and option spellings run for real in a private mount
//! namespace where `rm`, `touch` and git's `push` only leave a trace (stubs, `strace`, git's
//! trace2 events); whenever one of them ran, `cordon policy check` must have answered ask or
//! refuse under every approval policy, never run.
//!
//! `CORDON_ORACLE_CASES` (default 3000, divided by `CORDON_TEST_TIME_SCALE`),
//! `CORDON_ORACLE_SEED` (default 1), `CORDON_ORACLE_JOBS` (default: the CPUs) and
//! `CORDON_ORACLE_JSON` (a file for the violations) size and keep a run; `tests/oracle/README.md`
//! describes the longer runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::util::*;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn oracle_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/oracle/oracle.py")
}

/// Runs the oracle as `user` over `cases` generated cases; `Err` holds a reason to skip.
fn run_oracle(user: User, cases: usize) -> Result<Run, String> {
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    // uid 65534 draws other cases than root.
    let seed = setting("CORDON_ORACLE_SEED", 1) + usize::from(user == User::Nobody);
    let mut cmd = Command::new(python());
    cmd.arg(oracle_script())
        .arg("--cordon")
        .arg(cordon_for(user))
        .args(["--cases", &cases.to_string()])
        .args(["--seed", &seed.to_string()])
        .args(["--jobs", &setting("CORDON_ORACLE_JOBS", jobs).to_string()])
        .args(["--timeout", &(3 * time_scale()).to_string()]);
    if user == User::Nobody {
        cmd.args(["--user", "nobody"]);
    }
    if let Some(path) = std::env::var_os("CORDON_ORACLE_JSON") {
        let suffix = if user == User::Nobody { ".nobody" } else { "" };
        let mut path = path;
        path.push(suffix);
        cmd.arg("--json").arg(path);
    }
    let run = Run::from(cmd.output().unwrap());
    // 3: the oracle cannot run here; its first line says why.
    if run.code == Some(3) {
        return Err(run.stdout.lines().next().unwrap_or("oracle cannot run").to_owned());
    }
    Ok(run)
}

/// How many cases a run draws: `CORDON_ORACLE_CASES`, or fewer under software emulation.
fn cases() -> usize {
    setting("CORDON_ORACLE_CASES", (3000 / time_scale() as usize).max(100))
}

#[track_caller]
fn assert_no_violation(run: &Run) {
    assert!(
        run.ok(),
        "cordon let a command run that runs a forbidden or prompted program (exit {:?}: 1 \
         violations, 2 harness fault):\n{}\n{}",
        run.code,
        run.stdout,
        run.stderr
    );
    eprintln!("{}", run.stdout);
}

#[test]
fn no_command_that_runs_a_forbidden_or_prompted_program_is_let_run() {
    let run = run_oracle(User::Root, cases());
    skip_unless!(run.is_ok(), "{}", run.as_ref().err().unwrap());
    assert_no_violation(&run.unwrap());
}

#[test]
fn no_command_that_runs_a_forbidden_or_prompted_program_is_let_run_as_uid_65534() {
    skip_unless!(is_root(), "the cases drop to uid 65534 from root");
    let run = run_oracle(User::Nobody, cases() / 4);
    skip_unless!(run.is_ok(), "{}", run.as_ref().err().unwrap());
    assert_no_violation(&run.unwrap());
}

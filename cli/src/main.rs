//! `cordon`: one binary, personalities chosen by `argv[0]` (DESIGN §3).
//!
//! `codex-linux-sandbox` (a symlink, or `argv[0]` set by cordon itself) is the Linux sandbox
//! helper; anything else is the front-end CLI. The dispatch happens first thing in `main`,
//! before any runtime, thread or environment change.
#![forbid(unsafe_code)]

mod approver;
mod config;
mod doctor;
mod exec_cmd;
mod executor_cmd;
mod flags;
mod output;
mod sandbox_cmd;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    if std::env::args_os().next().is_some_and(|arg0| cordon_sandbox_linux::is_helper_arg0(&arg0)) {
        cordon_sandbox_linux::run_main();
    }
    let cli = match flags::Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to stdout and succeed.
        Err(error) if !error.use_stderr() => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        // A usage error is cordon's own failure: one line and 125 (the `env`/`timeout`
        // convention), never confused with a status of the command it would have run.
        Err(error) => {
            let rendered = error.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let message = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("cordon: {message} (see cordon --help)");
            return ExitCode::from(125);
        }
    };
    let result = match cli.command {
        flags::Command::Exec(args) => exec_cmd::run_exec(args),
        flags::Command::Executor(args) => executor_cmd::run(args),
        flags::Command::Policy(flags::PolicyCommand::Check(args)) => {
            exec_cmd::run_policy_check(args)
        }
        flags::Command::Sandbox(cmd) => sandbox_cmd::run(cmd),
        flags::Command::Doctor(cmd) => doctor::run(&cmd),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("cordon: {error:#}");
            ExitCode::from(125)
        }
    }
}

//! `cordon`: one binary, personalities chosen by `argv[0]`.
//!
//! `codex-linux-sandbox` (a symlink, or `argv[0]` set by cordon itself) is the Linux sandbox
//! helper; anything else is the front-end CLI. The dispatch happens first thing in `main`,
//! before any runtime, thread or environment change, and before the front end installs its
//! logging subscriber (`logging.rs`): the helper pays for none of it.
#![forbid(unsafe_code)]

mod approver;
mod config;
mod config_show;
mod doctor;
mod dry_run;
mod exec_cmd;
mod executor_cmd;
mod flags;
mod held_cmd;
mod logging;
mod man;
mod mcp_cmd;
mod output;
mod presets;
mod sandbox_cmd;
mod settings;
mod state_files;
mod terminal;
mod undo_cmd;

use std::process::ExitCode;

use clap::Parser;

/// Exit status of a command line cordon cannot parse (see docs/exit-codes.md).
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    if std::env::args_os().next().is_some_and(|arg0| cordon_exec_core::is_helper_arg0(&arg0)) {
        cordon_exec_core::helper_main();
    }
    let cli = match flags::Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to stdout and succeed.
        Err(error) if !error.use_stderr() => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        // A usage error: clap's whole message (what is wrong, the possible values, "did you
        // mean", the usage line) and exit 2, as for every clap program. Nothing has run.
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(EXIT_USAGE);
        }
    };
    logging::init(cli.verbose);
    let result = match cli.command {
        flags::Command::Exec(args) => exec_cmd::run_exec(args),
        flags::Command::Executor(args) => executor_cmd::run(args),
        flags::Command::McpServer(args) => mcp_cmd::run(args),
        flags::Command::Policy(flags::PolicyCommand::Check(args)) => {
            exec_cmd::run_policy_check(args)
        }
        flags::Command::Sandbox(cmd) => sandbox_cmd::run(cmd),
        flags::Command::Config(flags::ConfigCommand::Show(args)) => config_show::run(&args),
        flags::Command::Doctor(cmd) => doctor::run(&cmd),
        flags::Command::Held(args) => held_cmd::run(&args),
        flags::Command::Diff(args) => undo_cmd::diff(&args),
        flags::Command::Undo(args) => undo_cmd::undo(&args),
        flags::Command::Completions(args) => {
            let mut command = <flags::Cli as clap::CommandFactory>::command();
            command.build();
            clap_complete::generate(args.shell, &mut command, "cordon", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        flags::Command::Man(args) => man::run(&args),
    };
    let code = match result {
        Ok(code) => code,
        // An unknown `--preset` is a usage error like clap's own.
        Err(error) if error.is::<presets::UnknownPreset>() => {
            terminal::say(&[format!("{error:#}")]);
            ExitCode::from(EXIT_USAGE)
        }
        Err(error) => {
            // One line, whatever the error carries (a far end's message, a path with control
            // characters): what a terminal would obey is shown escaped.
            terminal::say(&[format!("{error:#}")]);
            ExitCode::from(125)
        }
    };
    // Whatever a command set on the terminal does not outlive cordon.
    terminal::on_return();
    code
}

//! The command, prepared before anything is confined or forked: its argv and environment as C
//! strings, so that starting it allocates nothing.

use std::ffi::{CString, OsString};

use cordon_policies::ProcessLimit;

use crate::error::HelperError;
use crate::sys::{self, CommandGroup, ParentDeathSignal, Spawned};

/// The command's program, argv and environment.
pub struct PreparedCommand {
    pub program: OsString,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    /// The per-process limits, set in the command's process just before its exec.
    pub rlimits: Vec<ProcessLimit>,
}

impl PreparedCommand {
    /// Replaces this process with the command (`execvpe`); returns only the error.
    pub fn exec(self) -> HelperError {
        sys::reset_sigpipe();
        if let Err(source) = sys::set_process_limits(&self.rlimits) {
            return HelperError::SetLimit { what: "process", source };
        }
        let error = match nix::unistd::execvpe(&self.argv[0], &self.argv, &self.envp) {
            Ok(never) => match never {},
            Err(error) => error,
        };
        self.exec_failed(error.into())
    }

    /// Starts the command in a child that shares this process's memory until it execs
    /// ([`sys::spawn_command`]). A failed exec is reported in [`Spawned::exec_error`]; the
    /// child has then exited 127 or 126, and the caller says why.
    pub fn spawn(
        &self,
        group: CommandGroup,
        parent_death: ParentDeathSignal,
    ) -> Result<Spawned, HelperError> {
        sys::spawn_command(&sys::CommandSpawn {
            file: &self.argv[0],
            argv: &self.argv,
            envp: &self.envp,
            group,
            parent_death,
            rlimits: &self.rlimits,
        })
        .map_err(|source| HelperError::Containment { what: "starting the command", source })
    }

    /// What a failed exec of this command is reported as.
    pub fn exec_failed(&self, source: std::io::Error) -> HelperError {
        HelperError::Exec { command: self.program.clone(), source }
    }
}

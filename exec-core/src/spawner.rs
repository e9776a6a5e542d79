//! The one way a [`LaunchPlan`] becomes a process: [`LaunchPlan::start`] for a child (the
//! orchestrator's attempts, the executor's pipe and PTY sessions) and [`LaunchPlan::exec`] for
//! `cordon sandbox`, which becomes the command. Both set the child up in the same order —
//! terminal and descriptors first, then the descriptors the helper is told about opened to
//! it, then the helper itself in the forked child when this process is single-threaded — so
//! a step added here holds for every launch.
//!
//! A plan is only read here, never changed: what was planned (and shown in `--json`) is what
//! starts.

use std::os::unix::process::CommandExt;

use crate::launch::LaunchPlan;
use crate::sys::Terminal;

/// The cgroup a child joins, shared with whoever waits for the child and removes it.
#[cfg(target_os = "linux")]
pub(crate) type ChildCgroup = std::sync::Arc<crate::limits::CommandCgroup>;
#[cfg(not(target_os = "linux"))]
pub(crate) type ChildCgroup = ();

impl LaunchPlan {
    /// The cgroup the plan's child is made in, before the child: the tree limits' where the
    /// plan has them (an error when it cannot be made), else for an unsandboxed command a
    /// kill-only one where this machine gives cordon one (it has no PID namespace to end
    /// with it).
    #[cfg(target_os = "linux")]
    pub(crate) fn child_cgroup(&self) -> std::io::Result<Option<ChildCgroup>> {
        let cgroup = match &self.cgroup_limits {
            Some(limits) => Some(crate::limits::CommandCgroup::create_for(limits)?),
            None if self.sandbox == crate::launch::SandboxKind::None => {
                crate::limits::CommandCgroup::for_unsandboxed()
            }
            None => None,
        };
        Ok(cgroup.map(std::sync::Arc::new))
    }

    /// No cgroups elsewhere.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn child_cgroup(&self) -> std::io::Result<Option<ChildCgroup>> {
        Ok(None)
    }
}

/// The child's standard streams, for [`LaunchPlan::start`].
#[derive(Debug)]
pub(crate) enum ChildStdio {
    /// stdin from `/dev/null`, stdout and stderr piped; no terminal.
    Null,
    /// cordon's own stdin, stdout and stderr piped; the terminal stays cordon's.
    Inherit,
    /// cordon's own stdin, which is a terminal the command takes as its foreground process
    /// group for as long as it runs; stdout and stderr piped.
    Terminal,
}

/// How the prepared `Command` gets its streams.
enum Streams {
    Pipes(ChildStdio),
    /// A new terminal on all three, which becomes the child's controlling terminal.
    Controlling(std::fs::File),
}

/// A started child.
pub(crate) enum Started<C> {
    /// The sandbox's supervisor cloned straight into the command's namespaces, as this
    /// process's own child; its stdout and stderr are pipes it holds.
    #[cfg(target_os = "linux")]
    Init(crate::sys::InitChild),
    /// What the caller's spawn function made of the prepared `Command`.
    Spawned(C),
}

impl LaunchPlan {
    /// Starts the plan as a child with `stdio`. `spawn` turns the prepared `Command` into a
    /// child (std's or tokio's); it is not called when the helper's supervisor can be cloned
    /// directly ([`Started::Init`]), which needs stdin from `/dev/null` or cordon's own and no
    /// terminal to hand over.
    pub(crate) fn start<C>(
        &self,
        stdio: ChildStdio,
        cgroup: Option<&ChildCgroup>,
        spawn: impl FnOnce(std::process::Command) -> std::io::Result<C>,
    ) -> std::io::Result<Started<C>> {
        #[cfg(target_os = "linux")]
        {
            use crate::sys::InitStdin;
            let init_stdin = match stdio {
                ChildStdio::Null => Some(InitStdin::Null),
                ChildStdio::Inherit => Some(InitStdin::Inherit),
                ChildStdio::Terminal => None,
            };
            // A transaction of the helper's own needs the helper as the command's parent (its
            // applier waits on it): no supervisor is cloned in its place.
            let helper_applies =
                self.in_process.as_ref().is_some_and(|args| !args.request.writes.is_direct());
            if let Some(init_stdin) = init_stdin.filter(|_| !helper_applies) {
                let procs = cgroup.map(|c| c.join_descriptors()).unwrap_or_default();
                if let Some(init) =
                    crate::sys::spawn_namespace_init(self.in_process_helper(), init_stdin, &procs)?
                {
                    return Ok(Started::Init(init));
                }
            }
        }
        spawn(self.prepared(Streams::Pipes(stdio), cgroup)?).map(Started::Spawned)
    }

    /// Starts the plan as a child in a new session whose controlling terminal is `terminal`
    /// (the other side of a PTY), on its stdin, stdout and stderr. `spawn` turns the prepared
    /// `Command` into a child; the copies of `terminal` in this process are closed when it
    /// returns, so the terminal ends with the child and its descendants.
    pub(crate) fn start_in_terminal<C>(
        &self,
        terminal: std::fs::File,
        cgroup: Option<&ChildCgroup>,
        spawn: impl FnOnce(std::process::Command) -> std::io::Result<C>,
    ) -> std::io::Result<C> {
        spawn(self.prepared(Streams::Controlling(terminal), cgroup)?)
    }

    /// The `Command` for the plan with its streams and every pre-exec step, in the one order
    /// they must run: the child set up for its terminal (which marks every inherited
    /// descriptor close-on-exec), then the descriptors the helper is told about opened to it
    /// again, then — when this process is single-threaded — the helper itself in the forked
    /// child instead of an exec.
    fn prepared(
        &self,
        streams: Streams,
        cgroup: Option<&ChildCgroup>,
    ) -> std::io::Result<std::process::Command> {
        use std::process::Stdio;
        let mut command = self.to_command();
        // First of all: the child is in its cgroup and under its limits before any other
        // step, so nothing it or the helper does escapes them.
        // An unsandboxed command joins it in its keeper's fork instead: the keeper stays out,
        // so that it can kill the cgroup whole and still report the command's status.
        #[cfg(target_os = "linux")]
        let unsandboxed = self.sandbox == crate::launch::SandboxKind::None;
        #[cfg(target_os = "linux")]
        if cgroup.is_some() || !self.process_limits.is_empty() {
            let procs = match cgroup {
                Some(cgroup) if !unsandboxed => cgroup.join_descriptors(),
                _ => Vec::new(),
            };
            let owner = cgroup.map(std::sync::Arc::clone);
            crate::sys::limit_child(&mut command, owner, procs, self.process_limits.clone());
        }
        #[cfg(not(target_os = "linux"))]
        let _ = cgroup;
        let terminal = match streams {
            Streams::Pipes(ChildStdio::Null) => {
                command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
                Terminal::Detach
            }
            Streams::Pipes(ChildStdio::Inherit) => {
                command.stdin(Stdio::inherit()).stdout(Stdio::piped()).stderr(Stdio::piped());
                Terminal::Detach
            }
            Streams::Pipes(ChildStdio::Terminal) => {
                command.stdin(Stdio::inherit()).stdout(Stdio::piped()).stderr(Stdio::piped());
                Terminal::Foreground
            }
            Streams::Controlling(terminal) => {
                command.stdin(terminal.try_clone()?).stdout(terminal.try_clone()?).stderr(terminal);
                Terminal::Controlling
            }
        };
        crate::sys::prepare_child(&mut command, terminal);
        self.pass_descriptors(&mut command);
        // Last, so that every step above applies to the keeper and is inherited: an unsandboxed
        // command has no helper whose PID namespace ends it, so a keeper holds its tree.
        #[cfg(target_os = "linux")]
        if unsandboxed {
            let group = match terminal {
                Terminal::Controlling => crate::sys::CommandGroup::OwnForeground,
                Terminal::Foreground | Terminal::Detach => crate::sys::CommandGroup::Keeper,
            };
            let held = crate::sys::KeptCgroup {
                join: cgroup.map(|c| c.join_descriptors()).unwrap_or_default(),
                kill: cgroup.and_then(|c| c.kill_descriptor()),
                into: cgroup.and_then(|c| c.birth_descriptor()),
                owner: cgroup.map(std::sync::Arc::clone),
            };
            crate::sys::keep_unsandboxed(&mut command, group, held);
        }
        // SAFETY: only `start` and `start_in_terminal` call this, and they hand the command
        // straight to their `spawn`: the crate's spawn functions (std's and tokio's `spawn`)
        // fork before starting any thread, so none starts between this and the fork.
        #[cfg(target_os = "linux")]
        unsafe {
            crate::sys::run_helper_in_child(&mut command, self.in_process_helper());
        }
        Ok(command)
    }

    /// Replaces this process with the plan (`cordon sandbox`): the command's status, signals
    /// and terminal are its own with nothing in between. Returns only on failure.
    pub fn exec(&self) -> std::io::Error {
        // A cgroup must be made, watched and removed by a process that outlives the command.
        if self.cgroup_limits.is_some() {
            return std::io::Error::other(
                "limits of the whole tree need cordon to stay while the command runs",
            );
        }
        // The helper in this very process: the exec of cordon it would take is saved.
        #[cfg(target_os = "linux")]
        if let Some(args) = &self.in_process {
            if cordon_sandbox_linux::single_threaded() {
                // SAFETY: one thread (checked on the line above). The helper never returns, so
                // no owner of a descriptor it closes (those marked close-on-exec, as the exec
                // would) runs again; `--proxy-fd` is the plan's hand-over socket, whose owner
                // is never dropped either.
                unsafe {
                    cordon_sandbox_linux::run_in_process(
                        args,
                        &self.env,
                        cordon_sandbox_linux::InheritedDescriptors::Mixed,
                        cordon_sandbox_linux::InProcessStart::Plain,
                    )
                };
            }
        }
        // The command itself (no helper to set its rlimits): this process takes them first.
        #[cfg(target_os = "linux")]
        if let Err(error) = cordon_sandbox_linux::set_process_limits(&self.process_limits) {
            return error;
        }
        // This very process execs: no child to set up, only the helper's descriptors to keep.
        let mut command = self.to_command();
        self.pass_descriptors(&mut command);
        command.exec()
    }

    /// The helper's work, for a child that may run it instead of exec'ing it.
    #[cfg(target_os = "linux")]
    fn in_process_helper(&self) -> Option<crate::sys::InProcessHelper<'_>> {
        let args = self.in_process.as_ref()?;
        Some(crate::sys::InProcessHelper { args, env: &self.env, cwd: &self.cwd })
    }

    /// A std `Command` with program, arg0, args, a clean environment and the cwd (entered
    /// through its descriptor when it is pinned).
    fn to_command(&self) -> std::process::Command {
        let mut command = std::process::Command::new(&self.program);
        if let Some(arg0) = &self.arg0 {
            command.arg0(arg0);
        }
        command.args(&self.args).env_clear().envs(self.env.iter().cloned());
        match &self.cwd_pin {
            Some(pin) => crate::sys::enter_directory_in_child(&mut command, pin.descriptor()),
            None => {
                command.current_dir(&self.cwd);
            }
        }
        command
    }

    /// Lets `command`'s child inherit the descriptors the plan's helper is told about (the
    /// proxy's hand-over socket, `--proxy-fd`): a pre-exec step clears their close-on-exec
    /// flag in the child only. It must run after every step that marks descriptors
    /// close-on-exec (pre-exec steps run in the order they were registered); without it the
    /// helper finds no descriptor and fails closed (exit 125). A helper run in the forked
    /// child keeps them open by itself.
    fn pass_descriptors(&self, command: &mut std::process::Command) {
        #[cfg(target_os = "linux")]
        if let Some(channel) = &self.proxy_channel {
            cordon_sandbox_linux::keep_open_in_child(command, channel.descriptor());
        }
        #[cfg(not(target_os = "linux"))]
        let _ = command;
    }
}

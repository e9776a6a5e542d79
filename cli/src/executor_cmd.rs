//! `cordon executor`: sessions over JSON lines on stdin/stdout. Logging goes to stderr only.
//! Three roles: the local executor (decides and runs here), `--connect HOST` (decides here,
//! runs there over ssh) and `--serve-remote` (the far end of that link: runs what it is told).

use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;

use cordon_exec_core::{
    HostFacts, RemoteServer, ServeEnd, SessionManager, serve_executor as serve,
};

use crate::flags::ExecutorCmdArgs;
use crate::settings::{Settings, announce_gaps, connect_sessions, load_for_sessions};

pub fn run(args: ExecutorCmdArgs) -> anyhow::Result<ExitCode> {
    let ExecutorCmdArgs { base, connect, serve_remote, remote } = args;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    let served = match (connect, serve_remote) {
        (Some(host), _) => local.block_on(&runtime, async move {
            let sessions = connect_sessions(&base, &host, &remote).await?;
            let (input, output) = stdio();
            Ok(serve(input, output, Rc::new(sessions)).await?)
        }),
        (None, serve_remote) => {
            let settings = load_for_sessions(&base)?;
            if !serve_remote {
                settings.refuse_home_root()?;
                announce_gaps("cordon executor", &settings.sandbox.policy);
            }
            let orchestrator = settings.orchestrator()?;
            let defaults = settings.session_defaults();
            // Before anything is served, while this process has one thread: the kernel probes
            // fork children that need that.
            let facts = if serve_remote { Some(host_facts(&settings)?) } else { None };
            drop(settings);
            local.block_on(&runtime, async move {
                let manager = Rc::new(SessionManager::new(Arc::new(orchestrator), defaults));
                let (input, output) = stdio();
                let end = match facts {
                    Some(facts) => {
                        let server = RemoteServer::new(Rc::clone(&manager), facts);
                        cordon_exec_core::serve_remote(input, output, Rc::new(server)).await
                    }
                    None => serve(input, output, Rc::clone(&manager)).await,
                };
                manager.shutdown();
                anyhow::Ok(end?)
            })
        }
    };
    // Calls still in flight are abandoned (their sessions were terminated above), and so are
    // blocking helpers stuck in a read of stdin (after `shutdown`) or a write to a terminal.
    drop(local);
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    // The manager's last owner went with the local set: its temporary directory is gone.
    match served? {
        ServeEnd::Eof | ServeEnd::Shutdown => Ok(ExitCode::SUCCESS),
        ServeEnd::Signal(signal) => Ok(ExitCode::from(u8::try_from(128 + signal).unwrap_or(1))),
    }
}

/// The protocol's input and output. Without a thread for stdin or stdout, the executor stays
/// single-threaded while it runs only pipe sessions, and their helper starts in the forked
/// child (no exec of cordon).
fn stdio() -> (impl tokio::io::AsyncBufRead + Unpin, impl tokio::io::AsyncWrite + Unpin + 'static) {
    let stdin = tokio::io::BufReader::new(cordon_exec_core::protocol_stdin());
    (stdin, cordon_exec_core::protocol_stdout())
}

/// What `--serve-remote` tells the orchestrator about this machine: `doctor`, its
/// environment (the base the orchestrator's environment policy filters) and its directory.
fn host_facts(settings: &Settings) -> anyhow::Result<HostFacts> {
    #[cfg(target_os = "linux")]
    let doctor = serde_json::to_value(cordon_exec_core::DoctorReport::gather())?;
    #[cfg(not(target_os = "linux"))]
    let doctor = serde_json::Value::Null;
    let env = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| !CONNECTION_VARS.contains(&k.as_str()))
        .collect();
    Ok(HostFacts { doctor, env, cwd: settings.cwd.clone() })
}

/// Variables that describe this executor's own ssh login and shell, not a command's
/// environment. They stay out of the base environment: with `SSH_CLIENT` set, Debian's bash
/// reads `~/.bashrc` even for `bash -c` (it thinks sshd started it), which made every
/// command pay for the login's rc files; `PWD` would name the wrong directory.
const CONNECTION_VARS: &[&str] = &[
    "SSH_CLIENT",
    "SSH_CONNECTION",
    "SSH_TTY",
    "SSH_ORIGINAL_COMMAND",
    "SSH2_CLIENT",
    "SHLVL",
    "PWD",
    "OLDPWD",
    "_",
];

//! `cordon mcp-server`: the executor's sessions over MCP on stdin/stdout. Logging goes to stderr
//! only; stdout carries nothing but the protocol. With `--connect HOST` the sessions run there.

use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;

use cordon_exec_core::{ServeEnd, SessionManager, serve_mcp};

use crate::flags::McpArgs;
use crate::settings::{announce_gaps, connect_sessions, load_for_sessions};

pub fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    let McpArgs { base, connect, remote } = args;
    // One thread: every session's parent-death signal is tied to the thread that spawned it.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    let served = match connect {
        Some(host) => local.block_on(&runtime, async move {
            let sessions = connect_sessions(&base, &host, &remote).await?;
            anyhow::Ok(serve_mcp(Rc::new(sessions)).await?)
        }),
        None => {
            let settings = load_for_sessions(&base)?;
            settings.refuse_home_root()?;
            announce_gaps("cordon mcp-server", &settings.sandbox.policy);
            let orchestrator = settings.orchestrator()?;
            let defaults = settings.session_defaults();
            local.block_on(&runtime, async move {
                let manager = Rc::new(SessionManager::new(Arc::new(orchestrator), defaults));
                anyhow::Ok(serve_mcp(manager).await?)
            })
        }
    };
    // Calls still in flight are abandoned (their sessions were terminated), and so are
    // blocking helpers stuck in a read of stdin or a write to a terminal.
    drop(local);
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match served? {
        ServeEnd::Eof | ServeEnd::Shutdown => Ok(ExitCode::SUCCESS),
        ServeEnd::Signal(signal) => Ok(ExitCode::from(u8::try_from(128 + signal).unwrap_or(1))),
    }
}

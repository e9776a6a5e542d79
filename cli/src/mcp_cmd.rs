//! `cordon mcp-server`: the executor's sessions over MCP on stdin/stdout. Logging goes to stderr
//! only; stdout carries nothing but the protocol.

use std::process::ExitCode;
use std::sync::Arc;

use cordon_exec_core::executor::ServeEnd;
use cordon_exec_core::mcp::serve_stdio;
use cordon_exec_core::platform::predicted_gaps;
use cordon_exec_core::session::{SessionDefaults, SessionManager};
use cordon_policies::SandboxMode;

use crate::flags::ExecutorArgs;
use crate::settings::{Bypass, Settings};

pub fn run(args: ExecutorArgs) -> anyhow::Result<ExitCode> {
    let settings =
        Settings::load(&args.sandbox, &args.policy, SandboxMode::WorkspaceWrite, Bypass::No)?;
    for gap in predicted_gaps(&settings.policy) {
        let required = if gap.required { " (required: sandboxed calls will fail)" } else { "" };
        eprintln!("cordon mcp-server: not enforced here: {}{required}", gap.what);
    }
    let orchestrator = settings.orchestrator()?;
    let defaults = SessionDefaults {
        cwd: settings.cwd.clone(),
        sandbox_policy: settings.policy.clone(),
        approval: settings.approval,
        env: settings.command_env().0,
    };
    // One thread: every session's parent-death signal is tied to the thread that spawned it.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let served = runtime.block_on(async move {
        let manager = Arc::new(SessionManager::new(Arc::new(orchestrator), defaults)?);
        let end = serve_stdio(Arc::clone(&manager)).await?;
        anyhow::Ok(end)
    });
    // Calls still in flight are abandoned (their sessions were terminated), and so are
    // blocking helpers stuck in a read of stdin or a write to a terminal.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match served? {
        ServeEnd::Eof | ServeEnd::Shutdown => Ok(ExitCode::SUCCESS),
        ServeEnd::Signal(signal) => Ok(ExitCode::from(u8::try_from(128 + signal).unwrap_or(1))),
    }
}

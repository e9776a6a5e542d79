//! The MCP tool definitions: `exec_command` and `write_stdin` exactly as the executor declares
//! them (name, description, input schema: one source, `executor::tools()`), plus
//! `list_sessions` and `close_session` (schemas derived the same way), each with annotations
//! that tell the truth about this server's sandbox policy.

use std::sync::Arc;

use cordon_policies::SandboxPolicy;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};

use crate::executor;
use crate::session::{CloseSessionArgs, NoArgs, input_schema};

/// The input schema of a tool taking `T`: the one the executor lists (see
/// [`input_schema`]).
pub(super) fn schema<T: schemars::JsonSchema>() -> Arc<JsonObject> {
    Arc::new(input_schema::<T>())
}

/// Every tool this server offers, with annotations for `policy`.
///
/// - `readOnlyHint`: commands cannot write (a `read-only` sandbox). An escalation to run
///   unsandboxed still needs the user's approval through elicitation, never the model's word.
/// - `destructiveHint`: commands can change or delete files (anything but `read-only`).
/// - `openWorldHint`: commands can reach the network (`network_access`, or no sandbox).
pub(super) fn definitions(policy: &SandboxPolicy) -> Vec<Tool> {
    let read_only = matches!(policy, SandboxPolicy::ReadOnly { .. });
    let network = policy.has_network_access();
    let runs_commands = ToolAnnotations::new()
        .read_only(read_only)
        .destructive(!read_only)
        .idempotent(false)
        .open_world(network);
    let mut tools: Vec<Tool> = executor::tools()
        .into_iter()
        .map(|tool| {
            let schema = match tool.input_schema {
                serde_json::Value::Object(object) => object,
                _ => JsonObject::new(),
            };
            Tool::new(tool.name, tool.description, Arc::new(schema))
                .with_annotations(runs_commands.clone())
        })
        .collect();
    tools.push(
        Tool::new(
            "list_sessions",
            "Lists the sessions still open (their id, command, terminal or pipes, exit code once \
             exited, age, whether a call is waiting on them).",
            schema::<NoArgs>(),
        )
        .with_annotations(
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        ),
    );
    tools.push(
        Tool::new(
            "close_session",
            "Ends a session: its whole process group gets SIGHUP, then SIGKILL.",
            schema::<CloseSessionArgs>(),
        )
        .with_annotations(
            ToolAnnotations::new()
                .read_only(false)
                .destructive(true)
                .idempotent(true)
                .open_world(false),
        ),
    );
    tools
}

#[cfg(test)]
mod tests {
    use super::*;
    use cordon_policies::{SandboxMode, WorkspaceWrite};
    use pretty_assertions::assert_eq;

    fn hints(policy: &SandboxPolicy, name: &str) -> (bool, bool, bool) {
        let tools = definitions(policy);
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let a = tool.annotations.clone().unwrap();
        (a.read_only_hint.unwrap(), a.destructive_hint.unwrap(), a.open_world_hint.unwrap())
    }

    #[test]
    fn annotations_follow_the_policy() {
        let read_only = SandboxPolicy::from_mode(SandboxMode::ReadOnly);
        assert_eq!(hints(&read_only, "exec_command"), (true, false, false));
        let workspace = SandboxPolicy::from_mode(SandboxMode::WorkspaceWrite);
        assert_eq!(hints(&workspace, "exec_command"), (false, true, false));
        let networked = SandboxPolicy::WorkspaceWrite(WorkspaceWrite {
            network_access: true,
            ..WorkspaceWrite::default()
        });
        assert_eq!(hints(&networked, "write_stdin"), (false, true, true));
        let none = SandboxPolicy::from_mode(SandboxMode::DangerFullAccess);
        assert_eq!(hints(&none, "exec_command"), (false, true, true));
        assert_eq!(hints(&none, "list_sessions"), (true, false, false));
    }

    #[test]
    fn schemas_are_the_executors() {
        let tools = definitions(&SandboxPolicy::from_mode(SandboxMode::WorkspaceWrite));
        for spec in executor::tools() {
            let tool = tools.iter().find(|t| t.name == spec.name).unwrap();
            assert_eq!(serde_json::Value::Object((*tool.input_schema).clone()), spec.input_schema);
            assert_eq!(tool.description.as_deref(), Some(spec.description.as_str()));
        }
    }
}

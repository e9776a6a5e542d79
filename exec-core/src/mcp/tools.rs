//! The MCP tool definitions: `exec_command` and `write_stdin` exactly as the executor declares
//! them (name, description, input schema: one source, `executor::tools()`), plus
//! `list_sessions` and `close_session`, each with annotations that tell the truth about this
//! server's sandbox policy.

use std::sync::Arc;

use cordon_policies::SandboxPolicy;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::executor;

/// The input schema of one of the executor's tools, or of `list_sessions`/`close_session`.
pub(super) fn input_schema(name: &str) -> Arc<JsonObject> {
    let schema = executor::tools()
        .into_iter()
        .find(|tool| tool.name == name)
        .map(|tool| tool.input_schema)
        .unwrap_or_else(|| extra_schema(name));
    match schema {
        Value::Object(object) => Arc::new(object),
        _ => Arc::new(JsonObject::new()),
    }
}

fn extra_schema(name: &str) -> Value {
    match name {
        "close_session" => json!({
            "type": "object",
            "properties": {"session_id": {"type": "integer", "minimum": 0}},
            "required": ["session_id"],
            "additionalProperties": false
        }),
        _ => json!({"type": "object", "properties": {}, "additionalProperties": false}),
    }
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
            Tool::new(tool.name, tool.description, input_schema(tool.name))
                .with_annotations(runs_commands.clone())
        })
        .collect();
    tools.push(
        Tool::new(
            "list_sessions",
            "Lists the sessions still open (their id, command, terminal or pipes, exit code once \
             exited, age, whether a call is waiting on them).",
            input_schema("list_sessions"),
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
            input_schema("close_session"),
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
            assert_eq!(Value::Object((*tool.input_schema).clone()), spec.input_schema);
            assert_eq!(tool.description.as_deref(), Some(spec.description));
        }
    }
}

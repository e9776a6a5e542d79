use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

/// The schemas clients have been given, field for field (and so what they may rely on):
/// types, `minimum`, the enum, `required`, `additionalProperties`. The descriptions of
/// `sandbox_permissions`, `write_stdin`'s `session_id` and `max_output_tokens`, and
/// `close_session`'s `session_id` were added with the derivation.
#[test]
fn the_derived_schemas_are_the_ones_clients_know() {
    assert_eq!(
        Value::Object(input_schema::<ExecCommandArgs>()),
        json!({
            "type": "object",
            "properties": {
                "cmd": {"type": "string", "description": "The shell command line."},
                "workdir": {"type": "string", "description": "Working directory (default: the executor's)."},
                "shell": {"type": "string", "description": "Shell binary (default /bin/bash)."},
                "login": {"type": "boolean", "description": "Run with -lc (default true) instead of -c."},
                "tty": {"type": "boolean", "description": "Run in a pseudo-terminal (default false)."},
                "yield_time_ms": {"type": "integer", "minimum": 0, "description": "How long to wait for output (default 10000, clamped to 250..30000)."},
                "max_output_tokens": {"type": "integer", "minimum": 0, "description": "Output budget in tokens of 4 bytes (default 10000)."},
                "sandbox_permissions": {"type": "string", "enum": ["use_default", "require_escalated"],
                    "description": "`require_escalated` asks to run outside the sandbox, which always needs an approval (default `use_default`)."},
                "justification": {"type": "string", "description": "Why escalation is needed."},
                "allowed_domains": {"type": "array", "items": {"type": "string"}, "description": "Narrow this command's network to these destinations (host, *.suffix, optional :port). Only narrows: the executor's own allow-list still applies, and an executor without network refuses it."},
                "limits": {"type": "array", "items": {"type": "string"}, "description": "Resource limits for this command and everything it starts, as `--limit` takes them: \"memory=512M\", \"pids=64\", \"cpu=30\" (CPU seconds), \"file-size=1G\", \"open-files=256\". Each only lowers the executor's own: a higher value than the executor's is ignored."},
                "writes": {"type": "string", "enum": ["direct", "transaction"], "description": "\"transaction\": the command writes a layer over the workspace, and its changes reach the workspace when it has ended, through cordon's write gate, which holds back what would run code outside the sandbox later (named in the output). Not with tty. Default \"direct\": the command writes the workspace as it runs."}
            },
            "required": ["cmd"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        Value::Object(input_schema::<WriteStdinArgs>()),
        json!({
            "type": "object",
            "properties": {
                "session_id": {"type": "integer", "minimum": 0, "description": "The session id an earlier result reported."},
                "chars": {"type": "string", "description": "Characters to type (default empty)."},
                "yield_time_ms": {"type": "integer", "minimum": 0, "description": "How long to wait for output (default 250)."},
                "max_output_tokens": {"type": "integer", "minimum": 0, "description": "Output budget in tokens of 4 bytes (default 10000)."}
            },
            "required": ["session_id"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        Value::Object(input_schema::<CloseSessionArgs>()),
        json!({
            "type": "object",
            "properties": {"session_id": {"type": "integer", "minimum": 0, "description": "The session to end."}},
            "required": ["session_id"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        Value::Object(input_schema::<NoArgs>()),
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
}

#[test]
fn what_the_schema_allows_the_arguments_read() {
    let args: ExecCommandArgs = serde_json::from_value(json!({
        "cmd": "true", "sandbox_permissions": "require_escalated", "allowed_domains": ["a.b"]}))
    .unwrap();
    assert_eq!(args.sandbox_permissions, Some(SandboxPermissions::RequireEscalated));
    assert!(serde_json::from_value::<ExecCommandArgs>(json!({"cmd": "true", "x": 1})).is_err());
    assert!(serde_json::from_value::<NoArgs>(json!({"x": 1})).is_err());
}

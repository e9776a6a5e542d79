//! The arguments of the session tools, as harnesses and MCP clients send them. Their JSON
//! Schemas are derived from these structs ([`input_schema`]): a field's doc comment is its
//! description there, so each one says what a model needs to know, defaults included.

use std::path::PathBuf;

use schemars::generate::SchemaSettings;
use schemars::transform::{RecursiveTransform, Transform};
use schemars::{JsonSchema, Schema};
use serde::Deserialize;
use serde_json::{Map, Value};

/// `exec_command` arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecCommandArgs {
    /// The shell command line.
    pub cmd: String,
    /// Working directory (default: the executor's).
    pub workdir: Option<PathBuf>,
    /// Shell binary (default /bin/bash).
    pub shell: Option<String>,
    /// Run with -lc (default true) instead of -c.
    pub login: Option<bool>,
    /// Run in a pseudo-terminal (default false).
    pub tty: Option<bool>,
    /// How long to wait for output (default 10000, clamped to 250..30000).
    pub yield_time_ms: Option<u64>,
    /// Output budget in tokens of 4 bytes (default 10000).
    pub max_output_tokens: Option<usize>,
    /// `require_escalated` asks to run outside the sandbox, which always needs an approval
    /// (default `use_default`).
    pub sandbox_permissions: Option<SandboxPermissions>,
    /// Why escalation is needed.
    pub justification: Option<String>,
    /// Narrow this command's network to these destinations (host, *.suffix, optional :port).
    /// Only narrows: the executor's own allow-list still applies, and an executor without
    /// network refuses it.
    pub allowed_domains: Option<Vec<String>>,
    /// Resource limits for this command and everything it starts, as `--limit` takes them:
    /// "memory=512M", "pids=64", "cpu=30" (CPU seconds), "file-size=1G", "open-files=256".
    /// Each only lowers the executor's own: a higher value than the executor's is ignored.
    pub limits: Option<Vec<String>>,
    /// "transaction": the command writes a layer over the workspace, and its changes reach the
    /// workspace when it has ended, through cordon's write gate, which holds back what would
    /// run code outside the sandbox later (named in the output). Not with tty. Default
    /// "direct": the command writes the workspace as it runs.
    pub writes: Option<CallWrites>,
}

/// `writes`: how a call's command writes its workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallWrites {
    Direct,
    Transaction,
}

/// A call's `limits`, checked as `--limit` checks them.
pub fn call_limits(
    limits: Option<&[String]>,
) -> Result<cordon_policies::Limits, cordon_policies::LimitError> {
    let mut parsed = cordon_policies::Limits::default();
    for assignment in limits.unwrap_or_default() {
        let (key, value) = cordon_policies::Limits::parse_assignment(assignment)?;
        parsed.set(key, Some(value));
    }
    Ok(parsed)
}

/// `sandbox_permissions`: the executor's sandbox, or a request to run without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxPermissions {
    UseDefault,
    RequireEscalated,
}

/// `write_stdin` arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteStdinArgs {
    /// The session id an earlier result reported.
    pub session_id: u32,
    /// Characters to type (default empty).
    pub chars: Option<String>,
    /// How long to wait for output (default 250).
    pub yield_time_ms: Option<u64>,
    /// Output budget in tokens of 4 bytes (default 10000).
    pub max_output_tokens: Option<usize>,
}

/// `close_session` arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseSessionArgs {
    /// The session to end.
    pub session_id: u32,
}

/// `list_sessions` takes nothing.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// The JSON Schema of a tool's arguments, in the plain shape tool callers handle best: one
/// object with every definition inlined (no `$ref`) and a `properties` map even when empty, an
/// optional field typed as its value (absent, not `null`, is how it is left out), each
/// description on one line (doc comments wrap), and no `$schema`, `title`, type-level
/// description or integer `format` (a width like `uint32` is not a JSON Schema format;
/// `minimum: 0` says what matters).
pub fn input_schema<T: JsonSchema>() -> Map<String, Value> {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let mut schema = settings.into_generator().into_root_schema_for::<T>();
    RecursiveTransform(|schema: &mut Schema| {
        schema.remove("format");
        drop_null(schema);
        if let Some(Value::String(description)) = schema.get_mut("description") {
            *description = description.replace('\n', " ");
        }
    })
    .transform(&mut schema);
    schema.remove("title");
    schema.remove("description");
    if schema.get("properties").is_none() {
        schema.insert("properties".to_owned(), Value::Object(Map::new()));
    }
    match schema.to_value() {
        Value::Object(object) => object,
        // A derived struct's schema is always an object.
        _ => Map::new(),
    }
}

/// `T` for an `Option<T>`: `type: [T, "null"]` becomes `type: T`, `null` leaves an `enum`,
/// and `anyOf: [S, {type: null}]` becomes `S` (keeping what the field itself says, such as
/// its description).
fn drop_null(schema: &mut Schema) {
    let null = Value::from("null");
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| *t != null);
        if let [only] = types.as_slice() {
            let only = only.clone();
            schema.insert("type".to_owned(), only);
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    let Some(Value::Array(any_of)) = schema.get_mut("anyOf") else { return };
    any_of.retain(|s| s.get("type") != Some(&null));
    let [Value::Object(only)] = any_of.as_slice() else { return };
    let only = only.clone();
    schema.remove("anyOf");
    for (key, value) in only {
        if schema.get(&key).is_none() {
            schema.insert(key, value);
        }
    }
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;

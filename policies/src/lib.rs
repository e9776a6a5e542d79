//! Policies for cordon: pure data and decisions.
//!
//! - [`SandboxPolicy`]: what a sandboxed command may do, in the JSON shape that OpenAI Codex
//!   passes to its Linux helper (`{"type": "workspace-write", "writable_roots": [...]}`), plus two
//!   optional cordon fields (`protected_paths`, `hidden_paths`) that old Codex JSON may omit.
//! - [`SandboxMode`]: the CLI spelling (`read-only`, `workspace-write`, `danger-full-access`).
//!
//! This crate does no I/O beyond what a caller hands it (canonicalisation takes the resolver as a
//! parameter), starts no processes and contains no `unsafe`.
#![forbid(unsafe_code)]

mod paths;
mod sandbox_policy;

pub use paths::{DEFAULT_HIDDEN_PATHS, DEFAULT_PROTECTED_PATHS, expand_home};
pub use sandbox_policy::{
    PolicyEnv, PolicyError, ResolvedPolicy, SandboxMode, SandboxPolicy, WorkspaceWrite,
};

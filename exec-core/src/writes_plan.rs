//! How a run will write its roots, decided before its launch: through a write layer where the
//! choice and this machine allow, else directly — with the reason when the choice was `auto`.

use crate::launch::{HelperSettings, SandboxKind};
use crate::request::ExecRequest;

/// How a sandboxed run will write, decided before its launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlannedWrites {
    Transaction,
    Direct,
    /// Direct, where the choice was `auto`: why no write layer here.
    DirectBecause(NoWriteLayerHere),
}

/// Why a run gets no write layer here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoWriteLayerHere {
    #[error("transactional writes keep their state in CORDON_HOME, and none is set")]
    NoCordonHome,
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Here(#[from] cordon_sandbox_linux::layer_availability::NoWriteLayer),
    #[error("this platform has no overlay file system")]
    Platform,
}

/// How a run of `request` writes under `helper`'s choice: no write layer for a policy without
/// writable roots or without the Linux sandbox; `auto` falls back to direct writes where the
/// kernel, the file system or the mount view cannot give one.
pub fn planned_writes(
    helper: &HelperSettings,
    request: &ExecRequest,
    kind: SandboxKind,
) -> PlannedWrites {
    let layered = kind == SandboxKind::Linux
        && matches!(request.sandbox.policy, cordon_policies::SandboxPolicy::WorkspaceWrite(_));
    match helper.writes {
        crate::transaction::WriteChoice::Direct => PlannedWrites::Direct,
        _ if !layered => PlannedWrites::Direct,
        crate::transaction::WriteChoice::Transaction => PlannedWrites::Transaction,
        crate::transaction::WriteChoice::Auto => match layer_availability(helper, request) {
            Ok(()) => PlannedWrites::Transaction,
            Err(why) => PlannedWrites::DirectBecause(why),
        },
    }
}

#[cfg(target_os = "linux")]
fn layer_availability(
    helper: &HelperSettings,
    request: &ExecRequest,
) -> Result<(), NoWriteLayerHere> {
    let home = helper.user_view.cordon_home.as_deref().ok_or(NoWriteLayerHere::NoCordonHome)?;
    let runs = crate::transaction::runs_dir(home);
    let roots = request.writable_roots(&helper.user_view);
    let mount_view_off =
        request.sandbox.mount_view == cordon_policies::MountViewRequirement::Disabled;
    Ok(cordon_sandbox_linux::layer_availability::availability(&runs, &roots, mount_view_off)?)
}

#[cfg(not(target_os = "linux"))]
fn layer_availability(
    _helper: &HelperSettings,
    _request: &ExecRequest,
) -> Result<(), NoWriteLayerHere> {
    Err(NoWriteLayerHere::Platform)
}

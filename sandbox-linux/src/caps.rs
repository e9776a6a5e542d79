//! Dropping every capability and locking the securebits, so that a root caller's command runs
//! as uid 0 with no capabilities and cannot regain them through `execve`.

use crate::error::HelperError;
use crate::sys;

// <linux/securebits.h>
const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;

/// uid 0 gets no capabilities from `execve` (NOROOT), setuid changes do not touch them
/// (NO_SETUID_FIXUP), no ambient raising, keep-caps stays off; all locked.
const LOCKED_SECUREBITS: libc::c_ulong = SECBIT_NOROOT
    | SECBIT_NOROOT_LOCKED
    | SECBIT_NO_SETUID_FIXUP
    | SECBIT_NO_SETUID_FIXUP_LOCKED
    | SECBIT_KEEP_CAPS_LOCKED
    | SECBIT_NO_CAP_AMBIENT_RAISE
    | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

/// What the drop achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapabilityDrop {
    /// Every set is empty and the securebits are locked.
    All,
    /// Effective, permitted, inheritable and ambient are empty; the bounding set and securebits
    /// could not be changed (no CAP_SETPCAP: an unprivileged caller without a user namespace).
    /// `no_new_privs` still keeps an `execve` from gaining anything.
    BoundingSetKept,
}

/// Drops every capability of the calling thread.
pub fn drop_all() -> Result<CapabilityDrop, HelperError> {
    let err = |what| move |source| HelperError::Capabilities { what, source };
    // Both need CAP_SETPCAP, so they come before the sets are emptied.
    let privileged =
        sys::set_securebits(LOCKED_SECUREBITS).and_then(|()| sys::drop_bounding_set()).is_ok();
    sys::clear_ambient_set().map_err(err("clearing the ambient set"))?;
    sys::clear_capability_sets().map_err(err("clearing the capability sets"))?;
    Ok(if privileged { CapabilityDrop::All } else { CapabilityDrop::BoundingSetKept })
}

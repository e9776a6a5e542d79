//! End-to-end suite: drives the real `cordon` binary against the running kernel and checks
//! every effect from outside the sandbox (DESIGN §11). One test binary; modules in `suite/`.
#![cfg(any(target_os = "linux", target_os = "macos"))]
#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

mod suite;

//! End-to-end suite: drives the real `cordon` binary against the running kernel and checks
//! every effect from outside the sandbox: the file on disk, the listener that got no connection,
//! `/proc`. Kernel features are probed; a skip prints its reason and fails under
//! `CORDON_TEST_REQUIRE_SANDBOX=1`. One test binary; modules in `suite/`.
#![cfg(any(target_os = "linux", target_os = "macos"))]
#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

mod suite;

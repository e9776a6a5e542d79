//! The integration tests of `cordon-policies`, in one binary to keep link time down.

#![expect(clippy::expect_used, reason = "test helpers fail the test by panicking")]

mod suite;

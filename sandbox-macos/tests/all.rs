//! End-to-end tests: generated profiles under the real `/usr/bin/sandbox-exec`, effects checked
//! from outside (files on disk, exit codes, a TCP listener). They run on macOS only; elsewhere
//! the suite is compiled (so it stays buildable) but registers no tests.

#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

mod suite;

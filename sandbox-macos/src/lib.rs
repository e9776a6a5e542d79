//! cordon-sandbox-macos: see the crate README.

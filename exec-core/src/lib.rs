//! cordon-exec-core: see the crate README.

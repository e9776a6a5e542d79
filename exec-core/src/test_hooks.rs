//! Hooks for cordon's own end-to-end suite, compiled only with the `test-hooks` feature. The
//! suite's build turns it on (cli's dev-dependencies ask for it), a release build does not: no
//! environment variable then changes what cordon does, and none of their names is in the
//! binary.

use std::net::SocketAddr;

/// `CORDON_TEST_RESOLVE="name=127.0.0.1:PORT,other=[::1]:PORT"`: the network proxy answers
/// these names with these addresses instead of asking DNS, and lets exactly these names reach a
/// loopback address, so the suite never leaves the machine. Without the feature: none.
#[cfg(feature = "test-hooks")]
pub fn proxy_resolve() -> Result<Vec<(String, SocketAddr)>, TestHookError> {
    let Some(value) = std::env::var_os("CORDON_TEST_RESOLVE") else { return Ok(Vec::new()) };
    let value = value.into_string().map_err(|_| TestHookError::NotUtf8)?;
    value
        .split(',')
        .filter(|item| !item.trim().is_empty())
        .map(|item| {
            let bad = || TestHookError::NotNameAddress { item: item.to_owned() };
            let (name, address) = item.split_once('=').ok_or_else(bad)?;
            let address = address.trim().parse().map_err(|_| bad())?;
            Ok((name.trim().to_owned(), address))
        })
        .collect()
}

/// Without the `test-hooks` feature there is no resolver override.
#[cfg(not(feature = "test-hooks"))]
pub fn proxy_resolve() -> Result<Vec<(String, SocketAddr)>, TestHookError> {
    Ok(Vec::new())
}

/// A test hook's setting that cannot be used.
#[cfg(feature = "test-hooks")]
#[derive(Debug, thiserror::Error)]
pub enum TestHookError {
    #[error("CORDON_TEST_RESOLVE is not valid UTF-8")]
    NotUtf8,
    #[error("CORDON_TEST_RESOLVE: {item:?} is not name=ip:port")]
    NotNameAddress { item: String },
}

/// Without the `test-hooks` feature no hook is read, so none can be wrong.
#[cfg(not(feature = "test-hooks"))]
#[derive(Debug, thiserror::Error)]
pub enum TestHookError {}

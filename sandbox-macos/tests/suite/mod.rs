// Off macOS the test functions are compiled but not registered as tests.
#![cfg_attr(not(target_os = "macos"), allow(dead_code, unused_imports))]

mod seatbelt;
mod util;

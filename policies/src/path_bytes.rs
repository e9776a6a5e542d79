//! A path in JSON as the bytes of its name (`#[serde(with = "cordon_policies::path_bytes")]`):
//! any name a command made round-trips, text or not.

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

pub fn serialize<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(path.as_os_str().as_bytes())
}

pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    let bytes: Vec<u8> = serde::Deserialize::deserialize(d)?;
    Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

//! Paths and words a command chose, in a JSON report: as text, a byte that is not UTF-8
//! becoming U+FFFD, so that a name made to be unprintable cannot make the whole report fail.

use std::path::PathBuf;

/// A path, as text.
pub(crate) fn lossy_path<S: serde::Serializer>(
    path: &std::path::Path,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
}

/// A path or `null`, as text.
pub(crate) fn lossy_optional_path<S: serde::Serializer>(
    path: &Option<PathBuf>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match path {
        Some(path) => lossy_path(path, serializer),
        None => serializer.serialize_none(),
    }
}

/// A list of words or paths in a JSON report, each as text (a byte that is not UTF-8 becomes
/// U+FFFD).
pub(crate) fn lossy_texts<S: serde::Serializer>(
    items: &[impl AsRef<std::ffi::OsStr>],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(items.iter().map(|item| item.as_ref().to_string_lossy()))
}

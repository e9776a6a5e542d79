//! The directory listing behind sealing `$HOME` (`cordon_policies::HomeSeal`).

use std::path::{Path, PathBuf};

use cordon_policies::EntryKind;

/// More entries than this in one directory to grant one by one: the directory is granted
/// nothing (a sandbox less writable, never more), rather than thousands of rules and mounts.
const MAX_ENTRIES: usize = 10_000;

/// A directory's entries and their kinds, without following links; `None` when it cannot be
/// read or holds more than [`MAX_ENTRIES`].
pub(crate) fn list_entries(dir: &Path) -> Option<Vec<(PathBuf, EntryKind)>> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let kind = match entry.file_type() {
            Ok(kind) if kind.is_dir() => EntryKind::Directory,
            Ok(kind) if kind.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        };
        entries.push((entry.path(), kind));
        if entries.len() > MAX_ENTRIES {
            crate::messages::warning(format_args!(
                "{} has more than {MAX_ENTRIES} entries: none of them is writable",
                dir.display()
            ));
            return None;
        }
    }
    Some(entries)
}

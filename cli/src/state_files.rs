//! Reading the files cordon obeys: `$CORDON_HOME/config.toml`,
//! `$CORDON_HOME/rules.toml` and `<workspace>/.cordon/rules.toml`.
//!
//! A sandboxed command may have planted any of them (the workspace file always, cordon's home
//! if it ever was writable), so each is opened without following a final symlink and without
//! blocking (`O_NOFOLLOW | O_NONBLOCK`: a FIFO cannot hang cordon, a symlink to `/dev/zero`
//! cannot grow it to gigabytes), must be a regular file of at most [`MAX_BYTES`]
//! ([`cordon_policies::read_start_file`], the reader the sandbox helper uses for git's pointer
//! files too), and must be UTF-8. Anything else is one error line naming the file (and the
//! line, where there is one). Files cordon writes where a sandboxed command may have
//! planted a link ([`write_replacing`]) are written beside and renamed over the name.

use std::path::Path;

use anyhow::bail;
use cordon_policies::{StartFileError, read_start_file};

/// Larger config or rules files are refused: real ones are a few kilobytes.
pub const MAX_BYTES: u64 = 1024 * 1024;

/// The file's text, or `None` when it does not exist.
pub fn read(path: &Path) -> anyhow::Result<Option<String>> {
    let bytes = match read_start_file(path, MAX_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        // A directory on the way that this user may not search (another user's HOME): there
        // is no file this user could have, or could have been planted for it.
        Err(StartFileError::Open(error))
            if error.kind() == std::io::ErrorKind::PermissionDenied
                && std::fs::symlink_metadata(path)
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied) =>
        {
            return Ok(None);
        }
        Err(StartFileError::SymbolicLink) => {
            bail!(
                "{}: is a symbolic link; cordon does not follow links to its own files",
                path.display()
            )
        }
        Err(error) => bail!("{}: {error}", path.display()),
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Some(text)),
        Err(error) => {
            let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
            bail!("{}: line {line}: not valid UTF-8", path.display())
        }
    }
}

/// Writes `text` as `path` through a new file (`mode`, never following a link) renamed over
/// it: a link planted at the name is replaced, never followed.
pub fn write_replacing(path: &Path, text: &str, mode: u32) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let partial = path.with_file_name(format!(".{name}.cordon-{}-{stamp}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&partial)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .and_then(|()| std::fs::rename(&partial, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_and_missing_ones_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        assert_eq!(read(&path).unwrap(), None);
        std::fs::write(&path, "a = 1\n").unwrap();
        assert_eq!(read(&path).unwrap().as_deref(), Some("a = 1\n"));
    }

    #[test]
    fn links_fifos_directories_devices_huge_and_binary_files_are_one_line_errors() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let fifo = dir.path().join("fifo.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let huge = dir.path().join("huge.toml");
        std::fs::File::create(&huge).unwrap().set_len(MAX_BYTES + 1).unwrap();
        let binary = dir.path().join("binary.toml");
        std::fs::write(&binary, b"a = 1\nb = \"\xff\"\n").unwrap();
        for (path, says) in [
            (link.as_path(), "symbolic link"),
            (fifo.as_path(), "a FIFO"),
            (dir.path(), "a directory"),
            (Path::new("/dev/null"), "a device"),
            (huge.as_path(), "more than"),
            (binary.as_path(), "line 2: not valid UTF-8"),
        ] {
            let error = format!("{:#}", read(path).unwrap_err());
            assert!(error.contains(says), "{error}");
            assert!(error.starts_with(&path.display().to_string()), "{error}");
            assert!(!error.contains('\n'), "{error}");
        }
    }
}

//! What the mount view needs to know of the host's mount table: the mounts under `/proc`, which
//! a fresh proc must carry again. Listed by mount id where the kernel can (`listmount`,
//! `statmount`: Linux 6.8), so the cost does not grow with the mounts elsewhere; from
//! `/proc/self/mountinfo`, the whole table, before that.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::HelperError;
use crate::sys;

/// The mount points strictly under `/proc` in this process's mount namespace.
pub(crate) fn mounts_under_proc() -> Result<Vec<PathBuf>, HelperError> {
    let proc_root = Path::new("/proc");
    if let Ok(points) = listed_below(proc_root) {
        return Ok(points);
    }
    Ok(parse_mountinfo(&read_mountinfo()?)
        .into_iter()
        .filter(|point| point.starts_with(proc_root) && point != proc_root)
        .collect())
}

/// The mount points beneath the mount on `dir`, when `dir` is a mount point and the kernel
/// lists mounts by id. Whether the kernel lists children or all descendants, each mount is
/// asked for its own once.
fn listed_below(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let top = unique_mount_id(dir)?;
    if sys::statmount_point(top)? != dir {
        // `dir` is not a mount point: the mount it lies on holds the rest of the table too.
        return Err(std::io::Error::from_raw_os_error(libc::ENOTDIR));
    }
    let mut seen = HashSet::from([top]);
    let mut queue = vec![top];
    let mut points = Vec::new();
    while let Some(id) = queue.pop() {
        for child in sys::listmount(id)? {
            if seen.insert(child) {
                points.push(sys::statmount_point(child)?);
                queue.push(child);
            }
        }
    }
    Ok(points)
}

/// The unique id (`STATX_MNT_ID_UNIQUE`, Linux 6.8) of the mount `path` lies on.
fn unique_mount_id(path: &Path) -> std::io::Result<u64> {
    use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
    const STATX_MNT_ID_UNIQUE: u32 = 0x4000;
    let wanted = StatxFlags::from_bits_retain(STATX_MNT_ID_UNIQUE);
    let stat = statx(CWD, path, AtFlags::SYMLINK_NOFOLLOW, wanted)?;
    if stat.stx_mask & STATX_MNT_ID_UNIQUE == 0 {
        return Err(std::io::Error::from_raw_os_error(libc::ENOSYS));
    }
    Ok(stat.stx_mnt_id)
}

/// The most of `/proc/self/mountinfo` that is read: far more than a host with tens of thousands
/// of mounts has, and a bound on what a mount table grown on purpose can cost.
const MAX_MOUNTINFO_BYTES: u64 = 64 * 1024 * 1024;

/// Reads `/proc/self/mountinfo`, non-blocking and to at most [`MAX_MOUNTINFO_BYTES`]. Empty when
/// it cannot be opened or read (then no mount counts as a proc cover); a table past the cap is
/// an error, since the covers of a container's `/proc` masks come from it.
fn read_mountinfo() -> Result<String, HelperError> {
    let path = Path::new("/proc/self/mountinfo");
    match cordon_policies::read_kernel_file(path, MAX_MOUNTINFO_BYTES) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(error @ cordon_policies::StartFileError::TooLarge { .. }) => {
            Err(HelperError::MountView {
                what: format!("reading {}", path.display()),
                source: std::io::Error::new(std::io::ErrorKind::FileTooLarge, error),
            })
        }
        Err(_) => Ok(String::new()),
    }
}

/// The mount points of `/proc/self/mountinfo` (field 5; octal escapes such as `\040` for a
/// space are decoded).
pub(crate) fn parse_mountinfo(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|point| PathBuf::from(OsStr::from_bytes(&unescape(point))))
        .collect()
}

/// Every mount of `/proc/self/mountinfo` with its file system type (the field after ` - `).
pub(crate) fn mounts_with_types() -> Result<Vec<(PathBuf, String)>, HelperError> {
    Ok(parse_mounts_with_types(&read_mountinfo()?))
}

fn parse_mounts_with_types(text: &str) -> Vec<(PathBuf, String)> {
    text.lines()
        .filter_map(|line| {
            let point = line.split(' ').nth(4)?;
            let (_, tail) = line.split_once(" - ")?;
            let kind = tail.split(' ').next()?;
            Some((PathBuf::from(OsStr::from_bytes(&unescape(point))), kind.to_owned()))
        })
        .collect()
}

fn unescape(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b))
        {
            let value =
                bytes[i + 1..i + 4].iter().fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            out.push(u8::try_from(value).unwrap_or(b'?'));
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn mountinfo_lines_give_mount_points_and_types() {
        let text = "22 1 0:21 / /proc rw shared:12 - proc proc rw\n\
                    30 1 8:1 / /mnt/my\\040disk rw - ext4 /dev/sda1 rw\n";
        assert_eq!(
            parse_mounts_with_types(text),
            vec![
                (PathBuf::from("/proc"), "proc".to_owned()),
                (PathBuf::from("/mnt/my disk"), "ext4".to_owned())
            ]
        );
    }

    #[test]
    fn mountinfo_lines_give_mount_points() {
        let text = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                    30 22 0:5 / /mnt/my\\040disk ro,nosuid - vfat /dev/sdb1 ro\n";
        assert_eq!(parse_mountinfo(text), vec![PathBuf::from("/"), PathBuf::from("/mnt/my disk")]);
    }
}

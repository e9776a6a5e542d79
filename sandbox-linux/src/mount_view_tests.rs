use super::*;
use pretty_assertions::assert_eq;

#[test]
fn mountinfo_lines_give_mount_points_and_read_only_flags() {
    let text = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                30 22 0:5 / /mnt/my\\040disk ro,nosuid - vfat /dev/sdb1 ro\n";
    assert_eq!(
        parse_mountinfo(text),
        vec![
            MountInfo { mount_point: PathBuf::from("/"), read_only: false },
            MountInfo { mount_point: PathBuf::from("/mnt/my disk"), read_only: true },
        ]
    );
}

#[test]
fn only_writable_submounts_strictly_inside_roots_are_reopened() {
    let mounts = vec![
        MountInfo { mount_point: PathBuf::from("/"), read_only: false },
        MountInfo { mount_point: PathBuf::from("/w"), read_only: false },
        MountInfo { mount_point: PathBuf::from("/w/cache"), read_only: false },
        MountInfo { mount_point: PathBuf::from("/w/ro"), read_only: true },
        MountInfo { mount_point: PathBuf::from("/wx"), read_only: false },
    ];
    let policy = ResolvedPolicy {
        network_domains: None,
        writable_roots: vec![PathBuf::from("/w")],
        network_access: false,
        protected_paths: Vec::new(),
        hidden_paths: Vec::new(),
        allowed_sockets: Vec::new(),
    };
    assert_eq!(
        plan(
            &policy,
            &mounts,
            &Surveyed { listings: &crate::listings::Listings::new(), walked: None, devices: &[] }
        )
        .writable_submounts,
        vec![PathBuf::from("/w/cache")]
    );
    let nested = ResolvedPolicy {
        writable_roots: vec![
            PathBuf::from("/tmp"),
            PathBuf::from("/tmp/work"),
            PathBuf::from("/w"),
        ],
        ..policy
    };
    assert_eq!(
        plan(
            &nested,
            &mounts,
            &Surveyed { listings: &crate::listings::Listings::new(), walked: None, devices: &[] }
        )
        .writable_roots,
        vec![PathBuf::from("/tmp"), PathBuf::from("/w")]
    );
}

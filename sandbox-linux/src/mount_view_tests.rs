use super::*;
use pretty_assertions::assert_eq;

#[test]
fn only_the_outermost_roots_are_bound() {
    let policy = ResolvedPolicy {
        network_domains: None,
        writable_roots: vec![PathBuf::from("/w")],
        network_access: false,
        protected_paths: Vec::new(),
        hidden_paths: Vec::new(),
        allowed_sockets: Vec::new(),
    };
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
            &[],
            &Surveyed {
                listings: &crate::listings::Listings::new(),
                walked: None,
                devices: &[],
                own_dev: false,
                layers: &[],
            }
        )
        .writable_roots,
        vec![PathBuf::from("/tmp"), PathBuf::from("/w")]
    );
}

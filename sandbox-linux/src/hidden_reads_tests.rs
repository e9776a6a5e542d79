use super::*;
use pretty_assertions::assert_eq;
use std::collections::BTreeMap;

/// A file system as a map from path to what is there; links lead to absolute paths.
#[derive(Default)]
struct Fake {
    entries: BTreeMap<PathBuf, Node>,
}

#[derive(Clone)]
enum Node {
    Dir,
    File,
    Link(PathBuf),
    /// A directory that cannot be listed.
    Closed,
}

impl Fake {
    fn new(nodes: &[(&str, Node)]) -> Self {
        let mut fake = Fake::default();
        fake.entries.insert(PathBuf::from("/"), Node::Dir);
        for (path, node) in nodes {
            fake.entries.insert(PathBuf::from(path), node.clone());
        }
        fake
    }

    /// `path` with its links resolved, component by component.
    fn resolve(&self, path: &Path, depth: usize) -> Option<PathBuf> {
        if depth > 8 {
            return None;
        }
        let mut real = PathBuf::from("/");
        for component in path.components().skip(1) {
            real.push(component);
            match self.entries.get(&real)? {
                Node::Link(target) => real = self.resolve(target, depth + 1)?,
                Node::Dir | Node::File | Node::Closed => {}
            }
        }
        Some(real)
    }
}

impl FileSystem for Fake {
    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        self.resolve(path, 0)
    }

    fn kind(&self, path: &Path) -> PathKind {
        let Some(dir) = path.parent().and_then(|p| self.canonical(p)) else {
            return PathKind::Missing;
        };
        match path.file_name().and_then(|name| self.entries.get(&dir.join(name))) {
            None => PathKind::Missing,
            Some(Node::Link(_)) => PathKind::Link,
            Some(_) => PathKind::Other,
        }
    }

    fn read_link(&self, path: &Path) -> Option<PathBuf> {
        let dir = path.parent().and_then(|p| self.canonical(p))?;
        match path.file_name().and_then(|name| self.entries.get(&dir.join(name))) {
            Some(Node::Link(target)) => Some(target.clone()),
            _ => None,
        }
    }

    fn list(&self, dir: &Path, limit: usize) -> Option<Vec<Entry>> {
        if matches!(self.entries.get(dir), Some(Node::Closed)) {
            return None;
        }
        let entries: Vec<Entry> = self
            .entries
            .iter()
            .filter(|(path, _)| path.parent() == Some(dir) && path.as_path() != dir)
            .map(|(path, node)| (path.clone(), matches!(node, Node::Link(_))))
            .take(limit + 1)
            .collect();
        Some(entries)
    }
}

fn paths(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).collect()
}

fn home() -> Fake {
    use Node::*;
    Fake::new(&[
        ("/etc", Dir),
        ("/etc/passwd", File),
        ("/etc/shadow", File),
        ("/home", Dir),
        ("/home/u", Dir),
        ("/home/u/.bashrc", File),
        ("/home/u/.git-credentials", File),
        ("/home/u/.config", Dir),
        ("/home/u/.config/gh", Dir),
        ("/home/u/.config/git", Dir),
        ("/home/u/project", Dir),
        ("/home/u/link-to-config", Link("/home/u/.config".into())),
        ("/tmp", Dir),
        ("/usr", Dir),
    ])
}

#[test]
fn the_way_to_each_hidden_path_is_listed_and_only_its_other_entries_are_granted() {
    let hidden = paths(&[
        "/home/u/.git-credentials",
        "/home/u/.config/gh",
        "/home/u/.netrc",
        "/etc/shadow",
        "/home/u/.aws/credentials",
    ]);
    let plan = plan(&hidden, &[], &[], &home());
    assert_eq!(plan.ancestors, paths(&["/", "/etc", "/home", "/home/u", "/home/u/.config"]));
    // No link (it would grant its target), no hidden place, no ancestor (each is planned
    // itself); a missing hidden path (`.netrc`, `.aws/…`) has nothing to leave out but makes
    // its directory one of the way, so that it stays unreadable when it appears.
    assert_eq!(
        plan.siblings,
        paths(&[
            "/tmp",
            "/usr",
            "/etc/passwd",
            "/home/u/.bashrc",
            "/home/u/project",
            "/home/u/.config/git",
        ])
    );
    assert_eq!(
        plan.unreadable,
        paths(&[
            "/etc/shadow",
            "/home/u/.aws",
            "/home/u/.config/gh",
            "/home/u/.git-credentials",
            "/home/u/.netrc",
        ])
    );
    assert!(plan.mount_view_only.is_empty());
}

#[test]
fn links_are_resolved_on_the_way_and_a_hidden_link_is_hidden_where_it_leads_too() {
    use Node::*;
    let fs = Fake::new(&[
        ("/home", Dir),
        ("/home/u", Dir),
        ("/home/u/dotfiles", Dir),
        ("/home/u/dotfiles/docker.json", File),
        ("/home/u/dotfiles/README", File),
        ("/home/u/dotfiles/config", Dir),
        ("/home/u/dotfiles/config/gh", Dir),
        ("/home/u/.config", Link("/home/u/dotfiles/config".into())),
        ("/home/u/.docker", Dir),
        ("/home/u/.docker/config.json", Link("/home/u/dotfiles/docker.json".into())),
        ("/home/u/.docker/contexts", Dir),
    ]);
    let hidden = paths(&["/home/u/.config/gh", "/home/u/.docker/config.json"]);
    let plan = plan(&hidden, &[], &[], &fs);
    assert_eq!(
        plan.unreadable,
        paths(&[
            "/home/u/.docker/config.json",
            "/home/u/dotfiles/config/gh",
            "/home/u/dotfiles/docker.json",
        ])
    );
    assert_eq!(
        plan.ancestors,
        paths(&[
            "/",
            "/home",
            "/home/u",
            "/home/u/.docker",
            "/home/u/dotfiles",
            "/home/u/dotfiles/config"
        ])
    );
    assert_eq!(plan.siblings, paths(&["/home/u/.docker/contexts", "/home/u/dotfiles/README"]));
}

#[test]
fn a_hidden_path_inside_a_hidden_directory_grants_nothing_in_it() {
    use Node::*;
    let fs = Fake::new(&[
        ("/run", Dir),
        ("/run/lock", Dir),
        ("/run/user", Dir),
        ("/run/user/1000", Dir),
        ("/run/user/1000/bus", File),
        ("/run/user/1000/pulse", Dir),
    ]);
    let both = plan(&paths(&["/run/user/1000", "/run/user/1000/bus"]), &[], &[], &fs);
    assert_eq!(both.ancestors, paths(&["/", "/run", "/run/user"]));
    assert_eq!(both.siblings, paths(&["/run/lock"]));
    // Un-hiding the directory keeps what is hidden inside it hidden.
    let inner = plan(&paths(&["/run/user/1000/bus"]), &[], &[], &fs);
    assert_eq!(inner.ancestors, paths(&["/", "/run", "/run/user", "/run/user/1000"]));
    assert_eq!(inner.siblings, paths(&["/run/lock", "/run/user/1000/pulse"]));
}

#[test]
fn inside_a_writable_root_the_mount_view_alone_hides() {
    use Node::*;
    let fs = Fake::new(&[
        ("/tmp", Dir),
        ("/tmp/tmux-0", Dir),
        ("/tmp/build", Dir),
        ("/home", Dir),
        ("/home/u", Dir),
        ("/home/u/.ssh", Dir),
    ]);
    let plan = plan(&paths(&["/tmp/tmux-0", "/home/u/.ssh"]), &paths(&["/tmp"]), &[], &fs);
    assert_eq!(plan.mount_view_only, paths(&["/tmp/tmux-0"]));
    assert_eq!(plan.unreadable, paths(&["/home/u/.ssh"]));
    assert_eq!(plan.ancestors, paths(&["/", "/home", "/home/u"]));
    assert_eq!(plan.siblings, paths(&["/tmp"]));
    let nothing = super::plan(&paths(&["/tmp/tmux-0"]), &paths(&["/tmp"]), &[], &fs);
    assert!(nothing.is_empty());
}

#[test]
fn an_unreadable_directory_on_the_way_is_listed_only_and_a_huge_one_is_granted_whole() {
    use Node::*;
    let mut nodes = vec![
        ("/root".to_owned(), Closed),
        ("/big".to_owned(), Dir),
        ("/big/secret".to_owned(), File),
    ];
    for i in 0..=MAX_ENTRIES {
        nodes.push((format!("/big/f{i}"), File));
    }
    let nodes: Vec<(&str, Node)> = nodes.iter().map(|(p, n)| (p.as_str(), n.clone())).collect();
    let fs = Fake::new(&nodes);
    let plan = plan(&paths(&["/root/.ssh", "/big/secret"]), &[], &[], &fs);
    assert_eq!(plan.ancestors, paths(&["/", "/root"]));
    assert_eq!(plan.siblings, paths(&["/big"]));
    assert_eq!(plan.unreadable, paths(&["/root/.ssh"]));
    assert_eq!(plan.mount_view_only, paths(&["/big/secret"]));
}

#[test]
fn no_hidden_path_grants_read_on_the_root_as_a_whole() {
    assert!(plan(&[], &[], &[], &home()).is_empty());
}

/// A hidden path that is a link to nothing yet, or lies under one: where the link points is
/// hidden too, so a secret written through it later is not readable.
#[test]
fn a_dangling_link_hides_where_it_points() {
    let fake = Fake::new(&[
        ("/h", Node::Dir),
        ("/h/vault", Node::Dir),
        ("/h/notes", Node::File),
        ("/h/.pypirc", Node::Link(PathBuf::from("/h/vault/pypirc"))),
        ("/h/.config", Node::Dir),
        ("/h/.config/gh", Node::Link(PathBuf::from("/h/vault/gh"))),
    ]);
    let hidden = [PathBuf::from("/h/.pypirc"), PathBuf::from("/h/.config/gh/hosts.yml")];
    let plan = plan(&hidden, &[], &[], &fake);
    assert!(plan.unreadable.contains(&PathBuf::from("/h/vault/pypirc")), "{plan:?}");
    assert!(plan.unreadable.contains(&PathBuf::from("/h/vault/gh")), "{plan:?}");
    // The vault is listed, not granted as a whole; the rest of the home still reads.
    assert!(plan.ancestors.contains(&PathBuf::from("/h/vault")), "{plan:?}");
    assert!(!plan.siblings.contains(&PathBuf::from("/h/vault")), "{plan:?}");
    assert!(plan.siblings.contains(&PathBuf::from("/h/notes")), "{plan:?}");
}

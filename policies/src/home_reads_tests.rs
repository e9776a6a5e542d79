use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

use super::*;

/// A file system of directories, files and links (`path -> target`).
#[derive(Default)]
struct Fake {
    dirs: Vec<PathBuf>,
    files: Vec<PathBuf>,
    links: BTreeMap<PathBuf, PathBuf>,
}

impl Fake {
    fn new(dirs: &[&str], files: &[&str], links: &[(&str, &str)]) -> Self {
        Fake {
            dirs: dirs.iter().map(PathBuf::from).collect(),
            files: files.iter().map(PathBuf::from).collect(),
            links: links.iter().map(|(a, b)| (PathBuf::from(a), PathBuf::from(b))).collect(),
        }
    }
}

impl HomeFileSystem for Fake {
    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        let mut real = PathBuf::from("/");
        for part in path.components().skip(1) {
            real.push(part);
            if let Some(target) = self.links.get(&real) {
                real = target.clone();
            }
        }
        (self.dirs.contains(&real) || self.files.contains(&real)).then_some(real)
    }

    fn link_target(&self, path: &Path) -> Option<PathBuf> {
        self.links.get(path).cloned()
    }

    fn entries(&self, dir: &Path) -> Option<Vec<(OsString, HomeEntryKind)>> {
        self.dirs.contains(&dir.to_path_buf()).then(|| {
            let all = self.dirs.iter().chain(&self.files).chain(self.links.keys());
            let kind = |p: &PathBuf| {
                if self.links.contains_key(p) {
                    HomeEntryKind::Link
                } else if self.dirs.contains(p) {
                    HomeEntryKind::Directory
                } else {
                    HomeEntryKind::Other
                }
            };
            let mut names: Vec<(OsString, HomeEntryKind)> = all
                .filter(|p| p.parent() == Some(dir))
                .map(|p| (p.file_name().unwrap_or_default().to_owned(), kind(p)))
                .collect();
            names.sort();
            names.dedup();
            names
        })
    }
}

fn paths(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).collect()
}

fn plan(fs: &Fake, keep: &[&str], grant: &[&str], secrets: &[&str]) -> HomeReads {
    let (keep, grant, secrets) = (paths(keep), paths(grant), paths(secrets));
    let input = HomeReadsInput {
        homes: &[PathBuf::from("/h")],
        relocations: &Relocations::new(),
        keep: &keep,
        grant: &grant,
        grant_beside: &[],
        hidden: &secrets,
    };
    plan_home_reads(&input, fs)
}

#[test]
fn unlisted_dot_entries_and_container_entries_are_hidden_and_listed_ones_are_not() {
    let fs = Fake::new(
        &["/h", "/h/.cargo", "/h/.tsh", "/h/.config", "/h/.config/git", "/h/.config/Cursor"],
        &["/h/.bashrc", "/h/.secrets", "/h/notes.txt", "/h/.config/starship.toml"],
        &[],
    );
    let reads = plan(&fs, &[], &[], &[]);
    assert_eq!(reads.hidden, paths(&["/h/.config/Cursor", "/h/.secrets", "/h/.tsh"]));
    assert_eq!(reads.top_files, paths(&["/h/.secrets"]));
    assert_eq!(reads.granted, Vec::<PathBuf>::new());
}

#[test]
fn an_entry_that_is_or_lies_in_a_writable_root_stays_readable_and_one_holding_it_is_hidden_but_for_it()
 {
    let fs = Fake::new(
        &["/h", "/h/.dotfiles", "/h/.tool", "/h/.tool/ws", "/h/.config", "/h/.config/app"],
        &["/h/.tool/key"],
        &[],
    );
    let reads = plan(&fs, &["/h/.dotfiles", "/h/.tool/ws", "/h/.config"], &[], &[]);
    assert_eq!(reads.hidden, paths(&["/h/.tool"]));
    assert_eq!(reads.granted, paths(&["/h/.tool/ws"]));
    assert_eq!(reads.holding_granted, paths(&["/h/.tool"]));
}

#[test]
fn an_allowed_link_is_granted_where_it_leads_unless_a_secret_is_there() {
    let fs = Fake::new(
        &["/h", "/h/.dots", "/h/.dots/ssh"],
        &["/h/.dots/gitconfig", "/h/.dots/token"],
        &[("/h/.gitconfig", "/h/.dots/gitconfig"), ("/h/.vimrc", "/h/.dots/ssh")],
    );
    let reads = plan(&fs, &[], &[], &["/h/.dots/ssh"]);
    assert_eq!(reads.hidden, paths(&["/h/.dots"]));
    assert_eq!(reads.granted, paths(&["/h/.dots/gitconfig"]));
    assert_eq!(reads.holding_granted, paths(&["/h/.dots"]));
}

#[test]
fn a_hidden_link_hides_where_it_leads_in_a_home_and_only_its_name_elsewhere() {
    let fs = Fake::new(
        &["/h", "/h/dotfiles", "/h/dotfiles/aws", "/opt", "/opt/x"],
        &[],
        &[("/h/.aws", "/h/dotfiles/aws"), ("/h/.x", "/opt/x")],
    );
    let reads = plan(&fs, &[], &[], &[]);
    assert_eq!(reads.hidden, paths(&["/h/.aws", "/h/.x", "/h/dotfiles/aws"]));
    assert_eq!(reads.links, paths(&["/h/.aws", "/h/.x"]));
    assert_eq!(reads.top_files, Vec::<PathBuf>::new());
}

#[test]
fn a_granted_place_is_never_one_that_holds_hidden_entries() {
    let fs = Fake::new(&["/h", "/h/.npm-x", "/h/.npm-x/bin", "/h/.tsh"], &[], &[]);
    // `PATH` holding the home directory itself would grant every hidden entry.
    let reads = plan(&fs, &[], &["/h", "/h/.npm-x/bin"], &[]);
    assert_eq!(reads.hidden, paths(&["/h/.npm-x", "/h/.tsh"]));
    assert_eq!(reads.granted, paths(&["/h/.npm-x/bin"]));
    // Granted whole, an entry is not hidden at all.
    let reads = plan(&fs, &[], &["/h/.tsh"], &[]);
    assert_eq!(reads.hidden, paths(&["/h/.npm-x"]));
}

#[test]
fn relocated_containers_are_filtered_through_the_same_names() {
    let fs = Fake::new(&["/h", "/cfg", "/cfg/git", "/cfg/gh-like"], &[], &[]);
    let mut relocations = Relocations::new();
    relocations.insert("XDG_CONFIG_HOME".into(), paths(&["/cfg"]));
    let input = HomeReadsInput {
        homes: &[PathBuf::from("/h")],
        relocations: &relocations,
        keep: &[],
        grant: &[],
        grant_beside: &[],
        hidden: &[],
    };
    assert_eq!(plan_home_reads(&input, &fs).hidden, paths(&["/cfg/gh-like"]));
}

#[test]
fn a_hidden_link_to_an_allowed_entry_or_a_home_leaves_its_target_alone() {
    let fs = Fake::new(
        &["/h", "/h/.cargo", "/h/.config", "/h/dotfiles", "/h/dotfiles/aws"],
        &[],
        &[
            ("/h/.config/cargo-alias", "/h/.cargo"),
            ("/h/.selfref", "/h"),
            ("/h/.cfg", "/h/.config"),
            ("/h/.aws", "/h/dotfiles/aws"),
        ],
    );
    let reads = plan(&fs, &[], &[], &[]);
    assert_eq!(
        reads.hidden,
        paths(&["/h/.aws", "/h/.cfg", "/h/.config/cargo-alias", "/h/.selfref", "/h/dotfiles/aws"])
    );
}

#[test]
fn a_relocation_to_a_system_directory_or_above_a_home_is_no_container() {
    let fs = Fake::new(&["/", "/usr", "/usr/bin", "/h", "/h/.x"], &[], &[]);
    for base in ["/", "/usr", "/h", "/var"] {
        let mut relocations = Relocations::new();
        relocations.insert("XDG_CACHE_HOME".into(), paths(&[base]));
        let input = HomeReadsInput {
            homes: &[PathBuf::from("/h")],
            relocations: &relocations,
            keep: &[],
            grant: &[],
            grant_beside: &[],
            hidden: &[],
        };
        assert_eq!(plan_home_reads(&input, &fs).hidden, paths(&["/h/.x"]), "{base}");
    }
}

#[test]
fn each_container_says_what_stays_readable_in_it() {
    let fs = Fake::new(
        &["/h", "/h/.cache", "/h/.cache/pip", "/h/.cache/a", "/h/.cache/b", "/h/.cache/c"],
        &[],
        &[],
    );
    let reads = plan(&fs, &[], &[], &[]);
    assert_eq!(
        reads.containers,
        vec![ContainerView {
            dir: "/h/.cache".into(),
            shown: paths(&["/h/.cache/pip"]),
            hidden: 3
        }]
    );
}

#[test]
fn a_grant_through_a_link_the_command_can_re_point_is_refused() {
    // ~/.vimrc -> /dots/vimrc, which a workspace at /dots re-pointed at a hidden secret; and a
    // PATH directory in the workspace that is a link into a hidden entry.
    let fs = Fake::new(
        &["/h", "/h/.tsh", "/dots", "/ws"],
        &["/h/.tsh/key", "/h/.dots-ok"],
        &[
            ("/h/.vimrc", "/dots/vimrc"),
            ("/dots/vimrc", "/h/.tsh/key"),
            ("/ws/bin", "/h/.tsh"),
            ("/h/.gitconfig", "/h/.dots-ok"),
        ],
    );
    let reads = plan(&fs, &["/dots", "/ws"], &["/ws/bin"], &[]);
    // `.dots-ok` is where the untouched `~/.gitconfig` leads: granted whole, not hidden.
    assert_eq!(reads.hidden, paths(&["/h/.tsh"]));
    assert_eq!(reads.granted, Vec::<PathBuf>::new());
}

#[test]
fn a_link_in_another_hidden_entry_grants_nothing() {
    // ~/.gitconfig -> ~/.dotfiles/gitconfig, which a run in ~/.dotfiles replaced by a link to
    // ~/.tsh/key; ~/.local/bin/poetry -> ~/.local/share/pypoetry/venv/bin/poetry.
    let fs = Fake::new(
        &[
            "/h",
            "/h/.dotfiles",
            "/h/.tsh",
            "/h/.local",
            "/h/.local/bin",
            "/h/.local/share",
            "/h/.local/share/pypoetry",
            "/h/.local/share/pypoetry/venv",
        ],
        &["/h/.tsh/key", "/h/.local/share/pypoetry/venv/poetry"],
        &[
            ("/h/.gitconfig", "/h/.dotfiles/gitconfig"),
            ("/h/.dotfiles/gitconfig", "/h/.tsh/key"),
            ("/h/.local/bin/poetry", "/h/.local/share/pypoetry/venv/poetry"),
        ],
    );
    let reads = plan(&fs, &[], &[], &[]);
    assert_eq!(reads.hidden, paths(&["/h/.dotfiles", "/h/.tsh"]));
    assert_eq!(reads.granted, Vec::<PathBuf>::new());
}

#[test]
fn a_second_link_outside_the_places_own_entry_grants_nothing() {
    // ~/.vimrc -> ~/.config/helix/x (an allowed entry that was a workspace once), which a run
    // made a link to ~/.tsh/key. A program linked into a PATH directory grants nothing either.
    let fs = Fake::new(
        &[
            "/h",
            "/h/.tsh",
            "/h/.config",
            "/h/.config/helix",
            "/h/.local",
            "/h/.local/bin",
            "/h/.local/share",
            "/h/.local/share/t",
            "/h/.local/share/t/1",
        ],
        &["/h/.tsh/key", "/h/.local/share/t/1/t"],
        &[
            ("/h/.vimrc", "/h/.config/helix/x"),
            ("/h/.config/helix/x", "/h/.tsh/key"),
            ("/h/.local/bin/t", "/h/.local/share/t/current/t"),
            ("/h/.local/share/t/current", "/h/.local/share/t/1"),
        ],
    );
    let reads = plan(&fs, &[], &[], &[]);
    assert_eq!(reads.hidden, paths(&["/h/.local/share/t", "/h/.tsh"]));
    assert_eq!(reads.granted, Vec::<PathBuf>::new());
}

//! What a git configuration key does, by allow-list: a key is *inert* only when git's own
//! documentation (`git help config`) says its value is data — never a program, a shell
//! command, another configuration file, a hook directory or the choice of a program to run.
//! Every key git documents is placed in one of the two lists below, each key that runs code with
//! its reason; a key on neither list (a newer git's, a misspelling, one git reads but does not
//! list, such as `tar.<format>.command` or `trailer.<token>.cmd`) is unknown, and unknown counts
//! as code.
//!
//! Patterns are lowercase: `section.name` (no subsection), `section.*.name` (any subsection),
//! `section.*` (every key of the section, with or without a subsection). A section holding even
//! one key that runs code lists its inert keys one by one, so that a key a newer git adds there
//! is unknown rather than inert by accident.
//!
//! The tests take their oracle from the installed git: every key `git help --config` lists must
//! be on one of the lists.

/// How a key's value is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitKey {
    /// Data: setting it cannot make git run anything it would not run anyway.
    Inert,
    /// A program, a shell command, other configuration, or what picks a program; with why.
    Code(&'static str),
    /// Not on either list: treated as code.
    Unknown,
}

/// Keys whose value makes git run something or read more configuration, with why.
const CODE: &[(&str, &str)] = &[
    ("alias.*", "an alias runs a git command or, with `!`, a shell command"),
    ("attr.tree", "attributes pick diff, merge and filter drivers"),
    ("browser.*", "names a web browser command"),
    ("hook.*", "a hook git runs by its configuration (hook.NAME.command, hook.NAME.event)"),
    ("core.alternaterefscommand", "a command git runs"),
    ("core.askpass", "a program git runs for credentials"),
    ("core.attributesfile", "attributes pick diff, merge and filter drivers"),
    ("core.editor", "the editor git runs"),
    ("core.fsmonitor", "a hook program git runs"),
    ("core.gitproxy", "a proxy command git runs"),
    ("core.hookspath", "the directory git runs hooks from"),
    ("core.pager", "the pager git runs"),
    ("core.sshcommand", "the ssh command git runs"),
    ("core.worktree", "moves the work tree git writes"),
    ("credential.*", "credential helpers are programs"),
    ("diff.external", "an external diff program"),
    ("diff.guitool", "picks the diff tool git runs"),
    ("diff.tool", "picks the diff tool git runs"),
    ("diff.*.command", "an external diff program"),
    ("diff.*.textconv", "a program that converts files for diff"),
    ("difftool.*.cmd", "the diff tool's command"),
    ("difftool.*.path", "the diff tool's program"),
    ("filter.*", "clean, smudge and process filters are programs"),
    ("gc.recentobjectshook", "a hook program gc runs"),
    ("gitcvs.*", "read by git cvsserver, a server cordon does not model"),
    ("gpg.format", "picks the signing program"),
    ("gpg.program", "the signing program"),
    ("gpg.*.program", "the signing program"),
    ("gpg.ssh.defaultkeycommand", "a command git runs for the signing key"),
    ("guitool.*", "git gui tools are commands"),
    ("help.autocorrect", "runs a guessed command in place of a mistyped one"),
    ("help.browser", "the browser git help runs"),
    ("help.format", "picks the viewer git help runs"),
    ("help.htmlpath", "a page git help opens in a browser"),
    ("imap.tunnel", "a command git imap-send runs"),
    ("include.*", "includes other configuration"),
    ("includeif.*", "includes other configuration"),
    ("instaweb.*", "names the web server and browser git instaweb runs"),
    ("interactive.difffilter", "a filter program for interactive diffs"),
    ("man.*", "names the manual viewer git help runs"),
    ("merge.guitool", "picks the merge tool git runs"),
    ("merge.tool", "picks the merge tool git runs"),
    ("merge.*.driver", "a merge driver is a command"),
    ("merge.*.recursive", "names a merge driver"),
    ("mergetool.*.cmd", "the merge tool's command"),
    ("mergetool.*.path", "the merge tool's program"),
    ("pager.*", "a pager command per git command"),
    ("protocol.allow", "allows transports that run commands (`ext::`)"),
    ("protocol.*.allow", "allows transports that run commands (`ext::`)"),
    ("pull.octopus", "a merge strategy is a program (`git-merge-NAME`)"),
    ("pull.twohead", "a merge strategy is a program (`git-merge-NAME`)"),
    ("branch.*.mergeoptions", "options to merge, a strategy among them"),
    ("receive.*", "read by git receive-pack, which runs the repository's hooks"),
    ("remote.*.receivepack", "the program run on the far end, or locally for a local remote"),
    ("remote.*.uploadpack", "the program run on the far end, or locally for a local remote"),
    ("remote.*.vcs", "a remote helper program (`git-remote-NAME`)"),
    ("safe.*", "trusts other users' repositories and the configuration in them"),
    ("sendemail.*", "git send-email runs the programs these name and sends mail"),
    ("sequence.editor", "the editor git rebase runs"),
    ("submodule.*.update", "`!command` runs a shell command"),
    ("tar.*.command", "the archive filter command"),
    ("trailer.*.cmd", "a command git interpret-trailers runs"),
    ("trailer.*.command", "a command git interpret-trailers runs"),
    ("init.templatedir", "a template directory's hooks are copied into new repositories"),
    ("uploadpack.packobjectshook", "a program git upload-pack runs"),
    ("web.browser", "the browser git web--browse runs"),
    // Data that names a file git writes, or makes the user's next push destroy or send away:
    // code in all but name.
    ("http.cookiefile", "git fetch writes the server's cookies into this file"),
    ("http.savecookies", "git fetch writes the server's cookies into http.cookieFile"),
    ("http.*.cookiefile", "git fetch writes the server's cookies into this file"),
    ("http.*.savecookies", "git fetch writes the server's cookies into http.cookieFile"),
    ("remote.*.push", "the refs git push overwrites or deletes on the remote"),
    ("remote.*.mirror", "git push deletes on the remote what is not here"),
    ("remote.*.pushurl", "where git push sends the user's code"),
    ("status.showuntrackedfiles", "hides new files from git status"),
    ("core.excludesfile", "hides new files from git status"),
    ("gc.repackfilterto", "git gc moves objects to this directory"),
    ("format.outputdirectory", "git format-patch writes into this directory"),
];

/// Keys whose value is data.
const INERT: &[&str] = &[
    "add.*",
    "advice.*",
    "am.*",
    "apply.*",
    "author.*",
    "bitmappseudomerge.*",
    "blame.*",
    "branch.autosetupmerge",
    "branch.autosetuprebase",
    "branch.sort",
    "branch.*.description",
    "branch.*.merge",
    "branch.*.pushremote",
    "branch.*.rebase",
    "branch.*.remote",
    "bundle.*",
    "checkout.*",
    "clean.*",
    "clone.*",
    "color.*",
    "column.*",
    "commit.*",
    "commitgraph.*",
    "committer.*",
    "completion.*",
    "core.abbrev",
    "core.alternaterefsprefixes",
    "core.autocrlf",
    "core.bare",
    "core.bigfilethreshold",
    "core.checkroundtripencoding",
    "core.checkstat",
    "core.commentchar",
    "core.commentstring",
    "core.commitgraph",
    "core.compression",
    "core.createobject",
    "core.deltabasecachelimit",
    "core.eol",
    "core.excludesfile",
    "core.filemode",
    "core.filesreflocktimeout",
    "core.fsmonitorhookversion",
    "core.fsync",
    "core.fsyncmethod",
    "core.fsyncobjectfiles",
    "core.hidedotfiles",
    "core.ignorecase",
    "core.ignorestat",
    "core.logallrefupdates",
    "core.loosecompression",
    "core.maxtreedepth",
    "core.multipackindex",
    "core.notesref",
    "core.packedgitlimit",
    "core.packedgitwindowsize",
    "core.packedrefstimeout",
    "core.precomposeunicode",
    "core.prefersymlinkrefs",
    "core.preloadindex",
    "core.protecthfs",
    "core.protectntfs",
    "core.quotepath",
    "core.repositoryformatversion",
    "core.restrictinheritedhandles",
    "core.safecrlf",
    "core.sharedrepository",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.splitindex",
    "core.symlinks",
    "core.trustctime",
    "core.unsetenvvars",
    "core.untrackedcache",
    "core.usereplacerefs",
    "core.warnambiguousrefs",
    "core.whitespace",
    "credentialcache.*",
    "credentialstore.*",
    "diff.algorithm",
    "diff.autorefreshindex",
    "diff.colormoved",
    "diff.colormovedws",
    "diff.context",
    "diff.dirstat",
    "diff.dstprefix",
    "diff.ignoresubmodules",
    "diff.indentheuristic",
    "diff.interhunkcontext",
    "diff.mnemonicprefix",
    "diff.noprefix",
    "diff.orderfile",
    "diff.relative",
    "diff.renamelimit",
    "diff.renames",
    "diff.srcprefix",
    "diff.statgraphwidth",
    "diff.statnamewidth",
    "diff.submodule",
    "diff.suppressblankempty",
    "diff.trustexitcode",
    "diff.wordregex",
    "diff.wserrorhighlight",
    "diff.*.binary",
    "diff.*.cachetextconv",
    "diff.*.trustexitcode",
    "diff.*.wordregex",
    "diff.*.xfuncname",
    "difftool.guidefault",
    "difftool.prompt",
    "difftool.trustexitcode",
    "extensions.*",
    "fastimport.*",
    "feature.*",
    "fetch.*",
    "format.*",
    "fsck.*",
    "fsmonitor.allowremote",
    "fsmonitor.socketdir",
    "gc.aggressivedepth",
    "gc.aggressivewindow",
    "gc.auto",
    "gc.autodetach",
    "gc.autopacklimit",
    "gc.bigpackthreshold",
    "gc.cruftpacks",
    "gc.logexpiry",
    "gc.maxcruftsize",
    "gc.packrefs",
    "gc.pruneexpire",
    "gc.reflogexpire",
    "gc.reflogexpireunreachable",
    "gc.repackfilter",
    "gc.repackfilterto",
    "gc.rerereresolved",
    "gc.rerereunresolved",
    "gc.worktreepruneexpire",
    "gc.writecommitgraph",
    "gc.*.reflogexpire",
    "gc.*.reflogexpireunreachable",
    "gitweb.*",
    "gpg.mintrustlevel",
    "gpg.ssh.allowedsignersfile",
    "gpg.ssh.revocationfile",
    "grep.*",
    "gui.*",
    "http.*",
    "i18n.*",
    "imap.authmethod",
    "imap.folder",
    "imap.host",
    "imap.pass",
    "imap.port",
    "imap.preformattedhtml",
    "imap.sslverify",
    "imap.user",
    "index.*",
    "init.defaultbranch",
    "init.defaultobjectformat",
    "init.defaultrefformat",
    "interactive.singlekey",
    "log.*",
    "lsrefs.*",
    "mailinfo.*",
    "mailmap.*",
    "maintenance.*",
    "merge.autostash",
    "merge.branchdesc",
    "merge.conflictstyle",
    "merge.defaulttoupstream",
    "merge.directoryrenames",
    "merge.ff",
    "merge.log",
    "merge.renamelimit",
    "merge.renames",
    "merge.renormalize",
    "merge.stat",
    "merge.suppressdest",
    "merge.verbosity",
    "merge.verifysignatures",
    "merge.*.name",
    "mergetool.guidefault",
    "mergetool.hideresolved",
    "mergetool.keepbackup",
    "mergetool.keeptemporaries",
    "mergetool.prompt",
    "mergetool.writetotemp",
    "mergetool.*.hasoutput",
    "mergetool.*.hideresolved",
    "mergetool.*.layout",
    "mergetool.*.trustexitcode",
    "mergetool.*.useautomerge",
    "notes.*",
    "pack.*",
    "pretty.*",
    "promisor.*",
    "protocol.version",
    "pull.ff",
    "pull.rebase",
    "push.*",
    "rebase.*",
    "reftable.*",
    "remote.pushdefault",
    "remote.*.fetch",
    "remote.*.mirror",
    "remote.*.partialclonefilter",
    "remote.*.promisor",
    "remote.*.proxy",
    "remote.*.proxyauthmethod",
    "remote.*.prune",
    "remote.*.prunetags",
    "remote.*.push",
    "remote.*.pushurl",
    "remote.*.skipdefaultupdate",
    "remote.*.skipfetchall",
    "remote.*.tagopt",
    "remote.*.url",
    "remotes.*",
    "repack.*",
    "rerere.*",
    "revert.*",
    "showbranch.*",
    "sparse.*",
    "splitindex.*",
    "ssh.variant",
    "stash.*",
    "status.*",
    "submodule.active",
    "submodule.alternateerrorstrategy",
    "submodule.alternatelocation",
    "submodule.fetchjobs",
    "submodule.propagatebranches",
    "submodule.recurse",
    "submodule.*.active",
    "submodule.*.branch",
    "submodule.*.fetchrecursesubmodules",
    "submodule.*.ignore",
    "submodule.*.url",
    "tag.*",
    "tar.umask",
    "tar.*.remote",
    "trace2.*",
    "trailer.ifexists",
    "trailer.ifmissing",
    "trailer.separators",
    "trailer.where",
    "trailer.*.ifexists",
    "trailer.*.ifmissing",
    "trailer.*.key",
    "trailer.*.where",
    "transfer.*",
    "uploadarchive.allowunreachable",
    "uploadpack.allowanysha1inwant",
    "uploadpack.allowfilter",
    "uploadpack.allowreachablesha1inwant",
    "uploadpack.allowrefinwant",
    "uploadpack.allowtipsha1inwant",
    "uploadpack.hiderefs",
    "uploadpack.keepalive",
    "uploadpackfilter.*",
    "url.*",
    "user.*",
    "versionsort.*",
    "worktree.*",
];

/// A key split as git splits it: the section and the name are case-insensitive, the
/// subsection (everything between the first and the last dot) is kept as given.
struct Parts<'a> {
    section: String,
    subsection: Option<&'a str>,
    name: String,
}

fn split(key: &str) -> Option<Parts<'_>> {
    let (section, rest) = key.split_once('.')?;
    let (subsection, name) = match rest.rsplit_once('.') {
        Some((subsection, name)) => (Some(subsection), name),
        None => (None, rest),
    };
    if section.is_empty() || name.is_empty() {
        return None;
    }
    Some(Parts {
        section: section.to_ascii_lowercase(),
        subsection,
        name: name.to_ascii_lowercase(),
    })
}

fn matches(pattern: &str, key: &Parts<'_>) -> bool {
    let (section, rest) = pattern.split_once('.').unwrap_or((pattern, ""));
    if section != key.section {
        return false;
    }
    match (rest, rest.split_once('.'), key.subsection) {
        ("*", _, _) => true,
        (_, Some(("*", "*")), Some(_)) => true,
        (_, Some(("*", name)), Some(_)) => name == key.name,
        (_, Some((subsection, name)), Some(given)) => {
            subsection == given.to_ascii_lowercase() && name == key.name
        }
        (name, None, None) => name == key.name,
        _ => false,
    }
}

/// Keys whose value (or, for `url.<base>.*`, whose subsection) is a URL git fetches from: a URL
/// spelled `NAME::…` runs the transport helper `git-remote-NAME` (`ext::` a shell command).
const URL_KEYS: &[&str] = &[
    "remote.*.url",
    "remote.*.pushurl",
    "submodule.*.url",
    "url.*.insteadof",
    "url.*.pushinsteadof",
];

/// How git uses `key` set to `value` (`None`: without one, as `git -c key` sets it true): as
/// [`git_key`], and a URL that names a transport helper is code.
pub fn git_key_with_value(key: &str, value: Option<&str>) -> GitKey {
    let judged = git_key(key);
    let Some(parts) = split(key) else { return judged };
    if judged == GitKey::Inert && URL_KEYS.iter().any(|pattern| matches(pattern, &parts)) {
        let in_subsection =
            parts.section == "url" && parts.subsection.is_some_and(|s| s.contains("::"));
        if in_subsection || value.is_some_and(|v| v.contains("::")) {
            return GitKey::Code("a URL spelled NAME::… runs the program git-remote-NAME");
        }
    }
    judged
}

/// How git uses `key` (`section.name` or `section.subsection.name`, any case).
pub fn git_key(key: &str) -> GitKey {
    let Some(parts) = split(key) else { return GitKey::Unknown };
    if let Some((_, why)) = CODE.iter().find(|(pattern, _)| matches(pattern, &parts)) {
        return GitKey::Code(why);
    }
    if INERT.iter().any(|pattern| matches(pattern, &parts)) {
        return GitKey::Inert;
    }
    GitKey::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn keys_are_judged_by_section_subsection_and_name() {
        for (key, expected) in [
            ("user.name", GitKey::Inert),
            ("User.Email", GitKey::Inert),
            ("color.ui", GitKey::Inert),
            ("color.diff.meta", GitKey::Inert),
            ("core.quotePath", GitKey::Inert),
            ("remote.origin.url", GitKey::Inert),
            ("remote.a.b.url", GitKey::Inert),
            ("diff.rust.xfuncname", GitKey::Inert),
            ("gpg.ssh.allowedSignersFile", GitKey::Inert),
            ("mergetool.meld.hasOutput", GitKey::Inert),
        ] {
            assert_eq!(git_key(key), expected, "{key}");
        }
        assert_eq!(git_key_with_value("remote.o.url", Some("https://x/y.git")), GitKey::Inert);
        for (key, value) in [
            ("remote.o.url", Some("ext::sh -c rm% x")),
            ("remote.o.pushurl", Some("foo::bar")),
            ("url.ext::sh -c x.insteadOf", Some("q:")),
            ("submodule.s.url", Some("fd::0")),
        ] {
            assert!(matches!(git_key_with_value(key, value), GitKey::Code(_)), "{key}={value:?}");
        }
        for key in [
            "core.pager",
            "CORE.FSMONITOR",
            "alias.x",
            "tar.x.command",
            "man.v.cmd",
            "man.viewer",
            "browser.v.cmd",
            "trailer.x.cmd",
            "imap.tunnel",
            "guitool.x.cmd",
            "instaweb.httpd",
            "help.browser",
            "init.templateDir",
            "diff.x.textconv",
            "gpg.ssh.program",
            "includeIf.gitdir:~/.path",
            "submodule.x.update",
            "protocol.ext.allow",
        ] {
            assert!(matches!(git_key(key), GitKey::Code(_)), "{key}: {:?}", git_key(key));
        }
        for key in ["uploadarchive", "core", ".x", "x.", "core.nosuchkey", "tar.x.nosuch", "x.y"] {
            assert!(!matches!(git_key(key), GitKey::Inert), "{key}");
        }
    }

    /// `remote.<name>.url`, `alias.*`, `mergetool.<vimdiff variant>.layout` with a sample
    /// subsection or name in place of each placeholder.
    fn sample_key(line: &str) -> String {
        let mut key = String::new();
        let mut in_placeholder = false;
        for c in line.chars() {
            match c {
                '<' => in_placeholder = true,
                '>' => {
                    in_placeholder = false;
                    key.push('x');
                }
                '*' => key.push('x'),
                _ if !in_placeholder => key.push(c),
                _ => {}
            }
        }
        key
    }

    /// The installed git's own list of the keys it knows: each one must be placed, so that a
    /// newer git's keys are looked at before anything treats them as data.
    #[test]
    fn every_key_git_documents_is_on_one_list() {
        let Ok(output) = std::process::Command::new("git").args(["help", "--config"]).output()
        else {
            let required =
                std::env::var_os("CORDON_TEST_REQUIRE_SANDBOX").is_some_and(|v| v == "1");
            assert!(!required, "git is not installed, so its key list cannot be read");
            println!("skipped: git is not installed, so its key list cannot be read");
            return;
        };
        let text = String::from_utf8_lossy(&output.stdout);
        let mut unplaced = Vec::new();
        let mut count = 0;
        for line in text.lines().map(str::trim).filter(|l| l.contains('.') && !l.contains("git ")) {
            count += 1;
            let key = sample_key(line);
            if git_key(&key) == GitKey::Unknown {
                unplaced.push(line.to_owned());
            }
        }
        assert!(count > 500, "git help --config listed only {count} keys:\n{text}");
        assert_eq!(unplaced, Vec::<String>::new());
    }
}

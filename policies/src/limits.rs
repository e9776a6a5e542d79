//! Resource limits for one command, as a validated value: memory and processes of the whole
//! tree, its CPU time, the size of any one file it writes and the descriptors each process may
//! hold. `--limit KEY=VALUE`, the config's `[limits]` table and the executor's per-call fields
//! are all parsed here, so a bad value is the same one-line error wherever it comes from.
//!
//! What enforces a limit depends on the machine (a cgroup, an rlimit) and is decided where the
//! command starts; this is only what was asked for.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One limit's name, as the flag, the config and the protocol spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitKey {
    /// Bytes of memory of the whole tree.
    Memory,
    /// Processes (and threads) of the whole tree.
    Pids,
    /// CPU seconds of the whole tree.
    Cpu,
    /// Bytes of any one file the command writes (disk usage as a whole is not limited).
    FileSize,
    /// Descriptors each process may hold open.
    OpenFiles,
}

impl LimitKey {
    pub const ALL: [LimitKey; 5] =
        [LimitKey::Memory, LimitKey::Pids, LimitKey::Cpu, LimitKey::FileSize, LimitKey::OpenFiles];

    pub fn as_str(self) -> &'static str {
        match self {
            LimitKey::Memory => "memory",
            LimitKey::Pids => "pids",
            LimitKey::Cpu => "cpu",
            LimitKey::FileSize => "file-size",
            LimitKey::OpenFiles => "open-files",
        }
    }

    /// `value` as a person reads this limit: `128 MiB`, `64 processes`, `10 CPU seconds`.
    pub fn describe(self, value: u64) -> String {
        match self {
            LimitKey::Memory | LimitKey::FileSize => bytes_text(value),
            LimitKey::Pids => format!("{value} processes"),
            LimitKey::Cpu => format!("{value} CPU seconds"),
            LimitKey::OpenFiles => format!("{value} open files"),
        }
    }

    fn parse_value(self, text: &str) -> Result<u64, LimitError> {
        let bad = |why: &'static str| LimitError::Value { key: self, value: text.to_owned(), why };
        let text = text.trim();
        let value = match self {
            LimitKey::Memory | LimitKey::FileSize => parse_bytes(text).ok_or_else(|| {
                bad("a number of bytes with an optional K, M, G or T suffix (512M, 2G)")
            })?,
            LimitKey::Cpu => parse_seconds(text).ok_or_else(|| {
                bad("a number of CPU seconds, optionally with s, m or h (30, 90s, 2m)")
            })?,
            LimitKey::Pids | LimitKey::OpenFiles => {
                text.parse::<u64>().map_err(|_| bad("a whole number"))?
            }
        };
        if value == 0 {
            return Err(bad("it must be more than zero"));
        }
        // The kernel takes limits as signed 64-bit numbers in places (cgroup files, RLIM_INFINITY
        // is all ones): anything that large is no limit, which is not what was asked for.
        if value > i64::MAX as u64 / 2 {
            return Err(bad("it is too large to be a limit"));
        }
        Ok(value)
    }
}

impl fmt::Display for LimitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for LimitKey {
    type Err = LimitError;

    fn from_str(name: &str) -> Result<LimitKey, LimitError> {
        LimitKey::ALL
            .into_iter()
            .find(|key| key.as_str() == name.trim())
            .ok_or_else(|| LimitError::Key(name.to_owned()))
    }
}

/// A limit that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error(
        "unknown limit {0:?}: the limits are memory, pids, cpu, file-size and open-files \
         (--limit KEY=VALUE)"
    )]
    Key(String),
    #[error(
        "--limit takes KEY=VALUE (memory=512M, pids=256, cpu=60, file-size=1G, open-files=1024), not {0:?}"
    )]
    Assignment(String),
    #[error("limit {key}={value:?}: {why}")]
    Value { key: LimitKey, value: String, why: &'static str },
}

/// The limits asked for; an absent key is no limit.
///
/// Unknown fields are an error, as in the request that carries them: a peer that does not
/// know a limit must refuse it rather than run without it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Limits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files: Option<u64>,
}

impl Limits {
    /// No limit at all.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    pub fn get(&self, key: LimitKey) -> Option<u64> {
        match key {
            LimitKey::Memory => self.memory,
            LimitKey::Pids => self.pids,
            LimitKey::Cpu => self.cpu,
            LimitKey::FileSize => self.file_size,
            LimitKey::OpenFiles => self.open_files,
        }
    }

    pub fn set(&mut self, key: LimitKey, value: Option<u64>) {
        let slot = match key {
            LimitKey::Memory => &mut self.memory,
            LimitKey::Pids => &mut self.pids,
            LimitKey::Cpu => &mut self.cpu,
            LimitKey::FileSize => &mut self.file_size,
            LimitKey::OpenFiles => &mut self.open_files,
        };
        *slot = value;
    }

    /// The limits that are set, in [`LimitKey::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (LimitKey, u64)> + '_ {
        LimitKey::ALL.into_iter().filter_map(|key| self.get(key).map(|value| (key, value)))
    }

    /// Sets `key` from its text (`512M`, `256`, `90s`).
    pub fn set_text(&mut self, key: LimitKey, text: &str) -> Result<(), LimitError> {
        let value = key.parse_value(text)?;
        self.set(key, Some(value));
        Ok(())
    }

    /// Reads one `KEY=VALUE` (a `--limit` flag).
    pub fn parse_assignment(text: &str) -> Result<(LimitKey, u64), LimitError> {
        let (key, value) =
            text.split_once('=').ok_or_else(|| LimitError::Assignment(text.to_owned()))?;
        let key: LimitKey = key.parse()?;
        Ok((key, key.parse_value(value)?))
    }

    /// `self` with `other`'s limits laid over it (a flag over the config).
    pub fn overridden_by(&self, other: &Limits) -> Limits {
        let mut merged = *self;
        for (key, value) in other.iter() {
            merged.set(key, Some(value));
        }
        merged
    }

    /// The stricter of the two for every key: what a client may ask of a server, which can only
    /// lower the server's own limits.
    pub fn lowered_by(&self, other: &Limits) -> Limits {
        let mut merged = *self;
        for key in LimitKey::ALL {
            let value = match (self.get(key), other.get(key)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            merged.set(key, value);
        }
        merged
    }

    /// The limits that bound the whole tree (a cgroup's), set here.
    pub fn tree_keys(&self) -> impl Iterator<Item = LimitKey> + '_ {
        [LimitKey::Memory, LimitKey::Pids, LimitKey::Cpu]
            .into_iter()
            .filter(|key| self.get(*key).is_some())
    }
}

impl fmt::Display for Limits {
    /// `memory=128 MiB, pids=64 processes`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (key, value) in self.iter() {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{key} {}", key.describe(value))?;
        }
        Ok(())
    }
}

/// What holds the limits that bound a whole tree (memory, pids, and cpu as a total).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeLimits {
    /// A cgroup made for the command holds them; per-process limits only add a backstop.
    Cgroup,
    /// No cgroup: only per-process rlimits, which cannot bound a tree.
    None,
}

/// One per-process limit (`setrlimit`), set in the command's process before it starts and
/// inherited by everything it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessLimit {
    /// `RLIMIT_DATA`: the data segment and private mappings of each process.
    Data(u64),
    /// `RLIMIT_NPROC`: the processes of the real user (of its user namespace).
    Processes(u64),
    /// `RLIMIT_CPU`: CPU seconds of each process (SIGXCPU, then SIGKILL a second later).
    CpuSeconds(u64),
    /// `RLIMIT_FSIZE`: the largest file a process may write (SIGXFSZ beyond it).
    FileSize(u64),
    /// `RLIMIT_NOFILE`: the descriptors a process may hold.
    OpenFiles(u64),
}

/// A limit this machine cannot enforce as asked (exit 125 unless best effort).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {key} limit needs a cgroup for the whole process tree, and {why}; --best-effort \
     would use a per-process rlimit instead ({caveat})"
)]
pub struct UnenforceableLimit {
    pub key: LimitKey,
    pub why: String,
    pub caveat: &'static str,
}

/// What each fallback cannot do, for the warning best effort prints and `cordon doctor`.
pub fn fallback_caveat(key: LimitKey) -> &'static str {
    match key {
        LimitKey::Memory => {
            "RLIMIT_DATA bounds each process's data and private mappings, not the tree's memory; \
             runtimes that reserve large address ranges (the JVM, Go, V8) may fail to start"
        }
        LimitKey::Pids => {
            "RLIMIT_NPROC counts every process of the user in the command's user namespace, not \
             the tree, and root outside a user namespace is exempt from it"
        }
        LimitKey::Cpu => "RLIMIT_CPU bounds each process's CPU time, not the tree's total",
        LimitKey::FileSize | LimitKey::OpenFiles => "",
    }
}

impl Limits {
    /// The rlimits to set in the command's process, and for best effort a line for each limit
    /// that is only approximated. Memory and pids without a cgroup are refused unless
    /// `strictness` is best effort.
    pub fn process_limits(
        &self,
        tree: TreeLimits,
        strictness: crate::Strictness,
        why_no_cgroup: &str,
    ) -> Result<(Vec<ProcessLimit>, Vec<String>), UnenforceableLimit> {
        let mut limits = Vec::new();
        let mut caveats = Vec::new();
        for (key, value) in self.iter() {
            match key {
                LimitKey::FileSize => limits.push(ProcessLimit::FileSize(value)),
                LimitKey::OpenFiles => limits.push(ProcessLimit::OpenFiles(value)),
                // Per process even with a cgroup: no one process can use more than the tree,
                // and its SIGXCPU names the limit at once.
                LimitKey::Cpu => {
                    limits.push(ProcessLimit::CpuSeconds(value));
                    if tree == TreeLimits::None {
                        caveats
                            .push(format!("cpu limit per process only: {}", fallback_caveat(key)));
                    }
                }
                LimitKey::Memory | LimitKey::Pids if tree == TreeLimits::Cgroup => {}
                LimitKey::Memory | LimitKey::Pids => {
                    if strictness == crate::Strictness::FailClosed {
                        return Err(UnenforceableLimit {
                            key,
                            why: why_no_cgroup.to_owned(),
                            caveat: fallback_caveat(key),
                        });
                    }
                    limits.push(match key {
                        LimitKey::Memory => ProcessLimit::Data(value),
                        _ => ProcessLimit::Processes(value),
                    });
                    caveats.push(format!(
                        "{key} limit not enforced for the whole tree ({why_no_cgroup}): {}",
                        fallback_caveat(key)
                    ));
                }
            }
        }
        Ok((limits, caveats))
    }
}

/// `512`, `512K`, `2M`, `1G`, `1T` (powers of 1024; `KiB`, `MB` and a lower-case unit read the
/// same).
fn parse_bytes(text: &str) -> Option<u64> {
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let unit = unit.trim().to_ascii_uppercase();
    let unit = unit.strip_suffix("IB").or_else(|| unit.strip_suffix('B')).unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    number.checked_mul(1u64 << shift)
}

/// `30`, `90s`, `2m`, `1h`.
fn parse_seconds(text: &str) -> Option<u64> {
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let factor = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// `134217728` as `128 MiB`; a number that is no whole unit keeps its bytes.
fn bytes_text(value: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if value >= 1 << shift && value % (1 << shift) == 0 {
            return format!("{} {unit}", value >> shift);
        }
    }
    format!("{value} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn assignments_read_sizes_counts_and_seconds() {
        let cases = [
            ("memory=512M", (LimitKey::Memory, 512 << 20)),
            ("memory=2g", (LimitKey::Memory, 2 << 30)),
            ("memory=64KiB", (LimitKey::Memory, 64 << 10)),
            ("memory=4096", (LimitKey::Memory, 4096)),
            ("pids=64", (LimitKey::Pids, 64)),
            ("cpu=90s", (LimitKey::Cpu, 90)),
            ("cpu=2m", (LimitKey::Cpu, 120)),
            ("cpu=5", (LimitKey::Cpu, 5)),
            ("file-size=1M", (LimitKey::FileSize, 1 << 20)),
            ("open-files=256", (LimitKey::OpenFiles, 256)),
        ];
        for (text, expected) in cases {
            assert_eq!(Limits::parse_assignment(text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn bad_assignments_say_what_is_wrong() {
        for (text, says) in [
            ("memory", "KEY=VALUE"),
            ("ram=1G", "unknown limit"),
            ("memory=lots", "number of bytes"),
            ("memory=1Q", "number of bytes"),
            ("memory=0", "more than zero"),
            ("pids=-1", "whole number"),
            ("pids=1.5", "whole number"),
            ("cpu=1d", "CPU seconds"),
            ("memory=99999999999T", "number of bytes"),
            ("memory=9000000T", "too large"),
            ("open-files=", "whole number"),
        ] {
            let error = Limits::parse_assignment(text).unwrap_err().to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn a_client_can_only_lower_a_limit() {
        let server = Limits { memory: Some(1 << 30), pids: Some(100), ..Limits::default() };
        let client =
            Limits { memory: Some(2 << 30), pids: Some(10), cpu: Some(5), ..Limits::default() };
        assert_eq!(
            server.lowered_by(&client),
            Limits { memory: Some(1 << 30), pids: Some(10), cpu: Some(5), ..Limits::default() }
        );
    }

    #[test]
    fn limits_round_trip_through_json_and_refuse_unknown_keys() {
        let limits = Limits { memory: Some(128 << 20), file_size: Some(1024), ..Limits::default() };
        let json = serde_json::to_string(&limits).unwrap();
        assert_eq!(json, r#"{"memory":134217728,"file-size":1024}"#);
        assert_eq!(serde_json::from_str::<Limits>(&json).unwrap(), limits);
        assert!(serde_json::from_str::<Limits>(r#"{"disk":1}"#).is_err());
    }

    #[test]
    fn tree_limits_without_a_cgroup_fail_closed_unless_best_effort() {
        use crate::Strictness;
        let limits = Limits { memory: Some(1 << 20), open_files: Some(8), ..Limits::default() };
        let refused = limits
            .process_limits(TreeLimits::None, Strictness::FailClosed, "no cgroup")
            .unwrap_err();
        assert_eq!(refused.key, LimitKey::Memory);
        let (set, caveats) =
            limits.process_limits(TreeLimits::None, Strictness::BestEffort, "no cgroup").unwrap();
        assert_eq!(set, vec![ProcessLimit::Data(1 << 20), ProcessLimit::OpenFiles(8)]);
        assert_eq!(caveats.len(), 1, "{caveats:?}");
        let (set, caveats) =
            limits.process_limits(TreeLimits::Cgroup, Strictness::FailClosed, "").unwrap();
        assert_eq!(set, vec![ProcessLimit::OpenFiles(8)]);
        assert!(caveats.is_empty());
    }

    #[test]
    fn values_read_as_people_write_them() {
        assert_eq!(LimitKey::Memory.describe(128 << 20), "128 MiB");
        assert_eq!(LimitKey::FileSize.describe(1000), "1000 bytes");
        assert_eq!(LimitKey::Cpu.describe(3), "3 CPU seconds");
    }
}

//! A compact classic-BPF emitter for the deny table.
//!
//! Why not seccompiler's compiler: the kernel's cost of installing a filter is paid on every
//! sandboxed command. Conversion to eBPF and the JIT are linear in the program's length, and
//! the per-syscall action cache (Linux 5.11) runs the filter's number dispatch once for every
//! syscall number — for a linear chain of `jeq`s, the whole chain for almost every number.
//! seccompiler emits 391 instructions for this table (a jump chain per syscall, every argument
//! reloaded, no bit tests); this emitter emits about half of that, by sharing one return per
//! action, testing flags with `JSET`, and not reloading an argument the accumulator already
//! holds, and it dispatches on the number by binary search, so the action cache's pass over
//! every syscall number takes a few comparisons per number instead of the whole chain
//! (`docs/performance.md` has the measurement). seccompiler still provides the instruction type
//! and installs the program.
//!
//! Layout (every jump goes forward, as the kernel requires):
//! ```text
//! prefix:   arch check, x32 bit, ENOSYS for calls whose arguments live in memory
//! dispatch: a tree of `jge nr` down to leaves of a few `jeq nr` each: to DENY, or to the
//!           syscall's block; every leaf ends with ret ALLOW
//! blocks:   per conditional syscall: its alternatives, each a chain of tests; all tests of
//!           one alternative passing jumps to DENY; the block ends with ret ALLOW
//! DENY:     ret ERRNO(EPERM)
//! ```

use seccompiler::sock_filter;

use super::{Cmp, DenyRule};

const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_ALU_AND_K: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
const BPF_JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const BPF_JSET_K: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K

const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;
const SECCOMP_DATA_ARGS: u32 = 16;

/// The bit that marks x32 syscall numbers on x86-64.
pub(super) const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// What the emitted program needs to know about the target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// `AUDIT_ARCH_*` of the only architecture allowed in.
    pub audit_arch: u32,
    /// Calls answered with ENOSYS: `clone3` and `openat2` pass their flags in memory the
    /// filter cannot read, and libc falls back to `clone`/`openat`, whose flags it can.
    pub enosys_calls: &'static [u32],
    /// The return value for a refused call (`SECCOMP_RET_ERRNO | EPERM`).
    pub deny: u32,
    /// The return value for `enosys_calls` (`SECCOMP_RET_ERRNO | ENOSYS`).
    pub enosys: u32,
}

/// Where a jump goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum To {
    /// The next instruction.
    Next,
    Label(usize),
}

#[derive(Debug, Clone, Copy)]
enum Insn {
    Stmt {
        code: u16,
        k: u32,
    },
    Jump {
        code: u16,
        k: u32,
        jt: To,
        jf: To,
    },
    /// Marks a label's position; emits nothing.
    Label(usize),
}

/// Why a program could not be emitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    #[error("a jump of {0} instructions does not fit classic BPF's 8-bit offsets")]
    JumpTooFar(usize),
    #[error("syscall number {0} does not fit 32 bits")]
    SyscallNumber(i64),
}

struct Asm {
    insns: Vec<Insn>,
    labels: usize,
    /// The argument word the accumulator holds, if any (to skip reloading it).
    acc: Option<u32>,
}

impl Asm {
    fn label(&mut self) -> usize {
        self.labels += 1;
        self.labels - 1
    }
    fn place(&mut self, label: usize) {
        self.insns.push(Insn::Label(label));
        // Control can arrive here from elsewhere: the accumulator is unknown.
        self.acc = None;
    }
    fn load(&mut self, offset: u32) {
        if self.acc != Some(offset) {
            self.insns.push(Insn::Stmt { code: BPF_LD_W_ABS, k: offset });
            self.acc = Some(offset);
        }
    }
    fn ret(&mut self, k: u32) {
        self.insns.push(Insn::Stmt { code: BPF_RET_K, k });
    }
    fn jump(&mut self, code: u16, k: u32, jt: To, jf: To) {
        self.insns.push(Insn::Jump { code, k, jt, jf });
    }
    fn and(&mut self, k: u32) {
        self.insns.push(Insn::Stmt { code: BPF_ALU_AND_K, k });
        self.acc = None;
    }

    /// Resolves labels into relative offsets.
    fn finish(self) -> Result<Vec<sock_filter>, EmitError> {
        let mut positions = vec![0usize; self.labels];
        let mut pc = 0;
        for insn in &self.insns {
            match insn {
                Insn::Label(label) => positions[*label] = pc,
                Insn::Stmt { .. } | Insn::Jump { .. } => pc += 1,
            }
        }
        let mut out = Vec::with_capacity(pc);
        for insn in self.insns {
            let here = out.len();
            let offset = |to: To| -> Result<u32, EmitError> {
                match to {
                    To::Next => Ok(0),
                    To::Label(label) => {
                        let distance = positions[label] - (here + 1);
                        u32::try_from(distance).map_err(|_| EmitError::JumpTooFar(distance))
                    }
                }
            };
            match insn {
                Insn::Label(_) => {}
                Insn::Stmt { code, k } => out.push(sock_filter { code, jt: 0, jf: 0, k }),
                Insn::Jump { code, k, jt, jf } => {
                    let short = |to| {
                        offset(to).and_then(|o| {
                            u8::try_from(o).map_err(|_| EmitError::JumpTooFar(o as usize))
                        })
                    };
                    out.push(sock_filter { code, jt: short(jt)?, jf: short(jf)?, k });
                }
            }
        }
        Ok(out)
    }
}

fn arg_low(arg: u8) -> u32 {
    SECCOMP_DATA_ARGS + 8 * u32::from(arg)
}

fn arg_high(arg: u8) -> u32 {
    arg_low(arg) + 4
}

/// Emits one test: control reaches `pass` when it holds, `fail` otherwise.
fn emit_test(asm: &mut Asm, arg: u8, cmp: Cmp, pass: To, fail: To) {
    match cmp {
        Cmp::Eq(v) => {
            asm.load(arg_low(arg));
            asm.jump(BPF_JEQ_K, v, pass, fail);
        }
        Cmp::Ne(v) => {
            asm.load(arg_low(arg));
            asm.jump(BPF_JEQ_K, v, fail, pass);
        }
        Cmp::AnyBits(mask) => {
            asm.load(arg_low(arg));
            asm.jump(BPF_JSET_K, mask, pass, fail);
        }
        Cmp::MaskedEq { mask, value: 0 } => {
            asm.load(arg_low(arg));
            asm.jump(BPF_JSET_K, mask, fail, pass);
        }
        Cmp::MaskedEq { mask, value } if value == mask && mask.is_power_of_two() => {
            asm.load(arg_low(arg));
            asm.jump(BPF_JSET_K, mask, pass, fail);
        }
        Cmp::MaskedEq { mask, value } => {
            asm.load(arg_low(arg));
            asm.and(mask);
            asm.jump(BPF_JEQ_K, value, pass, fail);
        }
        Cmp::NonNull => {
            // Not NULL if either half is non-zero.
            let check_high = asm.label();
            asm.load(arg_low(arg));
            asm.jump(BPF_JEQ_K, 0, To::Label(check_high), pass);
            asm.place(check_high);
            asm.load(arg_high(arg));
            asm.jump(BPF_JEQ_K, 0, fail, pass);
        }
    }
}

/// Syscalls per leaf of the dispatch tree: compared one by one, then `ret ALLOW`.
const LEAF: usize = 8;

/// Emits the dispatch on the syscall number (in the accumulator) over `entries`, sorted by
/// number: a binary search of `jge` splits down to leaves of at most [`LEAF`] `jeq`s, each
/// leaf ending in `ret ALLOW` for the numbers it does not list. A call walks about
/// log2(n / LEAF) + LEAF instructions instead of up to n, and so does the kernel's action
/// cache when it installs the filter (see the module docs). Leaves of 2 to 16 cost the same
/// to install within noise; 8 keeps the program short.
fn emit_dispatch(asm: &mut Asm, entries: &[(u32, usize)]) {
    if entries.len() <= LEAF {
        for (nr, target) in entries {
            asm.jump(BPF_JEQ_K, *nr, To::Label(*target), To::Next);
        }
        asm.ret(libc::SECCOMP_RET_ALLOW);
        return;
    }
    let (low, high) = entries.split_at(entries.len() / 2);
    let upper = asm.label();
    // Every jump goes forward: the lower half first, then the upper half.
    asm.jump(BPF_JGE_K, high[0].0, To::Label(upper), To::Next);
    emit_dispatch(asm, low);
    asm.place(upper);
    // Only the `jge` above jumps here (the lower half ends in a return): the accumulator
    // still holds the number.
    asm.acc = Some(SECCOMP_DATA_NR);
    emit_dispatch(asm, high);
}

/// Emits the program for `rules` (one entry per syscall number).
pub fn emit(rules: &[DenyRule], target: Target) -> Result<Vec<sock_filter>, EmitError> {
    let mut asm = Asm { insns: Vec::new(), labels: 0, acc: None };
    let deny_label = asm.label();
    let enosys_label = asm.label();

    asm.load(SECCOMP_DATA_ARCH);
    // Any other architecture: i386 through `int 0x80`, or anything else the CPU offers.
    let native = asm.label();
    asm.jump(BPF_JEQ_K, target.audit_arch, To::Label(native), To::Next);
    asm.ret(libc::SECCOMP_RET_KILL_PROCESS);
    asm.place(native);
    asm.load(SECCOMP_DATA_NR);
    // x32 numbers (and anything above): the table only knows native numbers.
    asm.jump(BPF_JGE_K, X32_SYSCALL_BIT, To::Label(deny_label), To::Next);
    for nr in target.enosys_calls {
        asm.jump(BPF_JEQ_K, *nr, To::Label(enosys_label), To::Next);
    }

    let mut blocks = Vec::new();
    let mut entries = Vec::with_capacity(rules.len());
    for rule in rules {
        let nr = u32::try_from(rule.nr).map_err(|_| EmitError::SyscallNumber(rule.nr))?;
        let target = if rule.when.is_empty() {
            deny_label
        } else {
            let block = asm.label();
            blocks.push((block, rule));
            block
        };
        entries.push((nr, target));
    }
    entries.sort_unstable_by_key(|(nr, _)| *nr);
    emit_dispatch(&mut asm, &entries);

    for (block, rule) in blocks {
        asm.place(block);
        for alternative in &rule.when {
            let next = asm.label();
            for (i, (arg, cmp)) in alternative.iter().enumerate() {
                let pass =
                    if i + 1 == alternative.len() { To::Label(deny_label) } else { To::Next };
                if pass == To::Next && matches!(cmp, Cmp::NonNull) {
                    // NonNull's own chain needs a label to pass to.
                    let after = asm.label();
                    emit_test(&mut asm, *arg, *cmp, To::Label(after), To::Label(next));
                    asm.place(after);
                } else {
                    emit_test(&mut asm, *arg, *cmp, pass, To::Label(next));
                }
            }
            asm.place(next);
        }
        asm.ret(libc::SECCOMP_RET_ALLOW);
    }
    asm.place(deny_label);
    asm.ret(target.deny);
    asm.place(enosys_label);
    asm.ret(target.enosys);
    asm.finish()
}

#[cfg(test)]
#[path = "bpf_tests.rs"]
mod tests;

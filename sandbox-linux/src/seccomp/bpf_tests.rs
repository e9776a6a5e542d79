use super::*;
use crate::seccomp::{Network, deny_rules};

/// A classic-BPF interpreter for the instructions the emitter uses, run on a `seccomp_data`.
fn run(program: &[sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
    let word = |offset: u32| -> u32 {
        match offset {
            SECCOMP_DATA_NR => nr,
            SECCOMP_DATA_ARCH => arch,
            o if (SECCOMP_DATA_ARGS..SECCOMP_DATA_ARGS + 48).contains(&o) => {
                let i = ((o - SECCOMP_DATA_ARGS) / 8) as usize;
                if (o - SECCOMP_DATA_ARGS) % 8 == 0 {
                    args[i] as u32
                } else {
                    (args[i] >> 32) as u32
                }
            }
            other => panic!("load from unexpected offset {other}"),
        }
    };
    let (mut pc, mut acc) = (0usize, 0u32);
    loop {
        let insn = &program[pc];
        pc += 1;
        let jump = |taken: bool| if taken { usize::from(insn.jt) } else { usize::from(insn.jf) };
        match insn.code {
            BPF_LD_W_ABS => acc = word(insn.k),
            BPF_ALU_AND_K => acc &= insn.k,
            BPF_JEQ_K => pc += jump(acc == insn.k),
            BPF_JGE_K => pc += jump(acc >= insn.k),
            BPF_JSET_K => pc += jump(acc & insn.k != 0),
            BPF_RET_K => return insn.k,
            other => panic!("unexpected opcode {other:#x}"),
        }
    }
}

/// The table's meaning, evaluated directly.
fn reference(rules: &[DenyRule], nr: u32, args: [u64; 6]) -> bool {
    let holds = |arg: u8, cmp: Cmp| {
        let full = args[usize::from(arg)];
        let low = full as u32;
        match cmp {
            Cmp::Eq(v) => low == v,
            Cmp::Ne(v) => low != v,
            Cmp::AnyBits(mask) => low & mask != 0,
            Cmp::MaskedEq { mask, value } => low & mask == value,
            Cmp::NonNull => full != 0,
        }
    };
    rules.iter().filter(|r| r.nr == i64::from(nr)).any(|r| {
        r.when.is_empty() || r.when.iter().any(|alt| alt.iter().all(|(a, c)| holds(*a, *c)))
    })
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const DENY: u32 = 0x0005_0001;
const ENOSYS: u32 = 0x0005_0026;
const TARGET: Target =
    Target { audit_arch: 0xc000_003e, enosys_calls: &[435, 437], deny: DENY, enosys: ENOSYS };

fn interesting(rng: &mut Rng, rules: &[DenyRule]) -> u64 {
    // Values the table compares against, alone, with flag bits, with high bits; or noise.
    let constants: Vec<u64> = rules
        .iter()
        .flat_map(|r| r.when.iter().flatten())
        .map(|(_, cmp)| match *cmp {
            Cmp::Eq(v) | Cmp::Ne(v) | Cmp::AnyBits(v) => u64::from(v),
            Cmp::MaskedEq { value, .. } => u64::from(value),
            Cmp::NonNull => 0,
        })
        .collect();
    let base = match rng.next() % 4 {
        0 => rng.next(),
        1 => rng.next() % 16,
        _ => constants[(rng.next() as usize) % constants.len()],
    };
    match rng.next() % 4 {
        0 => base | (rng.next() << 32),
        1 => base | 0x80800, // SOCK_CLOEXEC | SOCK_NONBLOCK
        _ => base,
    }
}

/// The program denies the call exactly when the table does.
fn assert_decides_as_the_table(
    program: &[sock_filter],
    rules: &[DenyRule],
    nr: u32,
    args: [u64; 6],
    network: Network,
) {
    let expected = if reference(rules, nr, args) { DENY } else { libc::SECCOMP_RET_ALLOW };
    assert_eq!(
        run(program, nr, TARGET.audit_arch, args),
        expected,
        "{network:?} nr {nr} {args:x?}"
    );
}

#[test]
fn the_program_decides_exactly_what_the_table_says() {
    for network in [Network::Off, Network::On, Network::Proxied] {
        let rules = deny_rules(network);
        let program = emit(&rules, TARGET).unwrap();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut numbers: Vec<u32> = rules.iter().map(|r| r.nr as u32).collect();
        numbers.extend([0, 1, 2, 59, 60, 231, 334]);
        for _ in 0..20_000 {
            let nr = numbers[(rng.next() as usize) % numbers.len()];
            let args = std::array::from_fn(|_| interesting(&mut rng, &rules));
            assert_decides_as_the_table(&program, &rules, nr, args, network);
        }
    }
}

#[test]
fn every_syscall_number_is_dispatched_as_the_table_says() {
    // The binary search splits at rule numbers: every number (and the ones beside each rule's)
    // must land in the right leaf, with arguments that match no condition and ones that do.
    for network in [Network::Off, Network::On, Network::Proxied] {
        let rules = deny_rules(network);
        let program = emit(&rules, TARGET).unwrap();
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for nr in 0..1024u32 {
            if [435, 437].contains(&nr) {
                continue;
            }
            for round in 0..8 {
                let args = if round == 0 {
                    [0; 6]
                } else {
                    std::array::from_fn(|_| interesting(&mut rng, &rules))
                };
                assert_decides_as_the_table(&program, &rules, nr, args, network);
            }
        }
    }
}

/// The number of instructions a call with this number walks before its verdict or its block.
fn dispatch_steps(program: &[sock_filter], nr: u32) -> usize {
    let (mut pc, mut steps) = (0usize, 0usize);
    loop {
        let insn = &program[pc];
        steps += 1;
        pc += 1;
        let jump = |taken: bool| if taken { usize::from(insn.jt) } else { usize::from(insn.jf) };
        match insn.code {
            BPF_LD_W_ABS if insn.k == SECCOMP_DATA_ARCH => {}
            BPF_LD_W_ABS if insn.k == SECCOMP_DATA_NR => {}
            BPF_JEQ_K if pc == 2 => pc += jump(true), // the arch check: native
            BPF_JEQ_K => pc += jump(nr == insn.k),
            BPF_JGE_K => pc += jump(nr >= insn.k),
            // A return, or the first load of an argument: the dispatch is over.
            _ => return steps,
        }
    }
}

#[test]
fn the_dispatch_is_a_search_not_a_chain() {
    let rules = deny_rules(Network::Off);
    let program = emit(&rules, TARGET).unwrap();
    let longest = (0..512).map(|nr| dispatch_steps(&program, nr)).max().unwrap();
    // A chain would walk one `jeq` per rule for an allowed call.
    assert!(longest < 24, "{longest} steps for {} rules", rules.len());
}

#[test]
fn foreign_architectures_x32_numbers_and_clone3_are_refused() {
    let rules = deny_rules(Network::On);
    let program = emit(&rules, TARGET).unwrap();
    let i386 = 0x4000_0003;
    assert_eq!(run(&program, 359, i386, [0; 6]), libc::SECCOMP_RET_KILL_PROCESS);
    assert_eq!(run(&program, X32_SYSCALL_BIT | 41, TARGET.audit_arch, [0; 6]), DENY);
    assert_eq!(run(&program, 435, TARGET.audit_arch, [0; 6]), ENOSYS);
    assert_eq!(run(&program, 437, TARGET.audit_arch, [0; 6]), ENOSYS);
    assert_eq!(run(&program, 39, TARGET.audit_arch, [0; 6]), libc::SECCOMP_RET_ALLOW);
}

#[test]
fn the_program_is_a_fraction_of_the_generic_compilers_size() {
    for network in [Network::Off, Network::On, Network::Proxied] {
        let program = emit(&deny_rules(network), TARGET).unwrap();
        eprintln!("{network:?}: {} instructions", program.len());
        // seccompiler emitted 391 instructions for a smaller table than this one (which has
        // grown since by the host-process rules, about 12 instructions, and by the dispatch
        // tree's `jge`s and leaf returns, about 30).
        assert!(program.len() < 240, "{network:?}: {} instructions", program.len());
    }
}

#!/usr/bin/env bash
# Launch cost of `/bin/true` through cordon and its peers, in one hyperfine run:
# bare; cordon's helper (static and dynamic builds; with and without the mount view; with and
# without the PID + IPC namespaces); `cordon sandbox linux --full-auto`; `cordon exec -a never
# -s workspace-write` (also with the helper exec'd instead of run in cordon's forked child);
# bubblewrap (read-only root, one read-write directory, no network), with
# and without --unshare-pid --unshare-ipc; firejail --noprofile --net=none; and the floor, a
# static Rust program that only execv's its argument (glibc, and musl where rustc has it), and
# a static program with no libc at all that execve's it. Prints median, mean, × bare, × bubblewrap
# (with --unshare-pid --unshare-ipc, the reference the goals are stated against) and the peak
# RSS of the process tree (the largest process in it: cordon's front-end for `exec`/`sandbox`,
# the helper for the helper rows).
#
#   bash bench/compare.sh                     # 300 runs each, in 6 rounds (10 warm-up runs each)
#   RUNS=1000 bash bench/compare.sh --json results.json
#   SKIP_BUILD=1 bash bench/compare.sh        # the builds in target/ as they are
#   PRIVATE_TMP=1 bash bench/compare.sh       # with an empty /tmp (root; a private mount
#                                             # namespace with a fresh tmpfs there)
#
# /tmp is a writable root of the default policy, and cordon searches every writable root for
# git repositories before a run (their configs and hooks are kept read-only): each directory
# there costs a few microseconds per launch. The header says how many /tmp holds; a long-used
# machine's /tmp is the "at scale" case, PRIVATE_TMP=1 a fresh machine's.
#
# Installs hyperfine, bubblewrap, firejail and GNU time from Debian when they are missing (needs root).
set -euo pipefail
RUNS=${RUNS:-300}
WARMUP=${WARMUP:-10}
ROUNDS=${ROUNDS:-6}
json_out=
while [ $# -gt 0 ]; do
  case $1 in
    --json) json_out=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: $0 [--json FILE]" >&2; exit 2 ;;
  esac
done
if [ -n "${PRIVATE_TMP:-}" ] && [ -z "${CORDON_BENCH_PRIVATE_TMP_ENTERED:-}" ]; then
  export CORDON_BENCH_PRIVATE_TMP_ENTERED=1
  exec unshare -m --propagation private \
    sh -c 'mount -t tmpfs cordon-bench-tmp /tmp && exec bash "$0" "$@"' "$0" "$@"
fi
cd "$(dirname "$0")/.."

missing=()
command -v hyperfine >/dev/null || missing+=(hyperfine)
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v firejail >/dev/null || missing+=(firejail)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}" >&2
  apt-get install -y -q "${missing[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
fi

host=$(rustc -vV | sed -n 's/^host: //p')
if [ -z "${SKIP_BUILD:-}" ]; then
  cargo build --release -q -p cordon
  # Static-pie: no dynamic loader and no second libc start-up in the chain.
  RUSTFLAGS='-C target-feature=+crt-static' cargo build --release -q -p cordon --target "$host"
fi
dyn=$PWD/target/release/cordon
static=$PWD/target/$host/release/cordon

# Outside /tmp, a writable root of the policy measured: without the mount view the helper
# refuses to run from inside one (nothing else would keep its own executable from being
# replaced), and the rows would measure the scratch files' walk as well.
tmp=$(mktemp -d -p /var/tmp cordon-bench.XXXXXX)
# CORDON_HOME must not lie inside a writable root (and /tmp is one).
home=$(mktemp -d -p /var/tmp cordon-bench-home.XXXXXX)
trap 'rm -rf "$tmp" "$home"' EXIT
export CORDON_HOME="$home"
mkdir -p "$tmp/dyn" "$tmp/static" "$tmp/work"
work=$tmp/work
# The helper personality through a symlink, exactly as a caller that execs it directly.
ln -s "$dyn" "$tmp/dyn/codex-linux-sandbox"
ln -s "$static" "$tmp/static/codex-linux-sandbox"
# The floor: the least a helper that execs its command can cost.
cat >"$tmp/floor.rs" <<'RS'
use std::os::unix::process::CommandExt;
fn main() {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let error = std::process::Command::new(&args[0]).args(&args[1..]).exec();
    eprintln!("floor: {error}");
    std::process::exit(127);
}
RS
rustc -O -C panic=abort -C target-feature=+crt-static --target "$host" -o "$tmp/floor" "$tmp/floor.rs"
# The same program on musl, which skips glibc's start-up CPU-feature probe (CPUID, which traps
# to the hypervisor on a VM): how much of the floor is glibc's own start-up. Only where the
# target is installed (`rustup target add x86_64-unknown-linux-musl`).
musl_target=${host%-gnu}-musl
floor_musl=
if rustc -O -C panic=abort --target "$musl_target" -o "$tmp/floor-musl" "$tmp/floor.rs" 2>/dev/null; then
  floor_musl=$tmp/floor-musl
else
  echo "skipped floor: static musl execv: no $musl_target target for rustc" >&2
fi

# The same without any libc: a static program whose entry point execve's its argument with a
# raw syscall (x86_64, gcc). Beside the glibc floor it shows what one exec costs without a libc
# start-up, and so how much of every glibc program's start (cordon's, and /bin/true's own) is
# glibc probing the CPU (CPUID traps to the hypervisor on a VM: microseconds each, and glibc's
# cache-size probe issues dozens).
# Both C probes below are x86_64 programs built with gcc.
c_probes=
[ "$(uname -m)" = x86_64 ] && command -v gcc >/dev/null && c_probes=1
floor_nolibc=
if [ -n "$c_probes" ]; then
  cat >"$tmp/nolibc.c" <<'C'
__attribute__((naked, noreturn)) void _start(void) {
    __asm__ volatile("mov %rsp, %rdi\n\tand $-16, %rsp\n\tcall start_c\n\thlt");
}
__attribute__((used, noreturn)) void start_c(long *sp) {
    long argc = sp[0];
    char **argv = (char **)(sp + 1), **envp = argv + argc + 1;
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(59L), "D"(argv[1]), "S"(argv + 1), "d"(envp)
                     : "rcx", "r11", "memory");
    __asm__ volatile("syscall" : : "a"(60L), "D"(127L) : "rcx", "r11", "memory");
    for (;;) {}
}
C
  if gcc -O2 -static -nostdlib -fno-stack-protector -no-pie -o "$tmp/floor-nolibc" "$tmp/nolibc.c"; then
    floor_nolibc=$tmp/floor-nolibc
  fi
fi
[ -n "$floor_nolibc" ] || echo "skipped floor: no-libc execve: needs x86_64 and gcc" >&2
# What one CPUID instruction costs here (a trap to the hypervisor on a VM): the unit of glibc's
# start-up probe. Printed above the table.
cpuid_line=
if [ -n "$c_probes" ]; then
  cat >"$tmp/cpuid.c" <<'C'
#include <cpuid.h>
#include <stdio.h>
#include <time.h>
int main(void) {
    unsigned a, b, c, d;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 2000; i++) __cpuid_count(4, i % 4, a, b, c, d);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    printf("cpuid: %.2f us each (2000 in a loop; glibc's start-up issues dozens)\n", ns / 2000 / 1000);
    return (int)(a & 0);
}
C
  gcc -O2 -o "$tmp/cpuid" "$tmp/cpuid.c" && cpuid_line=$("$tmp/cpuid")
fi

names=()
commands=()
add() { names+=("$1"); commands+=("$2"); }
add "bare /bin/true" "/bin/true"
add "floor: static execv" "$tmp/floor /bin/true"
[ -n "$floor_musl" ] && add "floor: static musl execv" "$floor_musl /bin/true"
[ -n "$floor_nolibc" ] && add "floor: no-libc execve" "$floor_nolibc /bin/true"
policy='{"type":"workspace-write"}'
for build in static dyn; do
  helper="$tmp/$build/codex-linux-sandbox --sandbox-policy-cwd $work --sandbox-policy '$policy'"
  add "helper $build, mount view + PID/IPC ns" "$helper -- /bin/true"
  add "helper $build, mount view, --no-pid-namespace" "$helper --no-pid-namespace -- /bin/true"
  add "helper $build, --no-mount-view" "$helper --no-mount-view -- /bin/true"
done
add "cordon sandbox linux --full-auto (static)" "$static sandbox linux --full-auto -- /bin/true"
add "cordon exec -a never -s workspace-write (static)" \
  "$static exec -a never -s workspace-write -C $work -- /bin/true"
# The same, with the helper exec'd instead of run in cordon's forked child (a configured
# linux_sandbox_exe always takes the exec path): that lever, side by side.
add "cordon exec -a never -s workspace-write (static, helper exec'd)" \
  "$static exec -a never -s workspace-write -c linux_sandbox_exe=$static -C $work -- /bin/true"
add "cordon exec -a never -s workspace-write (dyn)" \
  "$dyn exec -a never -s workspace-write -C $work -- /bin/true"
add "bubblewrap" "bwrap --ro-bind / / --dev /dev --bind $work $work --unshare-net /bin/true"
add "bubblewrap + --unshare-pid --unshare-ipc" \
  "bwrap --ro-bind / / --dev /dev --bind $work $work --unshare-net --unshare-pid --unshare-ipc /bin/true"
add "firejail --noprofile --net=none" "firejail --quiet --noprofile --net=none /bin/true"

# hyperfine -N splits a command line as a shell would (quotes group words); the probe and the
# RSS runs split them the same way (shlex).
for i in "${!names[@]}"; do
  printf '%s\t%s\n' "${names[$i]}" "${commands[$i]}"
done >"$tmp/commands.tsv"
# A variant that cannot run here (a peer this kernel or container refuses) is left out, with
# the reason on stderr.
args=()
while IFS=$'\t' read -r name command; do
  args+=(-n "$name" "$command")
done < <(cd "$work" && python3 - "$tmp/commands.tsv" <<'PY'
import shlex, subprocess, sys
for line in open(sys.argv[1]):
    name, command = line.rstrip("\n").split("\t", 1)
    run = subprocess.run(shlex.split(command), capture_output=True, text=True)
    if run.returncode == 0:
        print(f"{name}\t{command}")
    else:
        why = (run.stderr.strip().splitlines() or [f"exit {run.returncode}"])[0]
        print(f"skipped {name}: {why}", file=sys.stderr)
PY
)

cd "$work"
# hyperfine runs one variant after the other, and this VM's speed drifts by 10-30 % over the
# minutes that takes, which would show up as differences between rows. So the runs are split
# into ROUNDS hyperfine invocations, each over every variant in a new random order, and the
# times of all rounds are pooled per variant: drift then hits every row alike.
rounds=$ROUNDS
per_round=$(( (RUNS + rounds - 1) / rounds ))
pairs=$(( ${#args[@]} / 3 ))
for round in $(seq "$rounds"); do
  shuffled=()
  for i in $(seq 0 $((pairs - 1)) | shuf); do
    shuffled+=("${args[@]:$((i * 3)):3}")
  done
  hyperfine -N --warmup "$WARMUP" --runs "$per_round" --export-json "$tmp/hyperfine-$round.json" \
    "${shuffled[@]}" >/dev/null
done

# Peak RSS: wait4's rusage of the top process covers it and every descendant it waited for;
# the largest of them is the front-end (or the helper, in the helper rows). Median of 20 runs.
[ -z "$cpuid_line" ] || echo "$cpuid_line"
python3 - "$tmp/hyperfine.json" "$tmp/commands.tsv" "$json_out" <<'PY'
import glob, json, os, platform, shlex, statistics, subprocess, sys, tempfile

# Every round's times, pooled per variant, in the order of commands.tsv.
pooled = {}
for path in sorted(glob.glob(os.path.join(os.path.dirname(sys.argv[1]), "hyperfine-*.json"))):
    for r in json.load(open(path))["results"]:
        pooled.setdefault(r["command"], []).extend(r["times"])
order = [line.split("\t", 1)[0] for line in open(sys.argv[2])]
results = [{"command": name, "median": statistics.median(pooled[name]),
            "mean": statistics.mean(pooled[name]), "stddev": statistics.pstdev(pooled[name])}
           for name in order if name in pooled]
commands = dict(line.rstrip("\n").split("\t", 1) for line in open(sys.argv[2]))

def peak_rss_kib(command):
    # Through GNU time: a child forked from this Python would carry Python's own peak into
    # its rusage (the kernel keeps the high-water mark of the memory an exec replaces).
    samples = []
    with tempfile.NamedTemporaryFile(mode="r") as out:
        for _ in range(20):
            subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name, *shlex.split(command)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            out.seek(0)
            samples.append(int(out.read().split()[-1]))
    return statistics.median(samples)

def tmp_directories():
    # What the search for repositories in /tmp walks: it skips .git and node_modules.
    count = 0
    for _, dirs, _ in os.walk("/tmp"):
        dirs[:] = [d for d in dirs if d not in (".git", "node_modules")]
        count += 1
    return count

def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()

machine = {
    "nproc": os.cpu_count(),
    "cpu": cpu_model(),
    "kernel": platform.release(),
    "load": open("/proc/loadavg").read().split()[:3],
    "tmp_directories": tmp_directories(),
}
base = results[0]["median"]
# The C reference the goals are stated against, measured in the same rounds.
reference = next((r["median"] for r in results
                  if r["command"] == "bubblewrap + --unshare-pid --unshare-ipc"), None)
rows = []
for r in results:
    rows.append({
        "name": r["command"],
        "command": commands[r["command"]],
        "median_ms": r["median"] * 1e3,
        "mean_ms": r["mean"] * 1e3,
        "stddev_ms": r["stddev"] * 1e3,
        "x_bare": r["median"] / base,
        "x_bwrap": r["median"] / reference if reference else None,
        "peak_rss_kib": peak_rss_kib(commands[r["command"]]),
    })
print(f"machine: {machine['nproc']} x {machine['cpu']}, Linux {machine['kernel']}, "
      f"load {' '.join(machine['load'])} (before the RSS runs); "
      f"/tmp holds {machine['tmp_directories']} directories")
print(f"{'variant':<62} {'median':>9} {'mean':>9} {'x bare':>7} {'x bwrap':>8} {'peak RSS':>9}")
for row in rows:
    x_bwrap = f"{row['x_bwrap']:>8.2f}" if row["x_bwrap"] else f"{'-':>8}"
    print(f"{row['name']:<62} {row['median_ms']:>7.3f}ms {row['mean_ms']:>7.3f}ms "
          f"{row['x_bare']:>7.2f} {x_bwrap} {row['peak_rss_kib'] / 1024:>6.1f}MiB")
print("x bwrap: against bubblewrap + --unshare-pid --unshare-ipc in the same rounds; the mount "
      "table's effect: bench/mounts.sh")
if sys.argv[3]:
    with open(sys.argv[3], "w") as f:
        json.dump({"machine": machine, "results": rows}, f, indent=2)
PY

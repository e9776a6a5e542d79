#!/usr/bin/env bash
# The test suite on real kernels: boots each kernel under qemu (KVM when /dev/kvm works, TCG
# otherwise) and runs the prebuilt test binaries inside, as root (the e2e suite runs its
# uid-65534 variants through setpriv) plus tests/kernels/expect.sh (per-kernel expectations,
# as root and as uid 65534). See docs/kernels.md.
#
#   tests/kernels/run.sh [--budget MINUTES] [SPEC…]
#                                  (default: 6.1 6.1:no-landlock 6.1:no-userns native)
#
# SPEC is KERNEL[:VARIANT]. KERNEL: `6.1` (the 6.1 kernel Debian bookworm's linux-image-amd64
# depends on), a Debian package name (`linux-image-6.1.0-56-amd64-unsigned`), or `native` (this
# machine's kernel: the binaries run directly, no VM). VARIANT: `default` (the kernel as
# shipped), `no-landlock` (boots with the package's CONFIG_LSM minus landlock: Landlock compiled
# in, not enabled), `no-userns` (unprivileged user namespaces off by sysctl inside the VM).
#
# The VM's root is the host's / shared read-only over virtio-9p (so the host's python3,
# setpriv, attr, git… and the build tree are there at the same paths), with tmpfs on /tmp,
# /root and /run, an ext4 scratch disk on /var/tmp and the run's output directory on /mnt.
# Needs root (it installs qemu-system-x86, busybox-static, cpio and kmod with apt-get, and
# downloads the kernel package with `apt-get download` into $CORDON_KERNELS_CACHE).
#
# Output: one line per kernel, `kernel SPEC (…): N passed, N failed, …`, then
# `kernels: N passed, N failed`; logs in $CORDON_KERNELS_OUT (default target/kernels/SPEC/).
# A table of what each policy gets on each kernel (from the doctor JSON, tests/kernels/table.py)
# goes to kernel-support.md there. Exit status 0 only when every kernel passed.
#
# CORDON_KERNELS_FILTER="NAME…": only the tests whose names contain one of these (libtest
# filters), e.g. to rerun a failure quickly; the per-kernel expectations still run.
#
# --budget MINUTES: run only the VM kernels that fit (estimated from whether KVM works and the
# number of CPUs; in SPEC order), print the ones left out and the command that runs them. The
# budget is also a deadline: a kernel is started only while its estimate still fits in what is
# left, and a VM still running when the budget is spent is stopped; its tests that finished are
# counted, it is named as stopped at the deadline with the command that runs it, and it fails
# the run only when one of its finished tests failed (a slow machine is not a failing kernel).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/tests/kernels
out_root=${CORDON_KERNELS_OUT:-$repo/target/kernels}
cache=${CORDON_KERNELS_CACHE:-/var/cache/cordon-kernels}
timeout_s=${CORDON_KERNELS_TIMEOUT:-1800}
budget= deadline=
if [ "${1:-}" = --budget ]; then
  budget=$2
  case "$budget" in '' | *[!0-9]*) echo "run.sh: --budget takes whole minutes, not '$budget'" >&2; exit 2 ;; esac
  deadline=$(($(date +%s) + budget * 60))
  shift 2
fi
[ $# -gt 0 ] || set -- 6.1 6.1:no-landlock 6.1:no-userns native
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (apt-get, the suite's uid-65534 variants)" >&2; exit 2; }

log() { echo "kernels: $*" >&2; }

# --- host packages --------------------------------------------------------------------------
need_vm=
for spec in "$@"; do [ "${spec%%:*}" = native ] || need_vm=1; done
pkgs=(python3 attr util-linux bsdutils keyutils gcc libc6-dev git procps findutils)
[ -z "$need_vm" ] || pkgs+=(qemu-system-x86 busybox-static cpio kmod e2fsprogs)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- the test binaries, built once on the host ------------------------------------------------
mkdir -p "$out_root"
list=$out_root/tests.list
log "building the test binaries (cargo test --workspace --no-run)"
(cd "$repo" && cargo test --workspace --no-run --message-format=json 2>"$out_root/build.log") | python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        name = m["target"]["name"]
        if m["target"]["kind"] != ["test"]:
            name += " (unit)"
        print(name, m["executable"], os.path.dirname(m["manifest_path"]), sep="\t")
' >"$list"
cordon_bin=$repo/target/debug/cordon
if [ ! -x "$cordon_bin" ] || ! cut -f1 "$list" | grep -qx e2e; then
  tail -n 30 "$out_root/build.log" >&2
  log "the build did not produce target/debug/cordon and the e2e suite"
  exit 1
fi

# --- kernels ----------------------------------------------------------------------------------
# kernel_dir PACKAGE: the package unpacked under $cache (vmlinuz, config, modules + modules.dep).
kernel_dir() {
  local pkg=$1 dir=$cache/$1
  if [ ! -e "$dir/.done" ]; then
    log "downloading $pkg"
    rm -rf "$dir"
    mkdir -p "$dir"
    (cd "$dir" && apt-get download "$pkg" >/dev/null 2>&1) \
      || (apt-get update -qq && cd "$dir" && apt-get download "$pkg" >/dev/null)
    dpkg-deb -x "$dir"/*.deb "$dir/root"
    rm -f "$dir"/*.deb
    depmod -b "$dir/root" "$(ls "$dir/root/lib/modules")"
    touch "$dir/.done"
  fi
  echo "$dir"
}

# resolve KERNEL: a package name.
resolve() {
  case "$1" in
    6.1)
      local dep
      dep=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-6\.1\.[^ ]*\)$/\1/p' | head -n 1)
      [ -n "$dep" ] || { log "apt has no linux-image-amd64 depending on a 6.1 kernel (not Debian bookworm?); name a package instead"; return 1; }
      echo "${dep}-unsigned"
      ;;
    linux-image-*) echo "$1" ;;
    *) log "unknown kernel $1"; return 1 ;;
  esac
}

# initramfs KDIR OUT: busybox, the modules for virtio-pci, 9p, ext4, fuse (the stalled-start
# test mounts a FUSE file system that never answers) and overlay (transactional writes, which a
# distribution loads on first use; in load order), init.
initramfs() {
  local kdir=$1 dest=$2 tmp ver m
  ver=$(ls "$kdir/root/lib/modules")
  tmp=$(mktemp -d)
  mkdir -p "$tmp"/{bin,dev,proc,sys,modules,newroot}
  cp /bin/busybox "$tmp/bin/busybox"
  cp "$here/init.sh" "$tmp/init"
  chmod 755 "$tmp/init"
  : >"$tmp/modules.list"
  for m in virtio_pci 9pnet_virtio 9p virtio_blk ext4 fuse overlay; do
    modprobe -d "$kdir/root" -S "$ver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
  done | awk '!seen[$0]++' | while read -r m; do
    cp "$m" "$tmp/modules/"
    basename "$m" >>"$tmp/modules.list"
  done
  (cd "$tmp" && find . | cpio -o -H newc --quiet) >"$dest"
  rm -rf "$tmp"
}

# KVM when it can boot a stock kernel: /dev/kvm may exist and still refuse (a nested host that
# does not pass MSRs through, or a paravirtual KVM such as PVM that runs only kernels built for
# it), so boot the first kernel once with a tiny init and look for its line on the console.
accel=(-accel tcg,thread=multi -cpu max)
accel_name=TCG
kvm_works() {
  [ -r /dev/kvm ] && [ -w /dev/kvm ] || { log "no usable /dev/kvm: TCG"; return 1; }
  local kdir=$1 ver tmp
  ver=$(ls "$kdir/root/lib/modules")
  tmp=$(mktemp -d)
  mkdir -p "$tmp/img/bin" "$tmp/img/proc"
  cp /bin/busybox "$tmp/img/bin/busybox"
  printf '#!/bin/busybox sh\n/bin/busybox mount -t proc proc /proc\necho cordon-kvm-ok\necho o >/proc/sysrq-trigger\n' >"$tmp/img/init"
  chmod 755 "$tmp/img/init"
  (cd "$tmp/img" && find . | cpio -o -H newc --quiet) >"$tmp/initrd"
  # In a subshell: a qemu that aborts is an answer, not a message for the log.
  (timeout 60 qemu-system-x86_64 -enable-kvm -cpu host -m 512 -nographic -no-reboot -nodefaults \
    -serial stdio -kernel "$kdir/root/boot/vmlinuz-$ver" -initrd "$tmp/initrd" \
    -append "console=ttyS0 panic=-1 quiet" </dev/null >"$tmp/console" 2>&1; :) 2>/dev/null
  if grep -q cordon-kvm-ok "$tmp/console"; then
    rm -rf "$tmp"
    return 0
  fi
  log "KVM cannot boot $ver here ($(grep -m1 -iE 'error|assert' "$tmp/console" | tr -d '\r' || echo 'no console output within 60 s')$([ -d /sys/module/kvm_pvm ] && echo '; the host KVM is PVM')): TCG"
  rm -rf "$tmp"
  return 1
}
kvm_probed=

# Minutes one VM kernel takes (measured on a 2-CPU machine: about 2-3 with KVM; with TCG about
# 30 for a kernel with Landlock, whose sandbox tests all run, and 11 without it, where they
# skip). per_spec gives one spec's.
estimate() { # sets per and per_no_landlock (and settles KVM or TCG for the run)
  local first= kdir
  for spec in "$@"; do [ "${spec%%:*}" = native ] || { first=${spec%%:*}; break; }; done
  kdir=$(kernel_dir "$(resolve "$first")")
  kvm_probed=1
  if kvm_works "$kdir"; then
    accel=(-enable-kvm -cpu host) accel_name=KVM per=3 per_no_landlock=3
  else
    per=$((60 / $(nproc) + 1)) per_no_landlock=$((22 / $(nproc) + 1))
  fi
}
per_spec() { case "$1" in *:no-landlock) echo "$per_no_landlock" ;; *) echo "$per" ;; esac; }
if [ -n "$budget" ] && [ -n "$need_vm" ]; then
  estimate "$@"
  kept=() left=() used=0
  for spec in "$@"; do
    if [ "${spec%%:*}" = native ]; then kept+=("$spec"); continue; fi
    this=$(per_spec "$spec")
    if [ $((used + this)) -le "$budget" ]; then kept+=("$spec") used=$((used + this)); else left+=("$spec"); fi
  done
  log "budget $budget min, about $per min per VM kernel ($per_no_landlock without Landlock; $accel_name): running ${kept[*]:-nothing}, about $used min"
  if [ ${#left[@]} -gt 0 ]; then
    log "left out to stay within the budget: ${left[*]} — run them with: sudo tests/kernels/run.sh ${left[*]}"
  fi
  set -- ${kept[@]+"${kept[@]}"}
fi

total_p=0 total_f=0 status=0
summary=() dirs=() stopped=()
for spec in "$@"; do
  kernel=${spec%%:*}
  vm_timeout=$timeout_s
  if [ -n "$deadline" ] && [ "$kernel" != native ]; then
    left_s=$((deadline - $(date +%s)))
    if [ "$left_s" -lt 60 ] || [ $((left_s / 60)) -lt "$(per_spec "$spec")" ]; then
      log "left out: $spec needs about $(per_spec "$spec") min, $((left_s / 60)) min of the budget are left — run it with: sudo tests/kernels/run.sh $spec"
      continue
    fi
    [ "$left_s" -ge "$vm_timeout" ] || vm_timeout=$left_s
  fi
  variant=default
  [ "$spec" = "$kernel" ] || variant=${spec#*:}
  case "$variant" in default | no-landlock | no-userns) ;; *) log "unknown variant $variant"; exit 2 ;; esac
  out=$out_root/${spec//:/-}
  rm -rf "$out"
  mkdir -p "$out"
  cp "$list" "$out/tests.list"
  echo "$cordon_bin" >"$out/cordon"
  echo "${CORDON_KERNELS_FILTER:-}" >"$out/filter"
  t0=$(date +%s)
  if [ "$kernel" = native ]; then
    [ "$variant" = default ] || { log "native runs only as it is"; exit 2; }
    label="native $(uname -r)"
    bash "$here/guest.sh" native "$out" | tee "$out/console.log" | grep '^@@ ' >&2 || true
  else
    pkg=$(resolve "$kernel")
    kdir=$(kernel_dir "$pkg")
    ver=$(ls "$kdir/root/lib/modules")
    lsm=$(sed -n 's/^CONFIG_LSM="\(.*\)"$/\1/p' "$kdir/root/boot/config-$ver")
    append="console=ttyS0 panic=-1 quiet loglevel=3 cordon.variant=$variant"
    case "$variant" in
      no-landlock)
        lsm=$(tr ',' '\n' <<<"$lsm" | grep -vx landlock | paste -sd, -)
        append+=" lsm=$lsm"
        ;;
    esac
    label="Debian $ver, $variant"
    if [ -z "$kvm_probed" ]; then
      kvm_probed=1
      if kvm_works "$kdir"; then accel=(-enable-kvm -cpu host) accel_name=KVM; fi
    fi
    label+=", $accel_name"
    [ "$accel_name" = KVM ] || touch "$out/tcg"
    initramfs "$kdir" "$out/initrd.cpio"
    # The scratch disk for /var/tmp: ext4, sparse.
    truncate -s 4G "$out/scratch.img"
    mkfs.ext4 -q -F -E root_owner=0:0 "$out/scratch.img"
    cat >"$out/job.sh" <<EOF
#!/bin/sh
/bin/bash $here/guest.sh $variant /mnt --vm >/mnt/console-job.log 2>&1
grep '^@@ ' /mnt/console-job.log
echo o >/proc/sysrq-trigger
sleep 30
EOF
    log "booting $ver ($variant, $accel_name; CONFIG_LSM=\"$(sed -n 's/^CONFIG_LSM="\(.*\)"$/\1/p' "$kdir/root/boot/config-$ver")\")"
    timeout "$vm_timeout" qemu-system-x86_64 "${accel[@]}" -m 3072 -smp "$(nproc)" \
      -nographic -no-reboot -nodefaults -serial stdio \
      -kernel "$kdir/root/boot/vmlinuz-$ver" -initrd "$out/initrd.cpio" -append "$append" \
      -drive "file=$out/scratch.img,format=raw,if=virtio" \
      -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
      -virtfs "local,path=$out,mount_tag=out,security_model=none" \
      </dev/null >"$out/console.log" 2>&1 || true
    rm -f "$out/scratch.img"
    grep -E '^@@ |cordon-vm:|Kernel panic' "$out/console.log" | tr -d '\r' >&2 || true
  fi
  wall=$(($(date +%s) - t0))
  was_stopped=
  echo "$spec ($label)" >"$out/label"
  dirs+=("$out")
  if [ -s "$out/result" ]; then
    read -r p f s boot suite xf <"$out/result"
  elif [ "$vm_timeout" -lt "$timeout_s" ] && [ "$(date +%s)" -ge "$deadline" ]; then
    # Stopped by the budget, not by the kernel: count the tests that finished (the binary that
    # was running included) and fail only on a failure that was neither expected nor passed on
    # its second run.
    finished=$(cat "$out/suite.log" 2>/dev/null; grep -q '^test result:' "$out/binary.log" 2>/dev/null || cat "$out/binary.log" 2>/dev/null || true)
    p=$(grep -cE '^test .* \.\.\. ok' <<<"$finished" || true)
    failed=$(sed -nE 's/^test (.*) \.\.\. FAILED.*/\1/p' <<<"$finished" | sort -u \
      | grep -vxF -f <(cat "$out/passed-on-retry" "$here/expected-fail-$variant.txt" 2>/dev/null; echo ' ') || true)
    f=$(grep -c . <<<"$failed" || true)
    s=0 boot=? suite=? xf=0
    stopped+=("$spec") was_stopped=1
    log "$spec: stopped at the end of the budget after $p tests passed and $f failed — the rest: sudo tests/kernels/run.sh $spec"
    [ -z "$failed" ] || sed 's/^/kernels:   failed: /' <<<"$failed" >&2
  else
    p=0 f=1 s=0 boot=? suite=? xf=0
    log "$spec: no result (see $out/console.log)"
    # The VM was stopped (the timeout) or died: say how far the suite got, from what it had
    # written to the output directory, so the next run knows what to look at.
    if [ -s "$out/suite.log" ] || [ -s "$out/binary.log" ]; then
      done_bins=$(grep -c '^test result:' "$out/suite.log" 2>/dev/null || true)
      done_n=$(grep -cE '^test .* \.\.\. ' "$out/suite.log" 2>/dev/null || true)
      running_n=$(grep -cE '^test .* \.\.\. ' "$out/binary.log" 2>/dev/null || true)
      log "$spec: ${done_bins:-0} test binaries finished (${done_n:-0} tests); the last one had finished ${running_n:-0}:"
      grep -E '^test .* \.\.\. ' "$out/binary.log" 2>/dev/null | tail -n 3 | sed 's/^/kernels:   last finished: /' >&2 || true
      grep -E '^test .* \.\.\. FAILED' "$out/binary.log" "$out/suite.log" 2>/dev/null | sed 's/^[^:]*:/kernels:   failed: /' >&2 || true
      sed -nE 's/^test (.*) \.\.\. [A-Za-z]+ <([0-9.]+)s>$/\2 \1/p' "$out/suite.log" "$out/binary.log" 2>/dev/null \
        | sort -rn | head -n 10 | sed 's/^/kernels:   slowest: /' >&2 || true
    fi
  fi
  total_p=$((total_p + p)) total_f=$((total_f + f))
  [ "$f" = 0 ] || status=1
  xf_text=
  [ "${xf:-0}" = 0 ] || xf_text=", $xf expected to fail"
  stop_text=
  [ -z "$was_stopped" ] || stop_text=", stopped at the end of the budget"
  summary+=("kernel $spec ($label): $p passed, $f failed, $s skipped$xf_text$stop_text (boot ${boot}s, suite ${suite}s, wall ${wall}s)")
done
[ ${#dirs[@]} -eq 0 ] || python3 "$here/table.py" "${dirs[@]}" >"$out_root/kernel-support.md"
[ ${#dirs[@]} -eq 0 ] || log "what each policy gets on each kernel: $out_root/kernel-support.md"
[ ${#summary[@]} -eq 0 ] || printf '%s\n' "${summary[@]}"
if [ ${#stopped[@]} -gt 0 ]; then
  echo "kernels: $total_p passed, $total_f failed; stopped at the end of the budget: ${stopped[*]}"
else
  echo "kernels: $total_p passed, $total_f failed"
fi
exit "$status"

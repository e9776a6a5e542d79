#!/usr/bin/env bash
# The test run on one kernel, as root: inside the VM (run.sh boots it with this as the job) or
# natively. Writes into OUT: doctor-{root,nobody}.{json,txt} (`cordon doctor` as root and as
# uid 65534), suite.log (every test binary's output), expect.log (tests/kernels/expect.sh) and
# result (`PASSED FAILED SKIPPED BOOT_SECONDS SUITE_SECONDS`).
#
#   tests/kernels/guest.sh VARIANT OUT [--vm]
#
# OUT/tests.list names the prebuilt test binaries, one `NAME<TAB>EXECUTABLE<TAB>CRATE_DIR` a line
# (the e2e suite among them); OUT/cordon names the cordon binary. VARIANT `default` and `native`
# run the suite with CORDON_TEST_REQUIRE_SANDBOX=1 (a skip fails); `no-landlock` and `no-userns`
# take features away on purpose, so the suite runs without it (its skips are counted and
# listed) and expect.sh asserts what cordon must do there instead.
set -uo pipefail
variant=$1 out=$2 vm=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LANG=C.UTF-8

if [ "$vm" = --vm ]; then
  boot=$(cut -d' ' -f1 /proc/uptime)
  export HOME=/root
  mkdir -p /dev/pts /dev/shm
  mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts /dev/pts
  mount -t tmpfs -o mode=1777 tmpfs /dev/shm
  mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
  mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
  # What udev and systemd-tmpfiles create on a normal boot (devtmpfs has none of them).
  ln -sfn /proc/self/fd /dev/fd
  ln -sf /proc/self/fd/0 /dev/stdin
  ln -sf /proc/self/fd/1 /dev/stdout
  ln -sf /proc/self/fd/2 /dev/stderr
  ln -sf /proc/kcore /dev/core
  case "$variant" in
    no-userns)
      # Debian's own knob when the kernel has it (root keeps its namespaces), else the
      # upstream limit.
      if [ -w /proc/sys/kernel/unprivileged_userns_clone ]; then
        echo 0 >/proc/sys/kernel/unprivileged_userns_clone
        echo "@@ sysctl kernel.unprivileged_userns_clone=0"
      else
        echo 0 >/proc/sys/user/max_user_namespaces
        echo "@@ sysctl user.max_user_namespaces=0"
      fi
      ;;
  esac
else
  boot=0
fi

echo "@@ kernel $(uname -r); lsm: $(cat /sys/kernel/security/lsm 2>/dev/null || echo '?')"
echo "@@ cmdline: $(cat /proc/cmdline)"
cordon=$(cat "$out/cordon")
nobody_bin=$(mktemp -d /tmp/cordon-doctor.XXXXXX)
chmod 755 "$nobody_bin"
cp "$cordon" "$nobody_bin/cordon"
chmod 755 "$nobody_bin/cordon"
for fmt in json txt; do
  flag=
  [ $fmt = json ] && flag=--json
  "$cordon" doctor $flag >"$out/doctor-root.$fmt" 2>&1
  echo "$?" >"$out/doctor-root.rc"
  (cd / && setpriv --reuid=65534 --regid=65534 --clear-groups -- env HOME=/nonexistent \
    "$nobody_bin/cordon" doctor $flag >"$out/doctor-nobody.$fmt" 2>&1)
  echo "$?" >"$out/doctor-nobody.rc"
done
rm -rf "$nobody_bin"
python3 - "$out" <<'EOF'
import json, sys
for who in ("root", "nobody"):
    try:
        d = json.load(open(f"{sys.argv[1]}/doctor-{who}.json"))
    except Exception as e:
        print(f"@@ doctor as {who}: unreadable ({e})")
        continue
    k = d["kernel"]
    print(f"@@ doctor as {who}: Landlock ABI {k['landlock_abi']}, seccomp {k['seccomp_filter']}, "
          f"mount view {k['mount_view']}, enforceable {d['default_policy_enforceable']}")
    for c in d["causes"]:
        print(f"@@   cause ({c['mechanism']}): {c['why']}")
    # The kernel-dependent part of the report, kept in the log as one line of JSON.
    keep = {k: d[k] for k in ("kernel", "causes", "default_policy_enforceable", "modes")}
    print(f"@@ doctor --json as {who}: {json.dumps(keep, separators=(',', ':'))}")
EOF

require=
case "$variant" in default | native) require=1 ;; esac
# Under TCG (no usable KVM) everything runs 10-30 times slower: the tests that measure wall
# clock time or give a command a fixed few hundred milliseconds to start cannot pass there.
# They are named in tcg-skip.txt, skipped (and counted as such), and run natively and under KVM.
skip_args=()
# Wall-clock bounds in the suite are multiplied by this (tests/suite/util.rs `scaled`).
scale=1
[ -e "$out/tcg" ] && scale=10
# run.sh's CORDON_KERNELS_FILTER: libtest name filters, to run part of the suite.
filter=()
[ -s "$out/filter" ] && read -r -a filter <"$out/filter"
if [ -e "$out/tcg" ]; then
  while read -r name _; do
    case "$name" in '' | '#'*) continue ;; esac
    skip_args+=(--skip "$name")
    echo "SKIPPED: under TCG: $name" >>"$out/tcg-skipped.log"
  done <"$here/tcg-skip.txt"
fi
start=$(date +%s)
: >"$out/suite.log"
while IFS=$'\t' read -r name exe dir; do
  [ -n "$name" ] || continue
  echo "@@ running $name"
  echo "===== $name ($exe)" >>"$out/suite.log"
  # Output through a pipe, as under `cargo test` (a test binary's stdout is part of what some
  # tests look at: a regular file there is a file the sandbox lets the command reopen).
  # Each test's time is printed after its result (`ok <12.345s>`; libtest's --report-time,
  # unlocked by RUSTC_BOOTSTRAP for the test binary only): what to weigh before adding to
  # tcg-skip.txt. slowest.log lists the twenty slowest.
  (cd "$dir" && env ${require:+CORDON_TEST_REQUIRE_SANDBOX=1} CORDON_TEST_REQUIRE_CGROUP=1 CORDON_TEST_TIME_SCALE=$scale \
    RUSTC_BOOTSTRAP=1 "$exe" -Zunstable-options --report-time \
    --show-output ${filter[@]+"${filter[@]}"} ${skip_args[@]+"${skip_args[@]}"} 2>&1) \
    | cat >"$out/binary.log"
  cat "$out/binary.log" >>"$out/suite.log"
  grep '^test result:' "$out/binary.log" | tail -n 1 | sed "s/^/@@ $name: /"
  # Under TCG a machine-wide stall (the host is busy, the emulator is 10-30 times slower) can
  # still miss a scaled bound: a failed test gets one second run, alone, and both results are
  # printed. A test that fails twice fails the run.
  if [ -e "$out/tcg" ]; then
    grep -E '^test .* FAILED( <[0-9.]+s>)?$' "$out/binary.log" | while read -r _ test _; do
      grep -qx "$test" "$here/expected-fail-$variant.txt" 2>/dev/null && continue
      if (cd "$dir" && env ${require:+CORDON_TEST_REQUIRE_SANDBOX=1} CORDON_TEST_REQUIRE_CGROUP=1 CORDON_TEST_TIME_SCALE=$scale \
        "$exe" --show-output --exact "$test" 2>&1) >>"$out/retry.log" \
        && tail -n 5 "$out/retry.log" | grep -q '^test result: ok. 1 passed'; then
        echo "$test" >>"$out/passed-on-retry"
        echo "@@ failed once under TCG, passed on a second run: $test"
      fi
    done
  fi
done <"$out/tests.list"
sed -nE 's/^test (.*) \.\.\. [A-Za-z]+ <([0-9.]+)s>$/\2 \1/p' "$out/suite.log" | sort -rn | head -n 20 >"$out/slowest.log"
bash "$here/expect.sh" "$cordon" "$variant" >"$out/expect.log" 2>&1
grep -E '^(facts|expect FAILED|    |expectations)' "$out/expect.log" | sed 's/^/@@ /'
suite=$(($(date +%s) - start))

read -r p f < <(awk '
  /^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
  /^expectations:/ { p += $2; f += $4 }
  END { print p + 0, f + 0 }' "$out/suite.log" "$out/expect.log")
# A test binary that crashed prints no result line: count it as a failure.
binaries=$(grep -c . "$out/tests.list")
results=$(grep -c '^test result:' "$out/suite.log")
[ "$results" = "$binaries" ] || f=$((f + binaries - results))
grep -q '^expectations:' "$out/expect.log" || f=$((f + 1))
# Tests this variant takes the ground from under on purpose (expected-fail-VARIANT.txt).
xfail=0
if [ -e "$here/expected-fail-$variant.txt" ]; then
  while read -r name _; do
    case "$name" in '' | '#'*) continue ;; esac
    if grep -qE "^test $name \.\.\. FAILED( <[0-9.]+s>)?\$" "$out/suite.log"; then
      xfail=$((xfail + 1))
      echo "@@ expected to fail here: $name"
    fi
  done <"$here/expected-fail-$variant.txt"
  f=$((f - xfail))
fi
retried=0
[ -e "$out/passed-on-retry" ] && retried=$(grep -c . "$out/passed-on-retry")
p=$((p + retried)) f=$((f - retried))
grep -E '^test .* FAILED( <[0-9.]+s>)?$' "$out/suite.log" | sort | while read -r _ name _; do
  grep -qx "$name" "$here/expected-fail-$variant.txt" 2>/dev/null \
    || grep -qxF "$name" "$out/passed-on-retry" 2>/dev/null || echo "@@ FAILED: $name"
done
skipped=$(cat "$out/suite.log" "$out/tcg-skipped.log" 2>/dev/null | grep -c '^SKIPPED:')
cat "$out/suite.log" "$out/tcg-skipped.log" 2>/dev/null | grep '^SKIPPED:' | sort | uniq -c | sed 's/^/@@ /'
echo "$p $f $skipped $boot $suite $xfail" >"$out/result"
echo "@@ done: $p passed, $f failed, $skipped skipped, $xfail expected to fail"

#!/usr/bin/env bash
# Where the resident memory of `cordon exec` (and of the helper it runs) goes: the peak RSS that
# bench/compare.sh reports, split by mapping (cordon's own binary, libc, the heap, stacks) and
# into file-backed pages (page cache, shared by every cordon process) and anonymous ones (this
# process's own memory).
#
#   bash bench/rss.sh [CORDON]        # default target/release/cordon (built when missing)
#
# The command is `sleep 1`, so that the processes can be looked at while it runs; bubblewrap
# (`--unshare-pid --unshare-ipc`, when installed) is measured the same way beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
cordon=${1:-target/release/cordon}
[ -x "$cordon" ] || cargo build --release -q -p cordon
cordon=$(realpath "$cordon")
work=$(mktemp -d -p /var/tmp cordon-rss.XXXXXX)
home=$(mktemp -d -p /var/tmp cordon-rss-home.XXXXXX)
trap 'rm -rf "$work" "$home"' EXIT

# Prints the RSS of pid $2 labelled $1: total, anonymous, file-backed, and the largest mappings.
report() {
  local label=$1 pid=$2
  python3 - "$label" "$pid" <<'PY'
import collections, sys
label, pid = sys.argv[1], sys.argv[2]
by_name = collections.Counter()
anon = total = 0
name = None
try:
    lines = open(f"/proc/{pid}/smaps").readlines()
except OSError:
    sys.exit(0)
for line in lines:
    fields = line.split()
    if "-" in fields[0] and len(fields) >= 5 and ":" not in fields[0]:
        name = fields[5] if len(fields) > 5 else "[anonymous]"
    elif fields[0] == "Rss:":
        by_name[name] += int(fields[1])
        total += int(fields[1])
    elif fields[0] == "Anonymous:":
        anon += int(fields[1])
print(f"{label} (pid {pid}): RSS {total} KiB, of which anonymous {anon} KiB, file-backed {total - anon} KiB")
for mapping, kib in by_name.most_common(5):
    print(f"    {kib:6d} KiB  {mapping}")
PY
}

# The processes of one run: the first whose command line matches, after the run has started.
look() {
  local label=$1 pattern=$2
  local pid
  pid=$(pgrep -n -f "$pattern" || true)
  if [ -n "$pid" ]; then report "$label" "$pid"; else echo "$label: not found" >&2; fi
}

cd "$work"
CORDON_HOME=$home "$cordon" exec -a never -s workspace-write -- sleep 1 &
front=$!
sleep 0.5
report "cordon exec front end" "$front"
# Its children still there: the helper (in cordon's forked child) or the supervisor, pid 1 of
# the namespace, which waits for `sleep`.
for child in $(pgrep -P "$front" || true); do
  [ -r "/proc/$child/smaps" ] && report "cordon exec's child $(tr -d '\0' <"/proc/$child/comm")" "$child" || true
done
wait "$front"

if command -v bwrap >/dev/null; then
  bwrap --ro-bind / / --dev /dev --bind "$work" "$work" --unshare-net --unshare-pid \
    --unshare-ipc sleep 1 &
  sleep 0.5
  look "bubblewrap" "^bwrap --ro-bind / / --dev /dev --bind $work"
  wait
fi

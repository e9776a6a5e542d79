#!/usr/bin/env python3
"""What one directory made and removed costs where cordon keeps its run state.

A transactional run makes a directory for its write layers (the layers' `upper` and `work`,
and the overlay's own `work/work`, `work/incompat/volatile`) and, when it keeps nothing, leaves
it to be removed: about a dozen directories. On a file system mounted with `discard`, every
removal that frees a block issues a discard at the journal's commit, and each `rmdir` waits
for it. This prints the mount options of the file system holding DIR (default: the parent of
$CORDON_HOME, else ~/.cordon's) and the median cost of `mkdir`, `rmdir` of an empty directory,
and `rename` of one, over N of each (default 200).

  python3 bench/dir_ops.py
  python3 bench/dir_ops.py --runs 500 /var/tmp
"""
import argparse
import os
import statistics
import tempfile
import time


def mount_of(path):
    """(mount point, file system type, options) of the mount holding `path`."""
    path = os.path.realpath(path)
    best = ("/", "?", "?")
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            _, point, kind, options = line.split()[:4]
            point = point.replace("\\040", " ")
            inside = path == point or path.startswith(point.rstrip("/") + "/")
            if inside and len(point) >= len(best[0]):
                best = (point, kind, options)
    return best


def timed(action, names):
    costs = []
    for name in names:
        start = time.perf_counter()
        action(name)
        costs.append(time.perf_counter() - start)
    return statistics.median(costs) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    default = os.environ.get("CORDON_HOME") or os.path.expanduser("~/.cordon")
    parser.add_argument("dir", nargs="?", default=os.path.dirname(default.rstrip("/")))
    args = parser.parse_args()
    point, kind, options = mount_of(args.dir)
    print(f"{args.dir}: {kind} on {point} ({options})")
    with tempfile.TemporaryDirectory(prefix="cordon-dir-ops-", dir=args.dir) as scratch:
        names = [os.path.join(scratch, f"d{i}") for i in range(args.runs)]
        made = timed(os.mkdir, names)
        renamed = timed(lambda name: os.rename(name, name + ".moved"), names)
        names = [name + ".moved" for name in names]
        removed = timed(os.rmdir, names)
    print(f"median of {args.runs}: mkdir {made:.1f} us, rename {renamed:.1f} us, "
          f"rmdir {removed:.1f} us")


if __name__ == "__main__":
    main()

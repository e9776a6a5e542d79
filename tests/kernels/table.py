#!/usr/bin/env python3
"""The kernel-support table of docs/kernels.md, from the `cordon doctor --json` files of a run.

    python3 tests/kernels/table.py target/kernels/6.1 target/kernels/6.1-no-landlock …

Each directory holds doctor-root.json and doctor-nobody.json (guest.sh writes them) and
label (run.sh writes it). Prints a Markdown table: per kernel and user, what cordon's two
sandbox policies get there (run, or refused with exit 125 and why) and what is reported as not
enforced.
"""

import json
import os
import sys

# Short names for doctor's gap sentences, matched by a phrase in them.
SHORT = [
    ("filesystem write restrictions", "Landlock"),
    ("truncating files", "truncate outside the roots"),
    ("signals and abstract UNIX sockets", "signal/abstract-socket scoping (ABI 6)"),
    ("keeping cordon's own state", "CORDON_HOME inside a root"),
    ("the mount view (", "mount view: chmod/chown/xattr outside roots, protected and hidden paths"),
    ("connect() to UNIX socket files", "UNIX connect() with the network on (ABI 9)"),
    ("the seccomp filter", "seccomp"),
    ("capability bounding set", "bounding set"),
    ("no_new_privs", "no_new_privs"),
]

VARIANTS = {
    "default": "as shipped",
    "no-landlock": "lsm= without landlock",
    "no-userns": "unprivileged userns off",
}


def kernel_name(label):
    """`6.1:no-userns (Debian 6.1.0-56-amd64, no-userns, TCG)` -> `Debian 6.1.0-56-amd64,
    unprivileged userns off`; `native (native 6.18.44)` -> `native 6.18.44`."""
    inside = label[label.find("(") + 1:label.rfind(")")] if "(" in label else label
    parts = [p.strip() for p in inside.split(",")]
    if len(parts) >= 2 and parts[1] in VARIANTS:
        return f"{parts[0]}, {VARIANTS[parts[1]]}"
    return parts[0]


def short(what):
    for phrase, name in SHORT:
        if phrase in what:
            return name
    return what


def cell(mode):
    gaps = mode.get("not_enforced", [])
    required = [short(g["what"]) for g in gaps if g["required"]]
    if required:
        return "**exit 125** (needs " + ", ".join(required) + ")"
    layers = []
    for line in mode.get("enforced", []):
        if line.startswith("Landlock ABI"):
            layers.append(line.split(":")[0])
        elif line.startswith("mount view") and "mount view" not in layers:
            layers.append("mount view")
        elif line.startswith("seccomp"):
            layers.append("seccomp")
    return "runs: " + " + ".join(layers)


def main(dirs):
    print("| kernel | user | Landlock ABI | mount view | read-only | workspace-write "
          "| not enforced (reported) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for d in dirs:
        try:
            label = kernel_name(open(os.path.join(d, "label")).read().strip())
        except OSError:
            label = os.path.basename(d.rstrip("/"))
        for who, user in (("root", "root"), ("nobody", "uid 65534")):
            try:
                doc = json.load(open(os.path.join(d, f"doctor-{who}.json")))
            except (OSError, ValueError) as e:
                print(f"| {label} | {user} | ? | ? | ? | ? | doctor output unreadable: {e} |")
                continue
            k = doc["kernel"]
            mv = "yes" if k["mount_view"] is True else "no"
            modes = doc["modes"]
            ww = modes["workspace-write"]
            optional = [short(g["what"]) for g in ww.get("not_enforced", []) if not g["required"]]
            optional += [short(g["what"]) for g in ww.get("not_enforced_with_network") or []]
            print(f"| {label} | {user} | {k['landlock_abi']} | {mv} | {cell(modes['read-only'])} "
                  f"| {cell(ww)} | {'; '.join(optional) or '—'} |")


if __name__ == "__main__":
    main(sys.argv[1:])

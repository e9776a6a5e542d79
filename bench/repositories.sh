#!/bin/sh
# Launch cost of the per-repository protection and of sealing $HOME: `cordon exec -a never --
# /bin/true` in a workspace holding 0, 1, 20 and 200 nested git repositories (each gets its
# config, hooks and redirections bound read-only, and its git dir watched for planted names),
# and with a $HOME of 60 entries as the workspace (--allow-home-root: each entry granted and
# bound on its own, the start-up paths left out), interleaved by hyperfine in one run so the
# rows compare.
#
# Usage: bench/repositories.sh [CORDON] [RUNS]     (needs git and hyperfine)
set -eu
cordon=$(realpath "${1:-target/release/cordon}")
runs=${2:-200}
base=$(mktemp -d /var/tmp/cordon-bench-repos.XXXXXX)
trap 'rm -rf "$base"' EXIT
export HOME="$base/home" CORDON_HOME="$base/cordon-home" TMPDIR="$base/tmp"
mkdir -p "$HOME" "$TMPDIR"
for n in 0 1 20 200; do
    ws="$base/ws-$n"
    mkdir -p "$ws"
    git init -q "$ws"
    i=0
    while [ "$i" -lt "$n" ]; do
        git init -q "$ws/vendor/dep-$i"
        i=$((i + 1))
    done
done
# A home directory as developers have them: dot-files, tool directories, projects.
for name in .bashrc .profile .gitconfig .viminfo .lesshst .wget-hsts .python_history notes.txt; do
    echo "#" > "$HOME/$name"
done
for name in .cache .npm .rustup .cargo .ssh .vscode .mozilla .local/share .config/Code \
    .config/htop .config/gh .config/git .local/bin Documents Downloads Pictures Music Videos \
    Desktop Templates Public src go snap; do
    mkdir -p "$HOME/$name"
done
i=0
while [ "$i" -lt 30 ]; do
    mkdir -p "$HOME/project-$i"
    i=$((i + 1))
done
hyperfine -N --warmup 20 --runs "$runs" --export-markdown "$base/table.md" \
    -n "0 nested" "$cordon exec -a never -C $base/ws-0 -- /bin/true" \
    -n "1 nested" "$cordon exec -a never -C $base/ws-1 -- /bin/true" \
    -n "20 nested" "$cordon exec -a never -C $base/ws-20 -- /bin/true" \
    -n "200 nested" "$cordon exec -a never -C $base/ws-200 -- /bin/true" \
    -n "\$HOME sealed (60 entries)" \
    "$cordon exec -a never --allow-home-root -C $HOME -- /bin/true" >/dev/null
cat "$base/table.md"

#!/usr/bin/env bash
# Follows the README's "Install" and "First run" blocks literally, as a new user would, in a
# throwaway $HOME (so ~/.cargo, ~/.cordon and ~/demo are fresh): `cargo install --locked --path
# cli` into it, the completions and man page, `cordon doctor`, then the two first-run commands,
# then `npm pack` through `--preset npm` (skipped, saying why, without npm or the registry),
# and checks what a user would see. Crates come from this machine's cargo cache (no download);
# the release build goes to target/ so later runs and the benchmarks reuse it.
#
#   bash tests/install.sh          (.ci/run runs it after the test suite)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "install: FAILED: $*" >&2; exit 1; }

# The README's fenced sh blocks after "## Install": the first is the install, the second the
# first run.
block() {
  awk -v want="$1" '
    /^## Install/ { on = 1; next }
    on && /^## / { exit }
    on && /^```sh$/ { n++; inside = (n == want); next }
    on && /^```$/ { inside = 0; next }
    inside { print }' "$repo/README.md"
}
install=$(block 1)
first_run=$(block 2)
[ -n "$install" ] && [ -n "$first_run" ] || fail "README.md has no Install / first-run sh blocks"

real_cargo_home=${CARGO_HOME:-$HOME/.cargo}
# Not under /tmp (a writable root of workspace-write: ~/outside must lie outside every root),
# and not under the checkout either, which may itself be under /tmp.
base=/var/tmp
[ -d "$base" ] || base=$repo/target
mkdir -p "$base"
tmp=$(mktemp -d -p "$base" cordon-install-home.XXXXXX)
case "$tmp" in /tmp/*) fail "no directory outside /tmp for the throwaway HOME ($tmp)" ;; esac
trap 'rm -rf "$tmp"' EXIT
home=$tmp/home
mkdir -p "$home/.cargo"
# Only the download caches are shared: bin/ (where `cargo install` puts cordon) is fresh.
for cache in registry git; do
  [ -e "$real_cargo_home/$cache" ] && ln -s "$real_cargo_home/$cache" "$home/.cargo/$cache"
done
# cargo itself (a rustup proxy or the distribution's) stays where it is.
cargo_dir=$(dirname "$(command -v cargo)")
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
run_as_user() {
  env -i HOME="$home" CARGO_HOME="$home/.cargo" RUSTUP_HOME="$RUSTUP_HOME" \
    CARGO_TARGET_DIR="$repo/target" USER="${USER:-root}" LANG=C.UTF-8 \
    PATH="$home/.cargo/bin:$cargo_dir:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
    bash -c "$1"
}

echo "install: the README's install block, in a fresh HOME ($home)"
out=$(cd "$repo" && run_as_user "set -e; $install" 2>&1) || { echo "$out" >&2; fail "the install block"; }
[ -x "$home/.cargo/bin/cordon" ] || fail "no ~/.cargo/bin/cordon"
[ -L "$home/.cargo/bin/codex-linux-sandbox" ] || fail "no ~/.cargo/bin/codex-linux-sandbox link"
# The end-to-end suite's hooks exist only in its own build: none of their names may be in what a
# user installs (an environment variable would change what the release binary does).
if grep -a -o 'CORDON_TEST_[A-Z_]*' "$home/.cargo/bin/cordon" | sort -u | grep .; then
  fail "the installed cordon holds test hooks (the names above)"
fi
grep -q "complete" "$home/.local/share/bash-completion/completions/cordon" || fail "no bash completion"
grep -q '^\.TH' "$home/.cargo/share/man/man1/cordon.1" || fail "no man page"
for page in cordon-exec cordon-sandbox-linux cordon-executor cordon-mcp-server cordon-doctor; do
  grep -q '^\.TH' "$home/.cargo/share/man/man1/$page.1" || fail "no man page $page(1)"
done
# `man cordon-exec` as the user types it: man-db adds ../share/man of each PATH directory.
if command -v man >/dev/null 2>&1; then
  run_as_user 'man -w cordon-exec' | grep -q "$home/.cargo/share/man" \
    || fail "man cordon-exec does not find the page the install block wrote"
fi
grep -q "enforce" <<<"$out" || { echo "$out" >&2; fail "cordon doctor said nothing about enforcement"; }
version=$(run_as_user 'cordon --version')
echo "install: installed $version"
# The helper by its name answers too.
run_as_user 'codex-linux-sandbox --version' | grep -q cordon || fail "codex-linux-sandbox --version"

echo "install: the README's first-run block"
# Run line by line as typed; the second line is meant to fail.
mapfile -t lines <<<"$first_run"
[ "${#lines[@]}" = 3 ] || fail "expected three first-run lines, got ${#lines[@]}"
script="cd ~ && ${lines[0]%%#*}"
out=$(run_as_user "$script && ${lines[1]%%#*}" 2>&1) || { echo "$out" >&2; fail "${lines[1]}"; }
[ "$(tail -n 1 <<<"$out")" = hello ] || { echo "$out" >&2; fail "the first command did not print hello"; }
[ "$(cat "$home/demo/greeting")" = hello ] || fail "~/demo/greeting was not written"
set +e
out=$(run_as_user "$script && ${lines[2]%%#*}" 2>&1)
code=$?
set -e
[ "$code" != 0 ] || { echo "$out" >&2; fail "the write outside the workspace succeeded"; }
[ ! -e "$home/outside" ] || fail "~/outside was written"
grep -q "the sandbox blocked this command" <<<"$out" || { echo "$out" >&2; fail "no denial message"; }
# ~/outside is in the home directory, which is never offered as a writable root.
grep -q -- "-a on-failure" <<<"$out" || { echo "$out" >&2; fail "the denial does not say what would allow it"; }
if grep -q -- "--add-dir $home" <<<"$out"; then echo "$out" >&2; fail "the denial offers the home directory"; fi
# A look before running: the sandbox the first command would get, with nothing run or created.
out=$(run_as_user "cd ~/demo && cordon exec --dry-run -- sh -c 'echo x > dry-run-marker'" 2>&1) \
  || { echo "$out" >&2; fail "cordon exec --dry-run"; }
grep -q "^writable: .*$home/demo" <<<"$out" || { echo "$out" >&2; fail "--dry-run does not show the workspace as writable"; }
[ ! -e "$home/demo/dry-run-marker" ] || fail "--dry-run ran the command"
run_as_user 'cordon config show' | grep -q '^sandbox_mode' || fail "cordon config show"

echo "install: a package manager through its preset (docs/presets.md)"
# npm downloads one tiny package from the real registry; where npm or the registry is missing
# the step says so and is skipped (the network's, not the sandbox's).
preset_note="preset: skipped"
if ! run_as_user 'command -v npm' >/dev/null 2>&1; then
  echo "install: SKIPPED the preset step: npm is not installed"
elif ! run_as_user "cd /var/tmp && npm view is-number@7.0.0 version --cache $tmp/probe-cache" >/dev/null 2>&1; then
  echo "install: SKIPPED the preset step: npm cannot reach registry.npmjs.org from here"
else
  run_as_user 'cordon doctor' | grep -q "^  npm .*registry.npmjs.org" || fail "cordon doctor does not list the npm preset"
  out=$(run_as_user "mkdir -p ~/pkg && cd ~/pkg && cordon exec --preset npm -- npm pack is-number@7.0.0" 2>&1) \
    || { echo "$out" >&2; fail "npm pack through --preset npm"; }
  [ -f "$home/pkg/is-number-7.0.0.tgz" ] || { echo "$out" >&2; fail "npm pack wrote no package"; }
  [ ! -e "$home/.npm" ] || fail "the sandboxed npm wrote the user's own cache ~/.npm"
  ls -d "$home"/.cordon/workspaces/*/cache/npm/_cacache >/dev/null 2>&1 \
    || fail "the preset's cache ~/.cordon/workspaces/ID/cache/npm was not used"
  preset_note="npm pack through --preset npm, into the workspace's cache in ~/.cordon/workspaces only"
fi
echo "install: ok (install block, completions, man pages, doctor, first run: hello, then a denial that never offers the home directory; --dry-run, config show; $preset_note)"

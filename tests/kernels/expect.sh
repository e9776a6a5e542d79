#!/usr/bin/env bash
# Per-kernel expectations for cordon, as root and as uid 65534 (setpriv), on the running kernel.
#
#   tests/kernels/expect.sh CORDON_BINARY VARIANT
#
# VARIANT is what run.sh did to the kernel: `default` (as shipped), `no-landlock` (an lsm= list
# without landlock), `no-userns` (unprivileged user namespaces off by sysctl) or `native` (this
# machine's kernel, whatever it is). The checks follow the kernel's facts as `cordon doctor
# --json` reports them, and the variant pins those facts, so a kernel that lost a feature fails
# here instead of skipping. Prints `expect ok: …` / `expect FAILED: …` lines and, last,
# `expectations: N passed, N failed`. Needs root, python3, setpriv and script (util-linux).
set -u
[ "$(id -u)" = 0 ] || { echo "expect.sh: run me as root" >&2; exit 2; }
src=$1 variant=$2

# A copy of the binary uid 65534 can execute, and the helper's name for the arg0 dispatch.
bin=$(mktemp -d /tmp/cordon-expect-bin.XXXXXX)
chmod 755 "$bin"
cp "$src" "$bin/cordon"
chmod 755 "$bin/cordon"
ln -s cordon "$bin/codex-linux-sandbox"
errf=$(mktemp)
pass=0 fail=0
cleanup() { rm -rf "$bin" "$errf" "${scratch:-}"; }
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "expect ok: $1"; }
bad() {
  fail=$((fail + 1))
  echo "expect FAILED: $1"
  shift
  local l
  for l in "$@"; do printf '    %s\n' "$l"; done
}
# check DESCRIPTION CONDITION… : evaluates the condition (a shell command), shows the last run.
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what" "rc=$rc" "stdout: ${out:0:600}" "stderr: ${err:0:600}"; fi
}
has() { grep -qF -- "$2" <<<"$1"; }
lines() { printf '%s' "$1" | grep -c '' ; }

# as USER CMD… with HOME and CORDON_HOME in a scratch home of that user; sets rc, out, err.
as() {
  local user=$1
  shift
  local home=$scratch/home-$user
  if [ "$user" = root ]; then
    out=$(env HOME="$home" CORDON_HOME="$home/.cordon" "$@" </dev/null 2>"$errf")
  else
    out=$(setpriv --reuid=65534 --regid=65534 --clear-groups -- \
      env HOME="$home" CORDON_HOME="$home/.cordon" "$@" </dev/null 2>"$errf")
  fi
  rc=$?
  err=$(cat "$errf")
}

scratch=$(mktemp -d /var/tmp/cordon-expect.XXXXXX)
chmod 755 "$scratch"
fresh() { # a writable root W and an outside directory O holding a file `victim`
  rm -rf "$scratch/w" "$scratch/o"
  mkdir -p "$scratch/w" "$scratch/o" "$scratch/home-root" "$scratch/home-nobody"
  echo keep >"$scratch/o/victim"
  chown -R 65534:65534 "$scratch/w" "$scratch/o" "$scratch/home-nobody"
  # Open to both users: a write that fails, fails because of the sandbox (a root command has
  # no CAP_DAC_OVERRIDE in there).
  chmod 777 "$scratch/w" "$scratch/o"
  chmod 666 "$scratch/o/victim"
  W=$scratch/w O=$scratch/o
}
fresh

# --- the kernel's facts, as cordon sees them ------------------------------------------------
fact() { # fact JSON_FILE EXPR (python over `d`)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null
}
as root "$bin/cordon" doctor --json
doctor_root_rc=$rc
printf '%s' "$out" >"$scratch/doctor-root.json"
as nobody "$bin/cordon" doctor --json
doctor_nobody_rc=$rc
printf '%s' "$out" >"$scratch/doctor-nobody.json"
abi=$(fact "$scratch/doctor-root.json" 'd["kernel"]["landlock_abi"]')
mv_root=$(fact "$scratch/doctor-root.json" 'd["kernel"]["mount_view"] is True')
mv_nobody=$(fact "$scratch/doctor-nobody.json" 'd["kernel"]["mount_view"] is True')
echo "facts: kernel $(uname -r), Landlock ABI ${abi:-?}, mount view as root ${mv_root:-?}, as uid 65534 ${mv_nobody:-?}"
as root "$bin/cordon" doctor
doctor_root_text=$out
as nobody "$bin/cordon" doctor
doctor_nobody_text=$out

# The variant pins the facts.
case "$variant" in
  default)
    case "$(uname -r)" in
      6.1.*) check "Linux 6.1 has Landlock ABI 2" [ "$abi" = 2 ] ;;
      *) check "Landlock is enabled" [ "${abi:-0}" -ge 1 ] ;;
    esac
    check "the mount view works as root and as uid 65534" [ "$mv_root/$mv_nobody" = True/True ]
    ;;
  no-landlock)
    check "lsm= without landlock: Landlock ABI 0" [ "$abi" = 0 ]
    ;;
  no-userns)
    check "user namespaces off: no mount view for uid 65534" [ "$mv_nobody" = False ]
    check "user namespaces off: root still gets the mount view" [ "$mv_root" = True ]
    check "user namespaces off: Landlock is still there" [ "${abi:-0}" -ge 1 ]
    ;;
  native) ;;
  *) bad "unknown variant $variant" ;;
esac

policy_ww() { printf '{"type":"workspace-write","writable_roots":["%s"],"network_access":false,"exclude_tmpdir_env_var":true,"exclude_slash_tmp":true}' "$1"; }

if [ "${abi:-0}" = 0 ]; then
  # --- no Landlock: every entry point fails closed, naming the reason ------------------------
  rc=$doctor_root_rc out=$doctor_root_text err=
  check "doctor exits 1 without Landlock" [ "$rc" = 1 ]
  check "doctor names the cause: compiled in but not enabled" has "$out" "compiled into this kernel but not enabled"
  check "doctor names the fix: lsm=" has "$out" "lsm="
  for user in root nobody; do
    fresh
    as $user "$bin/cordon" sandbox linux -s workspace-write -C "$W" -- sh -c "echo x > $W/in"
    check "$user: cordon sandbox linux (workspace-write) exits 125" [ "$rc" = 125 ]
    check "$user: … with one line naming Landlock" eval '[ "$(lines "$err")" = 1 ] && has "$err" Landlock'
    check "$user: … and runs nothing" [ ! -e "$W/in" ]
    as $user "$bin/cordon" sandbox linux -C "$W" -- true
    check "$user: cordon sandbox linux (read-only) exits 125" [ "$rc" = 125 ]
    as $user "$bin/cordon" exec -a never -s workspace-write -C "$W" -- sh -c "echo x > $W/in"
    check "$user: cordon exec exits 125 naming Landlock" eval '[ "$rc" = 125 ] && has "$err" Landlock && [ ! -e "$W/in" ]'
    check "$user: … in a line that says cordon, not codex-linux-sandbox" eval 'has "$err" "cordon: sandbox: " && ! has "$err" codex-linux-sandbox'
    as $user "$bin/codex-linux-sandbox" --sandbox-policy-cwd "$W" --sandbox-policy "$(policy_ww "$W")" -- sh -c "echo x > $W/in"
    check "$user: the helper exits 125 with one codex-linux-sandbox: line naming Landlock" \
      eval '[ "$rc" = 125 ] && [ "$(lines "$err")" = 1 ] && has "$err" "codex-linux-sandbox: " && has "$err" Landlock && [ ! -e "$W/in" ]'
    as $user "$bin/cordon" sandbox linux --best-effort -s workspace-write -C "$W" -- sh -c "echo x > $W/in; echo x > $O/out"
    check "$user: --best-effort runs the command" [ -e "$W/in" ]
    check "$user: --best-effort says Landlock is not enforced" eval 'has "$err" "not enforced" && has "$err" Landlock'
    mv=$mv_root
    [ $user = nobody ] && mv=$mv_nobody
    if [ "$mv" = True ]; then
      check "$user: --best-effort: the mount view still stops writes outside the roots" [ ! -e "$O/out" ]
    fi
    as $user "$bin/codex-linux-sandbox" --best-effort --sandbox-policy-cwd "$W" --sandbox-policy "$(policy_ww "$W")" -- true
    check "$user: the helper with --best-effort runs and reports the gap" eval '[ "$rc" = 0 ] && has "$err" "not enforced"'
    # on-failure on a terminal that answers yes to everything: a setup failure is never a denial,
    # so there is no prompt and nothing runs unsandboxed.
    fresh
    home=$scratch/home-$user
    cmd="$bin/cordon exec -a on-failure -s workspace-write -C $W -- sh -c 'echo x > $O/out'"
    if [ $user = root ]; then
      out=$(yes y | head -n 20 | env HOME="$home" CORDON_HOME="$home/.cordon" script -qec "$cmd" /dev/null 2>&1)
    else
      out=$(yes y | head -n 20 | setpriv --reuid=65534 --regid=65534 --clear-groups -- env HOME="$home" CORDON_HOME="$home/.cordon" script -qec "$cmd" /dev/null 2>&1)
    fi
    rc=$? err=
    check "$user: exec -a on-failure exits 125 and offers no unsandboxed retry" \
      eval '[ "$rc" = 125 ] && ! has "$out" "WITHOUT the sandbox" && [ ! -e "$O/out" ]'
  done
else
  # --- Landlock present -------------------------------------------------------------------
  [ "$doctor_root_rc" = 0 ] && ok "doctor (root) exits 0" || bad "doctor (root) exits 0" "rc=$doctor_root_rc" "$doctor_root_text"
  if [ "$abi" -lt 3 ] && [ "$mv_root" = True ]; then
    out=$doctor_root_text rc=$doctor_root_rc err=
    check "doctor says truncate outside the roots is refused by the mount view (ABI $abi < 3)" \
      eval 'grep -i "mount view" <<<"$out" | grep -qi truncat'
  fi
  for user in root nobody; do
    mv=$mv_root
    [ $user = nobody ] && mv=$mv_nobody
    fresh
    as $user "$bin/cordon" sandbox linux -s workspace-write -C "$W" -- sh -c "echo x > $W/in; echo x > $O/out; truncate -s 0 $O/victim; true"
    if [ "$abi" -lt 3 ] && [ "$mv" != True ]; then
      # Neither Landlock (ABI < 3) nor a mount view can refuse truncate: fail closed.
      check "$user: no mount view and ABI $abi: workspace-write exits 125 naming truncate" \
        eval '[ "$rc" = 125 ] && has "$err" truncat && [ ! -e "$W/in" ]'
      as $user "$bin/cordon" exec -a never -s workspace-write -C "$W" -- true
      check "$user: … cordon exec too" [ "$rc" = 125 ]
      fresh
      as $user "$bin/cordon" sandbox linux --best-effort -s workspace-write -C "$W" -- sh -c "echo x > $W/in; echo x > $O/out; chmod 600 $O/victim; true"
      check "$user: --best-effort: writes inside the root work" [ -e "$W/in" ]
      check "$user: --best-effort: Landlock still stops writes outside the roots" [ ! -e "$O/out" ]
      check "$user: --best-effort reports the missing mount view and truncate" \
        eval 'has "$err" "not enforced" && has "$err" "mount view" && has "$err" truncat'
    else
      check "$user: workspace-write runs" [ "$rc" = 0 ]
      check "$user: writes inside the root work" [ -e "$W/in" ]
      check "$user: writes outside the roots fail" [ ! -e "$O/out" ]
      check "$user: truncate outside the roots fails" [ "$(cat "$O/victim")" = keep ]
    fi
    if [ "$abi" -lt 3 ]; then
      fresh
      as $user "$bin/cordon" sandbox linux --no-mount-view -s workspace-write -C "$W" -- sh -c "echo x > $W/in"
      check "$user: ABI $abi with --no-mount-view exits 125 naming truncate" \
        eval '[ "$rc" = 125 ] && has "$err" truncat && [ ! -e "$W/in" ]'
    fi
    if [ "$mv" != True ]; then
      text=$doctor_root_text
      [ $user = nobody ] && text=$doctor_nobody_text
      out=$text rc= err=
      check "$user: doctor names the missing mount view" has "$out" "mount view"
      check "$user: doctor names its cause (the sysctl)" eval 'has "$out" "unprivileged_userns_clone=0" || has "$out" "max_user_namespaces=0"'
      fresh
      as $user "$bin/cordon" sandbox linux --require-mount-view -s workspace-write -C "$W" -- sh -c "echo x > $W/in"
      check "$user: --require-mount-view exits 125 naming the mount view" \
        eval '[ "$rc" = 125 ] && has "$err" "mount view" && [ ! -e "$W/in" ]'
      fresh
      mkdir -p "$W/.cordon"
      chown -R 65534:65534 "$W"
      home=$scratch/home-$user
      if [ $user = root ]; then
        out=$(env HOME="$home" CORDON_HOME="$W/.cordon" "$bin/cordon" sandbox linux --best-effort -s workspace-write -C "$W" -- sh -c "echo x > $W/.cordon/rules.toml" </dev/null 2>"$errf")
      else
        out=$(setpriv --reuid=65534 --regid=65534 --clear-groups -- env HOME="$home" CORDON_HOME="$W/.cordon" "$bin/cordon" sandbox linux --best-effort -s workspace-write -C "$W" -- sh -c "echo x > $W/.cordon/rules.toml" </dev/null 2>"$errf")
      fi
      rc=$? err=$(cat "$errf")
      check "$user: CORDON_HOME inside a root without the mount view fails closed, even --best-effort" \
        eval '[ "$rc" = 125 ] && [ ! -e "$W/.cordon/rules.toml" ]'
    fi
  done
fi

echo "expectations: $pass passed, $fail failed"
[ "$fail" = 0 ]

#!/usr/bin/env bash
# What the home directory's read allow-list costs a launch, in a planted home laid out as the
# tools document theirs: about 100 entries (dot directories and files of toolchains, editors,
# cloud and chat tools, and the entries of ~/.config, ~/.cache and ~/.local/share), then 10 and
# 100 times as many (extra tools' dot directories and ~/.config entries). For each size:
#   - `cordon exec -a never -- /bin/true` with the list (the default) and with it off
#     (`-c home_allow_list=false`), interleaved by hyperfine in one run;
#   - the same with `--network` (below Landlock ABI 9 the mount view then covers the hidden
#     entries, which read rights cannot keep sockets in from answering);
#   - the bare helper (`codex-linux-sandbox`, the list on);
#   - how many entries the list hides (`--dry-run --json`), and how many mounts the command
#     sees with the list and without it (the stand-ins it costs).
#
#   bash bench/home_list.sh [CORDON] [RUNS]
set -euo pipefail
cordon=$(realpath "${1:-target/release/cordon}")
runs=${2:-30}
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)"; exit 3; }
base=$(mktemp -d /var/tmp/cordon-bench-home.XXXXXX)
trap 'rm -rf "$base"' EXIT
export CORDON_HOME="$base/cordon-home"
helper="$base/codex-linux-sandbox"
ln -s "$cordon" "$helper"

# A home of about 100 entries, plus `extra` tools that are on no list.
plant() {
  local home=$1 extra=$2
  mkdir -p "$home"
  python3 - "$home" "$extra" <<'PY'
import os, sys
home, extra = sys.argv[1], int(sys.argv[2])
dirs = [
    ".cargo/bin", ".rustup/toolchains", ".npm/_cacache", ".nvm/versions", ".pyenv/versions",
    ".local/bin", ".local/lib", ".local/share/uv", ".local/share/nvim", ".local/share/fish",
    ".local/share/TelegramDesktop", ".local/share/keyrings", ".local/share/Steam",
    ".local/state/nvim", ".local/state/wireplumber", ".cache/pip", ".cache/go-build",
    ".cache/mozilla", ".cache/JetBrains", ".cache/ms-playwright", ".cache/huggingface",
    ".cache/thumbnails", ".cache/fontconfig", ".cache/yarn", ".cache/node-gyp",
    ".config/git", ".config/nvim", ".config/fish", ".config/gh", ".config/Code",
    ".config/Cursor", ".config/JetBrains", ".config/Slack", ".config/discord", ".config/google-chrome",
    ".config/pulse", ".config/dconf", ".config/htop", ".config/gcloud", ".config/op",
    ".config/configstore", ".config/nix", ".config/cachix", ".config/Signal", ".config/remmina",
    ".ssh", ".aws", ".azure", ".kube", ".docker/contexts/meta", ".docker/contexts/tls", ".gnupg",
    ".tsh", ".doppler", ".continue", ".mitmproxy", ".m2/repository", ".gradle/caches", ".sdkman",
    ".gem", ".rbenv", ".vscode", ".vscode-server", ".mozilla", ".thunderbird", ".purple",
    ".gitlab-runner", ".cert", ".ipython", ".jupyter", ".vim", ".emacs.d", ".oh-my-zsh",
    ".terraform.d", ".pulumi", ".ansible", ".minikube", ".android", ".java", ".dotnet",
    ".nuget", ".var/app/org.mozilla.firefox", "snap/firefox/common", "projects/app", "Documents",
    "Downloads",
]
files = [
    ".bashrc", ".profile", ".bash_history", ".gitconfig", ".npmrc", ".netrc", ".viminfo",
    ".lesshst", ".wget-hsts", ".python_history", ".zshrc", ".zsh_history", ".selected_editor",
    ".env.local", ".secrets", ".Xauthority",
]
for d in dirs:
    os.makedirs(os.path.join(home, d), exist_ok=True)
for f in files:
    open(os.path.join(home, f), "w").write("x\n")
for i in range(extra):
    os.makedirs(os.path.join(home, f".tool{i}"), exist_ok=True)
    os.makedirs(os.path.join(home, ".config", f"tool{i}"), exist_ok=True)
PY
}

sizes=(0 450 4950)
names=(100 1000 10000)
args=()
for i in "${!sizes[@]}"; do
  home="$base/home-${names[$i]}"
  plant "$home" "${sizes[$i]}"
  ws="$home/projects/app"
  args+=(-n "list, ${names[$i]} entries" "env HOME=$home $cordon exec -a never -C $ws -- /bin/true")
  args+=(-n "no list, ${names[$i]} entries" "env HOME=$home $cordon exec -a never -c home_allow_list=false -C $ws -- /bin/true")
  # With the network on, a kernel before Landlock ABI 9 needs the mount view to cover the
  # hidden entries (sockets): stand-ins, or containers covered whole.
  args+=(-n "list, --network, ${names[$i]} entries" "env HOME=$home $cordon exec -a never --network -C $ws -- /bin/true")
  args+=(-n "helper, ${names[$i]} entries" "env HOME=$home $helper --sandbox-policy-cwd $ws --sandbox-policy '{\"type\":\"workspace-write\"}' -- /bin/true")
done
echo "## launch: /bin/true"
hyperfine -N --warmup 3 --runs "$runs" --export-markdown "$base/launch.md" "${args[@]}" >/dev/null
cat "$base/launch.md"
echo
echo "## what the list hides, and the mounts it costs"
echo "| home entries | entries hidden by the list | mounts the command sees, list on | with --network | list off |"
echo "| ---: | ---: | ---: | ---: | ---: |"
for n in "${names[@]}"; do
  home="$base/home-$n"
  ws="$home/projects/app"
  entries=$(find "$home" -mindepth 1 -maxdepth 1 | wc -l)
  entries=$((entries + $(find "$home/.config" "$home/.cache" "$home/.local/share" -mindepth 1 -maxdepth 1 | wc -l)))
  hidden=$(HOME=$home "$cordon" exec --dry-run --json -C "$ws" -- /bin/true \
    | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["sandbox"]["home_hidden"]))')
  on=$(HOME=$home "$cordon" exec -a never -C "$ws" -- cat /proc/self/mountinfo | wc -l)
  net=$(HOME=$home "$cordon" exec -a never --network -C "$ws" -- cat /proc/self/mountinfo | wc -l)
  off=$(HOME=$home "$cordon" exec -a never -c home_allow_list=false -C "$ws" -- cat /proc/self/mountinfo | wc -l)
  echo "| $entries | $hidden | $on | $net | $off |"
done

#!/bin/sh
# The environment filter's false positives: realistic environments (a GitHub Actions runner's
# defaults, a GitLab CI job's, a GNOME desktop session's, the variables of common toolchains)
# with no credential in them are run through `cordon exec --json -- true`, and every variable
# the default policy removed is printed. The goal is an empty list.
#
# Usage: bench/env_false_positives.sh [CORDON]
set -eu
cordon=$(realpath "${1:-target/release/cordon}")
base=$(mktemp -d /var/tmp/cordon-env-fp.XXXXXX)
trap 'rm -rf "$base"' EXIT
cat > "$base/env" <<'VARS'
CI=true
GITHUB_ACTIONS=true
GITHUB_ACTION=__run
GITHUB_ACTOR=octocat
GITHUB_ACTOR_ID=583231
GITHUB_API_URL=https://api.github.com
GITHUB_BASE_REF=main
GITHUB_ENV=/home/runner/work/_temp/_runner_file_commands/set_env_1
GITHUB_EVENT_NAME=pull_request
GITHUB_EVENT_PATH=/home/runner/work/_temp/_github_workflow/event.json
GITHUB_GRAPHQL_URL=https://api.github.com/graphql
GITHUB_HEAD_REF=feature
GITHUB_JOB=test
GITHUB_OUTPUT=/home/runner/work/_temp/_runner_file_commands/set_output_1
GITHUB_PATH=/home/runner/work/_temp/_runner_file_commands/add_path_1
GITHUB_REF=refs/pull/1/merge
GITHUB_REF_NAME=1/merge
GITHUB_REPOSITORY=octo/repo
GITHUB_RUN_ID=1658821493
GITHUB_SERVER_URL=https://github.com
GITHUB_SHA=ffac537e6cbbf934b08745a378932722df287a53
GITHUB_STEP_SUMMARY=/home/runner/work/_temp/_runner_file_commands/step_summary_1
GITHUB_WORKFLOW=CI
GITHUB_WORKSPACE=/home/runner/work/repo/repo
RUNNER_ARCH=X64
RUNNER_NAME=GitHub Actions 2
RUNNER_OS=Linux
RUNNER_TEMP=/home/runner/work/_temp
RUNNER_TOOL_CACHE=/opt/hostedtoolcache
ImageOS=ubuntu22
ImageVersion=20231115.1.0
GITLAB_CI=true
CI_PROJECT_DIR=/builds/group/project
CI_COMMIT_SHA=1ecfd275763eff1d6b4844ea3168962458c9f27a
CI_COMMIT_REF_NAME=main
CI_PIPELINE_ID=1000
CI_JOB_NAME=test
CI_SERVER_URL=https://gitlab.example.com
CI_REGISTRY=registry.example.com
CI_REGISTRY_IMAGE=registry.example.com/group/project
CI_PROJECT_PATH=group/project
CI_DEFAULT_BRANCH=main
CI_BUILDS_DIR=/builds
DISPLAY=:0
WAYLAND_DISPLAY=wayland-0
XDG_CURRENT_DESKTOP=GNOME
XDG_SESSION_TYPE=wayland
XDG_SESSION_DESKTOP=gnome
XDG_SESSION_CLASS=user
DESKTOP_SESSION=ubuntu
XDG_DATA_DIRS=/usr/share/ubuntu:/usr/local/share:/usr/share
XDG_CONFIG_DIRS=/etc/xdg/xdg-ubuntu:/etc/xdg
GNOME_SHELL_SESSION_MODE=ubuntu
GTK_MODULES=gail:atk-bridge
QT_IM_MODULE=ibus
IM_CONFIG_PHASE=1
COLORTERM=truecolor
TERM_PROGRAM=vscode
TERM_PROGRAM_VERSION=1.84.2
VSCODE_GIT_IPC_HANDLE=/run/user/1000/vscode-git-abc.sock
LANG=en_US.UTF-8
LANGUAGE=en_US:en
EDITOR=vim
VISUAL=vim
PAGER=less
LESS=-R
LESSOPEN=| /usr/bin/lesspipe %s
HISTCONTROL=ignoreboth
HISTSIZE=10000
PROMPT_COMMAND=history -a
MANPATH=/usr/share/man
INFOPATH=/usr/share/info
CARGO_HOME=/home/u/.cargo
RUSTUP_HOME=/home/u/.rustup
RUSTUP_TOOLCHAIN=stable
RUST_BACKTRACE=1
RUSTFLAGS=-C target-cpu=native
NVM_DIR=/home/u/.nvm
NVM_BIN=/home/u/.nvm/versions/node/v20.9.0/bin
NODE_ENV=development
NODE_OPTIONS=--max-old-space-size=4096
npm_config_cache=/home/u/.npm
PYENV_ROOT=/home/u/.pyenv
VIRTUAL_ENV=/home/u/project/.venv
PYTHONPATH=/home/u/project/src
PIP_INDEX_URL=https://pypi.org/simple
PIP_DISABLE_PIP_VERSION_CHECK=1
POETRY_HOME=/home/u/.poetry
CONDA_DEFAULT_ENV=base
CONDA_PREFIX=/opt/conda
GOPATH=/home/u/go
GOROOT=/usr/local/go
GOFLAGS=-mod=mod
GOPROXY=https://proxy.golang.org,direct
JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
JAVA_TOOL_OPTIONS=-Dfile.encoding=UTF-8
MAVEN_OPTS=-Xmx2g
GRADLE_USER_HOME=/home/u/.gradle
DOTNET_ROOT=/usr/share/dotnet
DOTNET_CLI_TELEMETRY_OPTOUT=1
KUBECONFIG=/home/u/.kube/config
DOCKER_HOST=unix:///run/user/1000/docker.sock
DOCKER_BUILDKIT=1
COMPOSE_PROJECT_NAME=app
AWS_REGION=eu-west-1
AWS_DEFAULT_REGION=eu-west-1
AWS_PROFILE=dev
GOOGLE_CLOUD_PROJECT=my-project
CLOUDSDK_CORE_PROJECT=my-project
TF_IN_AUTOMATION=1
ANSIBLE_CONFIG=/home/u/ansible.cfg
PKG_CONFIG_PATH=/usr/local/lib/pkgconfig
LD_LIBRARY_PATH=/usr/local/lib
CC=gcc
CXX=g++
CFLAGS=-O2
MAKEFLAGS=-j8
TZ=Europe/Paris
VARS
args=""
while IFS= read -r line; do
    args="$args $(printf '%s' "$line" | sed "s/'/'\\\\''/g; s/^/'/; s/\$/'/")"
done < "$base/env"
# shellcheck disable=SC2086
eval "env -i HOME=$base PATH=/usr/bin:/bin CORDON_HOME=$base/cordon-home $args \
    $cordon exec --json -a never -s read-only -C $base -- true" > "$base/out.json"
python3 - "$base/env" "$base/out.json" <<'PY'
import json, sys
names = [l.split("=", 1)[0] for l in open(sys.argv[1]) if "=" in l]
out = json.load(open(sys.argv[2]))
removed = [r["name"] for r in out.get("env_removed", out.get("removed_env", []))]
print(f"{len(names)} variables from CI runners, a desktop session and toolchains; removed: {len(removed)}")
for name in removed:
    print(f"  {name}")
PY

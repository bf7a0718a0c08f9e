#!/usr/bin/env bash
# schemathesis against the local API, from the API's own OpenAPI document
# (GET /openapi.json). Run by `make test` with the emulators up
# (localstack/with-emulators.sh). Two runs:
#   1. not_a_server_error, response_schema_conformance, status_code_conformance
#      and content_type_conformance: must pass, no exceptions;
#   2. --checks all: must pass apart from the findings in fuzz/baseline.json,
#      each explained in README (API, "What schemathesis finds").
# The tools are pinned: fuzz/requirements.txt + fuzz/constraints.txt, in
# .tools/fuzz-venv.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd "$here/.." && pwd -P)"
log() { printf '[fuzz] %s\n' "$*" >&2; }
# shellcheck source=fuzz/venv.sh
source "$here/venv.sh"

state="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
sim="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
api="http://127.0.0.1:$port"
(cd "$root" && go build -o "$state/orderly-local" ./cmd/orderly-local)
ORDERLY_STAGE="fuzz$RANDOM" ORDERLY_API_ADDR="127.0.0.1:$port" ORDERLY_SIMULATOR_ADDR="127.0.0.1:$sim" \
    ORDERLY_STATE_DIR="$state/state" "$state/orderly-local" >"$state/runtime.log" 2>&1 &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$state"; }
trap cleanup EXIT
for _ in $(seq 1 60); do
    curl -fsS -o /dev/null "$api/openapi.json" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { log "the runtime exited:"; tail -20 "$state/runtime.log" >&2; exit 1; }
    sleep 0.5
done

common=(run "$api/openapi.json" --url "$api" --max-examples "${FUZZ_EXAMPLES:-30}"
        --phases examples,coverage,fuzzing --warnings off --seed "${FUZZ_SEED:-20261122}")
log "run 1: server errors and conformance of every response"
"$venv/bin/schemathesis" "${common[@]}" \
    --checks not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance
log "run 2: --checks all, against the accepted findings in fuzz/baseline.json"
"$venv/bin/schemathesis" "${common[@]}" --checks all --baseline "$here/baseline.json"

#!/usr/bin/env bash
# The simulator against the remote-service contract (internal/adapter/remote/
# contract.json), which every team's service must keep: for the shipped
# workflow and the checkout example, the contract placed at the
# workflow's own paths (`orderly conformance --openapi`), and for
# fuzz/workflows/order-polled (the shipped workflow with its payment
# service polled: its 202s and status URLs), then
#   1. schemathesis, every check but positive_data_acceptance and
#      negative_data_rejection (README, "The remote-service contract",
#      says why);
#   2. `orderly conformance` itself.
# The fraud service requires an Authorization header (-require-header),
# which both send. Run by `make test` (`make contract`); it needs no
# emulators. Tools as fuzz/run.sh's.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd "$here/.." && pwd -P)"
log() { printf '[contract] %s\n' "$*" >&2; }
# shellcheck source=fuzz/venv.sh
source "$here/venv.sh"

state="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
sim="http://127.0.0.1:$port"
(cd "$root" && go build -o "$state/orderly-simulator" ./cmd/orderly-simulator && go build -o "$state/orderly" ./cmd/orderly)
# A credential made for this run, kept off command lines: the simulator
# reads it from the environment, orderly conformance from a file.
ORDERLY_CONTRACT_FRAUD_AUTH="Bearer $(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export ORDERLY_CONTRACT_FRAUD_AUTH
umask 077
printf '%s\n' "$ORDERLY_CONTRACT_FRAUD_AUTH" > "$state/fraud-auth"
# shellcheck disable=SC2016 # the simulator reads the variable itself
ORDERLY_SIMULATOR_ADDR="127.0.0.1:$port" "$state/orderly-simulator" \
    -require-header 'fraud=Authorization=$ORDERLY_CONTRACT_FRAUD_AUTH' >"$state/simulator.log" 2>&1 &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$state"; }
trap cleanup EXIT
for _ in $(seq 1 50); do
    curl -s -o /dev/null "$sim/" && break
    kill -0 "$pid" 2>/dev/null || { log "the simulator exited:"; tail -20 "$state/simulator.log" >&2; exit 1; }
    sleep 0.2
done

cd "$root"
for workflow in workflows/order/v1.json examples/workflows/checkout/v1.json fuzz/workflows/order-polled/v1.json; do
    log "schemathesis: the simulator against the contract of $workflow"
    "$state/orderly" conformance --workflow "$workflow" --openapi >"$state/contract.json"
    # -H would put the credential on the command line; the config file
    # takes it from the environment.
    "$venv/bin/schemathesis" --config-file "$here/simulator.toml" run "$state/contract.json" --url "$sim" \
        --max-examples "${FUZZ_EXAMPLES:-30}" --phases examples,coverage,fuzzing --warnings off \
        --seed "${FUZZ_SEED:-20261125}" --checks all --exclude-checks positive_data_acceptance,negative_data_rejection
done
log "orderly conformance against the simulator"
# The unknown inputs name lines no service of the simulator knows
# (TEST-<SERVICE>-UNKNOWN: each answers 404), for the unknown-entity rule.
"$state/orderly" conformance --workflow workflows/order/v1.json --url "$sim" --input "$here/order-input.json" \
    --unknown-input "$here/order-unknown-input.json"
"$state/orderly" conformance --workflow examples/workflows/checkout/v1.json --url "$sim" --header "Authorization=@$state/fraud-auth" \
    --unknown-input "$here/checkout-unknown-input.json"
"$state/orderly" conformance --workflow fuzz/workflows/order-polled/v1.json --url "$sim" --input "$here/order-input.json" \
    --unknown-input "$here/order-unknown-input.json"

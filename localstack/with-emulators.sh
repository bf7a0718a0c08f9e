#!/usr/bin/env bash
# Runs a command with the emulators up and the AWS SDK pointed at them.
# Emulators that were already running (say, under `make run`) are used and
# left running; ones this script started are stopped when the command ends.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
emulators="$here/emulators.sh"

started=""
if ! bash "$emulators" status >/dev/null 2>&1; then
    bash "$emulators" start
    started=yes
fi
cleanup() { if [[ -n "$started" ]]; then bash "$emulators" stop || true; fi; }
trap cleanup EXIT

eval "$(bash "$emulators" env)"
"$@"

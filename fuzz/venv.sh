# Sourced by fuzz/run.sh and fuzz/simulator.sh: installs schemathesis,
# pinned by fuzz/requirements.txt + fuzz/constraints.txt, into
# .tools/fuzz-venv (again only when the pins or Python change), and sets
# $venv.
venv="$root/.tools/fuzz-venv"
want="$(cat "$here/requirements.txt" "$here/constraints.txt" <(python3 --version) | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$venv/.stamp" 2>/dev/null)" != "$want" || ! -x "$venv/bin/schemathesis" ]]; then
    log "installing schemathesis into $venv (pinned)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" -c "$here/constraints.txt"
    echo "$want" > "$venv/.stamp"
fi

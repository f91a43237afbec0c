#!/usr/bin/env bash
# Regenerates every image's locked, hashed requirements (make lock). Needs uv, PyPI and python3.
# The stacks and their variants come from bench/core/stacks.py. Every lock resolves against PyPI alone (the torch
# stacks pin PyPI's torch in both variants: PyPI has no CPU build of torchvision). An existing lock is uv's
# preference, so a re-lock moves only what its .in file changed.
set -euo pipefail
cd "$(dirname "$0")"
compile() {
    uv pip compile -q "$1" --generate-hashes --python-version 3.11 \
        --python-platform x86_64-manylinux_2_28 --no-header -o "$2" "${@:3}"
    echo "locked $2"
}
compile uv.in uv.lock.txt
compile collector/requirements.in collector/requirements.lock
# one "<stack> <variant> <backend>" line per image
PYTHONPATH=.. python3 -c 'from bench.core.stacks import STACKS
for s in STACKS.values():
    for v in s.variants: print(s.id, v)' | while read -r s v; do
    compile "$s/requirements-$v.in" "$s/requirements-$v.lock"
done
# The shared layers' locks (images/layers/) are what the stacks' new locks pin identically.
(cd .. && python3 -m bench.host.stackfiles)

#!/usr/bin/env bash
# Regenerates the images' locked, hashed requirements. Needs uv, PyPI and python3.
#   images/lock.sh            every lock (make lock); a derived stack's .in is first rewritten from its base's
#   images/lock.sh STACK...   only these stacks' locks (make version-stack), then the shared layers
# The stacks and their flavors come from bench/core/stacks.py. Every lock resolves against PyPI alone (the torch
# stacks pin PyPI's torch in both flavors: PyPI has no CPU build of torchvision). An existing lock is uv's
# preference, so a re-lock moves only what its .in file changed.
set -euo pipefail
cd "$(dirname "$0")"
command -v uv >/dev/null || { echo "images/lock.sh: uv is not installed (pip install uv): it resolves and hashes" \
    "the locks" >&2; exit 2; }
compile() {
    uv pip compile -q "$1" --generate-hashes --python-version 3.11 \
        --python-platform x86_64-manylinux_2_28 --no-header -o "$2" "${@:3}"
    echo "locked $2"
}
if [ $# -eq 0 ]; then
    compile uv.in uv.lock.txt
    compile collector/requirements.in collector/requirements.lock
    (cd .. && python3 -m bench.host versions refresh)
fi
# one "<stack> <flavor>" line per image (every stack, or the ones named), listed before the first compile: a failed
# compile ends the loop, and a list still being piped in then died of a broken pipe, with a traceback
images=$(PYTHONPATH=.. python3 -c 'import sys
from bench.core.stacks import STACKS
for s in sys.argv[1:] or STACKS:
    for v in STACKS[s].flavors: print(s, v)' "$@")
while read -r s v; do
    compile "$s/requirements-$v.in" "$s/requirements-$v.lock"
done <<< "$images"
# The shared layers' locks (images/layers/) are what the stacks' new locks pin identically.
(cd .. && python3 -m bench.host stackfiles)

#!/usr/bin/env bash
# Regenerates every image's locked, hashed requirements (make lock). Needs uv, PyPI and python3.
# The stacks and their variants come from bench/stacks.py. The CPU locks of the torch stacks pin
# torch==X+cpu: uv finds it in images/wheelhouse/ or on TORCH_INDEX_URL (default: the PyTorch CPU index).
set -euo pipefail
cd "$(dirname "$0")"
TORCH_INDEX_URL=${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}
compile() {
    uv pip compile -q "$1" --generate-hashes --python-version 3.11 \
        --python-platform x86_64-manylinux_2_28 --no-header -o "$2" "${@:3}"
    echo "locked $2"
}
torch_cpu=(--find-links wheelhouse)
[ -n "$TORCH_INDEX_URL" ] && torch_cpu+=(--extra-index-url "$TORCH_INDEX_URL" --index-strategy unsafe-best-match)
compile uv.in uv.lock.txt
compile collector/requirements.in collector/requirements.lock
# one "<stack> <variant> <backend>" line per image
PYTHONPATH=.. python3 -c 'from bench.stacks import STACKS
for s in STACKS.values():
    for v in s.variants: print(s.id, v, s.backend)' | while read -r s v backend; do
    if [ "$v-$backend" = cpu-torch ]; then
        compile "$s/requirements-$v.in" "$s/requirements-$v.lock" "${torch_cpu[@]}"
    else
        compile "$s/requirements-$v.in" "$s/requirements-$v.lock"
    fi
done
# The shared layers' locks (images/layers/) are what the stacks' new locks pin identically.
(cd .. && python3 -m bench.stackfiles)

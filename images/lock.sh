#!/usr/bin/env bash
# Regenerates every image's locked, hashed requirements (make lock). Needs uv and PyPI.
# The CPU locks of the torch stacks pin torch==X+cpu: uv finds it in images/wheelhouse/ or on
# TORCH_INDEX_URL (default: the PyTorch CPU index).
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
for s in keras2-tf keras3-tf keras3-jax keras3-torch pytorch; do
    compile "$s/requirements-gpu.in" "$s/requirements-gpu.lock"
    case $s in
        keras3-torch|pytorch) compile "$s/requirements-cpu.in" "$s/requirements-cpu.lock" "${torch_cpu[@]}" ;;
        *) compile "$s/requirements-cpu.in" "$s/requirements-cpu.lock" ;;
    esac
done

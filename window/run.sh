#!/usr/bin/env bash
# The GPU window (docs/gpu-window.md): what only a GPU can tell about the harness, run natively from this checkout
# on a bare GPU host (no Docker, no package index), in parts that each have their own time limit.
#
#   BENCH_GIT_COMMIT=<commit> bash window/run.sh [--device gpu|cpu] [--size full|smoke] [--parts "..."] [--resume]
#                                                [--work DIR] [--site DIR] OUT
#
# It installs the carried wheels (.whl/*.whl, `make window-wheels`) with --no-deps into SITE (default
# /tmp/dlbench-site), checks that they import, and puts SITE and this checkout on PYTHONPATH; then runs each part
# (default: env instrument classic tuning paper) with `python3` (the host's), writing records and logs under WORK
# (default /tmp/dlbench-window; emptied first unless --resume, which reruns parts beside what is there). After every
# part it packs WORK into OUT/window.tar.gz and rewrites OUT/summary.md (window/summary.py), so a part cut off by
# its limit, or the whole command cut off by the device's, still leaves what ran. OUT gets those two files only
# (the device returns at most 8). A part's limit (s) is WINDOW_LIMIT_<part> when set.
#
# The same script, the same install line, with --device cpu --size smoke is the rehearsal (`make window-rehearse`,
# run by `make test`), in an environment holding what the host holds (window/host-packages.txt).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
device=gpu size=full parts="env instrument classic tuning paper" resume=0
work=/tmp/dlbench-window site=/tmp/dlbench-site
usage() { echo "window/run.sh: $1 (--help)" >&2; exit 2; }
while (($#)); do
    case $1 in
        --device) device=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --parts) parts=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --site) site=$2; shift 2 ;;
        --resume) resume=1; shift ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        -*) usage "unknown option $1" ;;
        *) break ;;
    esac
done
(($# == 1)) || usage "give one OUT folder"
case $device in gpu|cpu) ;; *) usage "--device gpu or cpu, not $device" ;; esac
case $size in full|smoke) ;; *) usage "--size full or smoke, not $size" ;; esac
for p in $parts; do
    case $p in env|instrument|classic|tuning|paper) ;; *) usage "unknown part $p (env instrument classic tuning paper)" ;; esac
done
# The records name the commit that ran (env.git_commit); the device copies the tree without .git, so the command
# line gives it (make window-command prints that line, from a clean tree); else this checkout's, as bench.core.commit
# names it (-dirty.<hash of the edits> where bench/ differs from HEAD), with the host's python3
if [[ -z ${BENCH_GIT_COMMIT:-} ]]; then
    BENCH_GIT_COMMIT=$(cd "$here" && python3 -m bench.host commit 2>/dev/null) \
        || usage "set BENCH_GIT_COMMIT (make window-command)"
fi
export BENCH_GIT_COMMIT
mkdir -p "$1" "$work" "$site" || exit 1
out=$(cd "$1" && pwd) work=$(cd "$work" && pwd) site=$(cd "$site" && pwd)
cd "$here" || exit 1
((resume)) || rm -rf "${work:?}"/*
mkdir -p "$work/logs" "$work/results"

# The install line (the device tool's, docs/gpu-window.md), its bytecode compiled once (pip writes none with
# --no-compile, and every cell's process would compile Keras from source as it imports it), then an import check:
# a missing or broken wheel shows here, in seconds, not as every cell failing.
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
        || { echo "window/run.sh: the carried wheels did not install" >&2; exit 1; }
    python3 -m compileall -q -j 0 "$site" >/dev/null
elif [[ $device == gpu ]]; then
    usage "no .whl/*.whl: make window-wheels, and carry .whl"
fi
# what an image (or make, which exports BENCH_FLAVOR) sets must not reach the records: no image runs here
unset BENCH_IMAGE BENCH_IMAGE_DIGEST BENCH_IMAGE_ID BENCH_FLAVOR BENCH_STACK
export PYTHONPATH="$here:$site${PYTHONPATH:+:$PYTHONPATH}" BENCH_RESULTS_DIR="$work/results" BENCH_OFFLINE=1 \
    PYTHONUNBUFFERED=1 MPLBACKEND=Agg
# (Keras on each backend the window runs: unset, Keras 3 would import TensorFlow, which the host lacks)
for backend in torch jax; do
    KERAS_BACKEND=$backend python3 -c "import pydantic, keras, diffusers, bench.run.worker" \
        || { echo "window/run.sh: the carried packages do not import on KERAS_BACKEND=$backend (above)" >&2; exit 1; }
done
# every image's environment (bench.core.stacks.CONTAINER_ENV, the one definition), the JIT cache under WORK
eval "$(python3 -c 'import shlex; from bench.core.stacks import CONTAINER_ENV as E
print("\n".join(f"export {v.name}={shlex.quote(v.value)}" for v in E if not v.from_host))')"
export CUDA_CACHE_PATH="$work/cuda-cache"
bench() { python3 -m bench "$@"; }

# Each part's limit (s) on a GPU: together 500 s, so that one device call of 10 minutes holds the window with
# its install and summaries; on the CPU (the rehearsal) each may take 15 minutes: there the limit stops a hang.
declare -A limit=([env]=15 [instrument]=130 [classic]=150 [tuning]=120 [paper]=85)
# Full model and data shapes, capped: 3 epochs (the first apart, two steady) of at most 3200 training examples
# (25-100 steps an epoch), 640 for the recurrent models (Keras 3's row LSTM is 812 sequential steps a forward
# pass), synthetic data (the host has no datasets and no network), 5 timed steps in the paper suite (the source:
# 100). At smoke size the same options with smaller values, so the rehearsal runs the same cell ids' code.
if [[ $size == full ]]; then
    epochs=3 many=3200 few=640 tune=3200 steps=5 fidelity_epochs=3 cell_limit=100 babi=()
else  # the tuning model's float16 convolutions are emulated on most CPUs: few examples there; bAbI's 552-step
    # LSTM runs step by step in Python on keras3-torch, the slowest cell of all on a shared CPU: few examples too
    epochs=3 many=256 few=128 tune=64 steps=2 fidelity_epochs=2 cell_limit=300 babi=(--samples 128)
fi
fit=(--size "$size" --device "$device" --repeats 1 --data synthetic --epochs "$epochs" --timeout "$cell_limit")
four=(--stack pytorch --stack keras3-torch --stack keras3-jax --stack jax)

part_env() {
    {   date -u; uname -a; nproc; free -g; python3 -VV
        command -v nvidia-smi >/dev/null && nvidia-smi
    } >"$work/logs/machine.txt" 2>&1
    PYTHONPATH= python3 -m pip list --format=freeze >"$work/logs/pip-freeze.txt" 2>&1  # the host's own packages
    bench list >/dev/null
}
part_instrument() {
    local rc=0
    bench selftest --device "$device" --framework torch --framework jax --out "$work/results/selftest.json" || rc=1
    # the measured GEMM peaks (mfu_measured's denominator), saved where `bench run` looks for them
    for s in pytorch keras3-torch keras3-jax jax; do
        bench doctor --stack "$s" --device "$device" --out "$work/results/doctor/$s-gpu.json" || rc=1
    done
    for s in pytorch keras3-jax; do
        bench fidelity --stack "$s" --workload mnist_cnn --size "$size" --device "$device" \
            --epochs "$fidelity_epochs" --out "$work/results/fidelity-$s.json" || rc=1
    done
    return $rc
}
part_classic() {  # the cheap cells of every stack first, the recurrent ones last
    local rc=0 runs="$work/results/runs/classic"
    bench run "${four[@]}" --suite classic --workload mnist_cnn --samples "$many" --profile "${fit[@]}" --out "$runs" || rc=1
    bench run "${four[@]}" --suite classic --workload mnist_mlp --samples "$many" "${fit[@]}" --out "$runs" || rc=1
    # without its augmentation: Keras augments through tf.data, and the host has no TensorFlow
    bench run "${four[@]}" --suite classic --workload cifar10_cnn --set augment=false --samples "$many" "${fit[@]}" \
        --out "$runs" || rc=1
    bench run "${four[@]}" --suite classic --workload mnist_hierarchical_rnn --samples "$few" "${fit[@]}" \
        --out "$runs" || rc=1
    bench run "${four[@]}" --suite classic --workload babi_rnn "${babi[@]}" "${fit[@]}" --out "$runs" || rc=1  # 950
    return $rc
}
part_tuning() {
    local rc=0
    bench sweep window/tuning.yaml "${four[@]}" --samples "$tune" "${fit[@]}" --out "$work/results/runs/tuning" || rc=1
    # the hierarchical RNN in 2017's row-LSTM form on Keras 3 (the classic part ran Keras 3's own form)
    bench run --stack keras3-torch --stack keras3-jax --suite classic --workload mnist_hierarchical_rnn \
        --set row_lstm=reshape --samples "$few" "${fit[@]}" --out "$work/results/runs/classic" || rc=1
    return $rc
}
part_paper() {
    # plain PyTorch only: the Keras step engine feeds keras-hub through tf.data, and TensorFlow (a 274-573 MB wheel)
    # cannot travel to the host
    local rc=0 paper=(--stack pytorch --suite paper --size "$size" --device "$device" --repeats 1 --steps "$steps"
                      --timeout "$cell_limit" --out "$work/results/runs/paper")
    bench run "${paper[@]}" --workload bert || rc=1
    bench run "${paper[@]}" --workload segment_anything --workload stable_diffusion --task predict || rc=1
    return $rc
}

summarise() {  # OUT/summary.md and OUT/window.tar.gz, each written whole or not at all
    python3 window/summary.py "$work" "$device" "$size" >"$out/summary.md.tmp" 2>&1
    mv "$out/summary.md.tmp" "$out/summary.md"
    tar czf "$out/window.tar.gz.tmp" -C "$work" --exclude=cuda-cache . && mv "$out/window.tar.gz.tmp" "$out/window.tar.gz"
}

((resume)) || : >"$work/parts.tsv"
status=0
for p in $parts; do
    var=WINDOW_LIMIT_$p t=${!var:-${limit[$p]}}
    [[ $device == cpu && -z ${!var:-} ]] && t=900
    echo "== part $p (limit $t s)"
    start=$SECONDS
    # At the limit `timeout` sends SIGTERM to its process group: bench stops its running cell, records it and exits.
    # timeout returns when its shell child dies, before bench has finished; so wait for the whole group (its id is
    # timeout's pid) to be gone, at most 20 s, then KILL what is left: the summary must see that cell's record.
    timeout --kill-after=15 "$t" bash -c "$(declare -p work device size fit four many few tune steps \
        cell_limit fidelity_epochs babi; declare -f bench "part_$p"); part_$p" >"$work/logs/$p.log" 2>&1 &
    group=$!
    wait "$group"
    rc=$?
    for _ in $(seq 40); do kill -0 -- "-$group" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$group" 2>/dev/null
    printf '%s\t%s\t%s\n' "$p" "$rc" "$((SECONDS - start))" >>"$work/parts.tsv"
    echo "   exit $rc in $((SECONDS - start)) s; log: logs/$p.log"
    tail -n 3 "$work/logs/$p.log"
    ((rc)) && status=1
    summarise
done
exit $status

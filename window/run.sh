#!/usr/bin/env bash
# The GPU window (docs/gpu-window.md): what only a GPU can tell about the harness, run natively from this checkout
# on a bare GPU host (no Docker, no package index), in parts that each have their own time limit.
#
#   bash window/run.sh [--device gpu|cpu] [--size full|smoke] [--parts "env instrument classic tuning paper"]
#                      [--work DIR] [--site DIR] OUT
#
# It installs the carried wheels (.whl/*.whl, `make window-wheels`) with --no-deps into SITE (default
# /tmp/dlbench-site) and puts SITE and this checkout on PYTHONPATH; then runs each part in turn with `python3` (the
# host's), writing records and logs under WORK (default /tmp/dlbench-window). After every part it packs WORK into
# OUT/window.tar.gz and rewrites OUT/summary.md (each part's status and time, then `bench collect`'s table), so a
# part cut off by its limit, or the whole command cut off by the device's, still leaves what ran. OUT gets those
# two files and nothing else: the device returns at most 8 files.
#
# The same script, the same install line, with --device cpu --size smoke is the rehearsal (`make window-rehearse`,
# run by `make test`), in an environment holding what the host holds (window/host-packages.txt).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
device=gpu size=full parts="env instrument classic tuning paper"
work=/tmp/dlbench-window site=/tmp/dlbench-site
while (($#)); do
    case $1 in
        --device) device=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --parts) parts=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --site) site=$2; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        -*) echo "window/run.sh: unknown option $1 (--help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
(($# == 1)) || { echo "window/run.sh: give one OUT folder (--help)" >&2; exit 2; }
out=$1
case $device in gpu|cpu) ;; *) echo "window/run.sh: --device gpu or cpu, not $device" >&2; exit 2 ;; esac
case $size in full|smoke) ;; *) echo "window/run.sh: --size full or smoke, not $size" >&2; exit 2 ;; esac
for p in $parts; do
    case $p in env|instrument|classic|tuning|paper) ;;
        *) echo "window/run.sh: unknown part $p (env instrument classic tuning paper)" >&2; exit 2 ;; esac
done
mkdir -p "$out" "$work/logs" "$work/results"
cd "$here" || exit 1

# The install line (the device tool's, docs/gpu-window.md), then the carried packages' bytecode once: pip writes
# none with --no-compile, and every cell's process would otherwise compile Keras from source as it imports it.
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
        || { echo "window/run.sh: the carried wheels did not install" >&2; exit 1; }
    python3 -m compileall -q -j 0 "$site" >/dev/null
fi
# no image runs here: what an image (or make, which exports BENCH_FLAVOR) would set must not reach the records
unset BENCH_IMAGE BENCH_IMAGE_DIGEST BENCH_FLAVOR BENCH_STACK
export PYTHONPATH="$here:$site${PYTHONPATH:+:$PYTHONPATH}" BENCH_RESULTS_DIR="$work/results" BENCH_OFFLINE=1 \
    PYTHONUNBUFFERED=1 MPLBACKEND=Agg
bench() { python3 -m bench "$@"; }

# Each part's time limit (s) on a GPU, sized so that the parts together stay under 10 minutes on an H100; on the
# CPU (the rehearsal) every part may take 15 minutes: there the limit only stops a hang.
declare -A limit=([env]=20 [instrument]=200 [classic]=160 [tuning]=130 [paper]=90)
# The fit suites at full model and data shapes, capped: 3 epochs (the first apart, two steady) of at most 3200
# training examples (25-100 steps an epoch), synthetic data (the host has no datasets and no network).
fit=(--size "$size" --device "$device" --repeats 1 --data synthetic)
if [[ $size == full ]]; then fit+=(--epochs 3 --samples 3200 --timeout 100); fi
four=(--stack pytorch --stack keras3-torch --stack keras3-jax --stack jax)

part_env() {
    {   date -u; uname -a; nproc; free -g; python3 -VV
        command -v nvidia-smi >/dev/null && nvidia-smi
    } >"$work/logs/machine.txt" 2>&1
    python3 -m pip list --format=freeze >"$work/logs/pip-freeze.txt" 2>&1
    bench list >/dev/null
}
part_instrument() {
    local rc=0
    bench selftest --device "$device" --framework torch --framework jax --out "$work/results/selftest.json" || rc=1
    # the doctor's measured GEMM peaks, saved where `bench run` looks for them (mfu_measured's denominator)
    for s in pytorch keras3-torch keras3-jax jax; do
        bench doctor --stack "$s" --device "$device" --out "$work/results/doctor/$s-gpu.json" || rc=1
    done
    for s in pytorch keras3-jax; do
        bench fidelity --stack "$s" --workload mnist_cnn --size "$size" --device "$device" --epochs 3 \
            --out "$work/results/fidelity-$s.json" || rc=1
    done
    return $rc
}
part_classic() {
    local rc=0
    bench run "${four[@]}" --suite classic --workload mnist_mlp --workload mnist_cnn \
        --workload mnist_hierarchical_rnn --workload babi_rnn "${fit[@]}" --out "$work/results/runs/classic" || rc=1
    # cifar10_cnn without its augmentation: Keras augments through tf.data, and the host has no TensorFlow
    bench run "${four[@]}" --suite classic --workload cifar10_cnn --set augment=false "${fit[@]}" \
        --out "$work/results/runs/classic" || rc=1
    return $rc
}
part_tuning() {
    local rc=0
    bench sweep window/tuning.yaml "${four[@]}" "${fit[@]}" --out "$work/results/runs/tuning" || rc=1
    # the hierarchical RNN in 2017's row-LSTM form on Keras 3 (the classic part ran Keras 3's own form)
    bench run --stack keras3-torch --stack keras3-jax --suite classic --workload mnist_hierarchical_rnn \
        --set row_lstm=reshape "${fit[@]}" --out "$work/results/runs/classic" || rc=1
    return $rc
}
part_paper() {
    # plain PyTorch only: the Keras step engine feeds keras-hub through tf.data, and TensorFlow (a 274-573 MB wheel)
    # cannot travel to the host; 5 timed steps, not the source's 100
    local steps=() rc=0
    if [[ $size == full ]]; then steps=(--steps 5 --timeout 60); fi
    bench run --stack pytorch --suite paper --workload bert --size "$size" --device "$device" --repeats 1 \
        "${steps[@]}" --out "$work/results/runs/paper" || rc=1
    bench run --stack pytorch --suite paper --workload segment_anything --workload stable_diffusion --task predict \
        --size "$size" --device "$device" --repeats 1 "${steps[@]}" --out "$work/results/runs/paper" || rc=1
    return $rc
}

summarise() {  # OUT/summary.md: the parts so far, then what bench collect prints of the records
    {   echo "# GPU window: $device, size $size, $(date -u +%FT%TZ)"
        echo; echo "| part | exit | seconds |"; echo "| --- | --- | --- |"
        sed 's/^/| /; s/\t/ | /g; s/$/ |/' "$work/parts.tsv"
        echo; echo '```'
        bench collect "$work/results/runs" -o "$work/results/window.csv" --no-history 2>&1 | tail -n 60
        echo '```'
    } >"$out/summary.md.tmp" && mv "$out/summary.md.tmp" "$out/summary.md"
    tar czf "$out/window.tar.gz.tmp" -C "$work" . && mv "$out/window.tar.gz.tmp" "$out/window.tar.gz"
}

: >"$work/parts.tsv"
status=0
for p in $parts; do
    t=${limit[$p]}
    [[ $device == cpu ]] && t=900
    echo "== part $p (limit $t s)"
    start=$SECONDS
    timeout --kill-after=10 "$t" bash -c "$(declare -p work device size fit four; declare -f bench "part_$p"); part_$p" \
        >"$work/logs/$p.log" 2>&1
    rc=$?
    printf '%s\t%s\t%s\n' "$p" "$rc" "$((SECONDS - start))" >>"$work/parts.tsv"
    echo "   exit $rc in $((SECONDS - start)) s; log: logs/$p.log"
    tail -n 5 "$work/logs/$p.log"
    ((rc)) && status=1
    summarise
done
exit $status

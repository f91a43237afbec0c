#!/usr/bin/env bash
# The CPU measurement (results/method-cpu/README.md). Each variant interleaved with its default, round by
# round and stack by stack, the pair's order alternating by round (AB, BA, AB).
# hrnn-cpu: mnist_hierarchical_rnn, default and row_lstm=reshape on the Keras stacks, the default on the twins.
# verbose-cpu: mnist_mlp and mnist_cnn, default and verbose=0 on the Keras stacks, the default on the twins.
# Run from the repository root after `make build DEVICE=cpu` (images of the six stacks and the collector); the
# local settings of .ci/run (BASE_IMAGE, CA_BUNDLE, DOCKER, COMPOSE, PYTHON) pass through the environment.
# It writes results/method-cpu/{runs/,hrnn-cpu.csv,verbose-cpu.csv,report.md}; then
# `python results/method-cpu/summarise.py results/method-cpu/hrnn-cpu.csv results/method-cpu/verbose-cpu.csv`.
set -x
cd "$(dirname "$0")/../.."
common=(DEVICE=cpu RESULTS_DIR="$PWD/results/method-cpu" REPEATS=3 SEED=1)
keras="keras2-tf keras3-tf keras3-jax keras3-torch"
all="$keras pytorch jax"
one() {  # one RUN ROUND STACK [make args...]
    local run=$1 round=$2 stack=$3; shift 3
    make --no-print-directory bench-$stack "${common[@]}" RUN=$run ROUND=$round STACKS="$all" "$@"
}
pair() {  # pair RUN ROUND STACK WORKLOADS VARIANT_SET
    local a=(WORKLOADS="$4") b=(WORKLOADS="$4" SET="$5")
    if (( $2 % 2 )); then one $1 $2 $3 "${a[@]}"; one $1 $2 $3 "${b[@]}"
    else one $1 $2 $3 "${b[@]}"; one $1 $2 $3 "${a[@]}"; fi
}
date
for r in 1 2 3; do
  for s in $keras; do
    pair hrnn-cpu $r $s mnist_hierarchical_rnn row_lstm=reshape
    pair verbose-cpu $r $s "mnist_mlp mnist_cnn" verbose=0
  done
  for s in pytorch jax; do
    one hrnn-cpu $r $s WORKLOADS=mnist_hierarchical_rnn
    one verbose-cpu $r $s WORKLOADS="mnist_mlp mnist_cnn"
  done
done
date
for run in hrnn-cpu verbose-cpu; do make --no-print-directory collect "${common[@]}" RUN=$run; done
date
echo MEASURE-DONE

#!/usr/bin/env bash
# The SkyPilot task's run (cloud/dlbench.sky.yaml), on the VM itself after cloud/setup.sh: `make doctor`, then
# `make bench-all` with every stack of the comparison on this VM's one GPU, results in
# <results root>/<RUN_NAME>/<GPU name>/ (the bucket the task mounts). The knobs come from the task's envs:
# RUN_NAME, and those set of SUITE STACKS SIZE REPEATS SEED PRICE_PER_HOUR REGISTRY and the bench run inputs
# PASS_VARS names (bench.host.cloud.launch_commands): an empty one is unset (SkyPilot exports a task's empty env as
# K='', which make would take as set) and left to the Makefile, whose defaults are bench's own (bench/core/request.py), so none is restated here.
#   usage: cloud/run.sh <results root>
set -euo pipefail

root=${1:?usage: cloud/run.sh <results root (the mounted bucket)>}
: "${RUN_NAME:?set RUN_NAME}"
request=()
for var in SUITE STACKS SIZE REPEATS SEED ${PASS_VARS:-}; do
  [[ $var =~ ^[A-Z_]+$ ]] || { echo "dlbench run: PASS_VARS holds $var, not a variable name" >&2; exit 2; }
  if [ -n "${!var:-}" ]; then request+=("$var=${!var}"); else unset "$var"; fi
done
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -c 'A-Za-z0-9\n' '-')
[ -n "$gpu" ] || { echo "dlbench run: nvidia-smi names no GPU" >&2; exit 1; }
out=$root/$RUN_NAME/$gpu
mkdir -p "$out"

# setup.sh added this user to the docker group, which only new logins see: sudo until then. The commit is
# read here, as the owner of the checkout (git refuses another user's repository).
as=()
docker info >/dev/null 2>&1 || as=(sudo)
# SkyPilot's workdir copies the tree as it is: bench.core.commit names its code (-dirty.<hash of the edits> where
# bench/ differs from HEAD), as the Makefile would and as env.git_commit does inside a cell
commit=$(python3 -m bench.host commit 2>/dev/null) || commit=unknown

# The cooldown's idle baseline, read before make doctor's GEMM probe heats the GPU, for every stack of every round,
# only where a COOLDOWN above 0 uses it (as bench.host.launch reads it for make bench-all; set IDLE_TEMP_C to give it).
idle=()
if [ -z "${IDLE_TEMP_C:-}" ] && [[ ${COOLDOWN:-} =~ [1-9] ]]; then  # a digit other than 0: above 0 (make checks it)
  temp=$(nvidia-smi --query-gpu=temperature.gpu,uuid --format=csv,noheader 2>/dev/null | head -1 | sed 's/,.*//' || true)
  [[ $temp =~ ^[0-9]+(\.[0-9]+)?$ ]] && idle=("IDLE_TEMP_C=$temp")
fi
echo "dlbench run: ${SUITE:-the default suite} on $gpu into $out${as[*]:+ (through sudo)}"
${as[@]+"${as[@]}"} make doctor DEVICE=gpu RESULTS_DIR="$out" GIT_COMMIT="$commit"
# HISTORY=off: the bucket is a FUSE mount (goofys on S3), which cannot take SQLite's random writes, so the VM
# collects the CSV only; `make cloud-collect` at home appends the run to the local results/history.sqlite.
${as[@]+"${as[@]}"} make bench-all DEVICE=gpu ${request[@]+"${request[@]}"} ${idle[@]+"${idle[@]}"} RESULTS_DIR="$out" \
  PRICE_PER_HOUR="${PRICE_PER_HOUR:-}" REGISTRY="${REGISTRY:-}" GIT_COMMIT="$commit" HISTORY=off

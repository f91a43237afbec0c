# Benchmark matrix of six stacks (keras2-tf: Keras 2 on TensorFlow; keras3-tf, keras3-jax, keras3-torch: Keras 3
# on TensorFlow, JAX and PyTorch; pytorch: plain PyTorch; jax: plain JAX): build the stack images and the collector,
# run the stacks in rounds (every stack once per round, in a shuffled order), collect the results. `make` alone lists
# the targets.
#
# Knobs: STACKS (default: DEFAULT_STACKS in images/stacks.mk), SUITE (classic|tuning|paper), SIZE,
#        DEVICE (auto|cpu|gpu), FLAVOR (image flavor, default: the device's; FLAVOR=gpu DEVICE=cpu runs
#        the GPU images on a CPU), REPEATS (default: 3 on GPU, 1 on CPU), TIMEOUT (per-cell limit, s),
#        TELEMETRY_SAMPLES=1, PROFILE=1 (a profile of each cell after its timed window: docs/profile.md), SYNC (timing cadence: epoch|step|every:N, default epoch), SET (knobs for every
#        cell, e.g. SET="tf32=off": `bench knobs`; the cells' variant is named after them), SEED (the rounds'
#        shuffle, default 1), ORDER (shuffled|abba: how each round orders the stacks), COOLDOWN (GPU: max s to wait before each cell for the GPU to cool back to
#        idle + 3 degC, refused on a CPU run; IDLE_TEMP_C: that idle temperature, read by bench-all with nvidia-smi before the first stack when COOLDOWN is set, refused on a CPU run too), DATA (auto|real|synthetic: the epoch suites' (classic, tuning) data), RUN, RESULTS_DIR, BASE_IMAGE,
#        CA_BUNDLE, DOCKER, COMPOSE, PRICE_PER_HOUR ($ per GPU-hour in the report),
#        REGISTRY (pull images tagged by their inputs where it has them; make push), HISTORY (on|off: collect
#        appends the run to $(RESULTS_DIR)/history.sqlite; off: the CSV only, for a RESULTS_DIR on a bucket's FUSE
#        mount, which takes no SQLite writes: cloud/run.sh). Also passed through to
#        `bench run` as they are: BATCH_SIZE, EPOCHS, SAMPLES, STEPS, SEQ_LEN, WORKLOADS, TASKS, VARIANTS, COMPILE, NO_AUGMENT=1
#        (`python3 -m bench.host request vars`). Every default (SUITE, SIZE, REPEATS, SEED, ...) is bench's own,
#        declared once in bench/core/request.py; only what you set is passed on.

SHELL := /bin/bash
comma := ,
.DEFAULT_GOAL := help

# $(call not_one_path,P): non-empty when P is not one shell word as the recipes write it, unquoted (a space splits it, a
# quote opens a string).
not_one_path = $(or $(filter-out 1,$(words $(1))),$(findstring ',$(1)),$(findstring ",$(1)))
# A checkout under such a path is refused, whatever the goal, before anything runs: its path goes unquoted into the
# recipes (the default RESULTS_DIR, the docs site, the window's rehearsal) and into make's own word lists, which no
# quoting mends; a clone in "/tmp/with space/repo" ran make preflight as `--out /tmp/with space/...` ("unrecognized
# arguments: space/repo/results/doctor/host.json") after make -j had started the builds.
$(if $(call not_one_path,$(CURDIR)),$(error this checkout's path '$(CURDIR)' holds a space or a quote, which make \
  cannot quote in every recipe: clone it under a path without either))

# The stack lists, services and Dockerfiles: written from bench/core/stacks.py by `make stacks`.
include images/stacks.mk
PYTHON ?= python3
# The host's tools, one front door (`$(PYTHON) -m bench.host --help` lists them; standard library only).
HOST_CLI := $(PYTHON) -m bench.host
# The inputs of `bench run` and their defaults (bench/core/request.py).
REQUEST := $(HOST_CLI) request
# what the user set (command line or environment), as opposed to a default this Makefile filled in
user_set = $(filter command line environment environment override,$(origin $(1)))
STACKS ?= $(DEFAULT_STACKS)
ifeq ($(origin SUITE),undefined)
  SUITE := $(shell $(REQUEST) default suite)
endif
ifeq ($(origin SEED),undefined)
  SEED := $(shell $(REQUEST) default seed)
endif
ORDER ?= shuffled
# The inputs passed through to `bench run` as they are (TIMEOUT, SYNC, SET, DATA, BATCH_SIZE, ...): only those set.
REQUEST_VARS := $(shell $(REQUEST) vars)
# one shell word for any value: single-quoted, each ' in it closed, escaped and reopened, so a value with a quote
# reaches the check (and bench run) intact instead of breaking the command line that carries it
shq = '$(subst ','\'',$(1))'
REQUEST_PAIRS = $(foreach v,$(REQUEST_VARS),$(if $($(v)),$(call shq,$(v)=$($(v)))))
PRICE_PER_HOUR ?=
DEVICE ?= auto
RESULTS_DIR ?= $(CURDIR)/results
BASE_IMAGE ?=
CA_BUNDLE ?=
DOCKER ?= docker
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)

HAS_GPU := $(shell nvidia-smi -L >/dev/null 2>&1 && echo 1)
ifeq ($(DEVICE),gpu)
  ifneq ($(HAS_GPU),1)
    $(if $(filter bench-% build configure check-request selftest fidelity,$(MAKECMDGOALS)),$(error DEVICE=gpu but \
      nvidia-smi finds no NVIDIA GPU on this host))
  endif
  RUN_DEVICE := gpu
else ifeq ($(DEVICE),cpu)
  RUN_DEVICE := cpu
else ifeq ($(DEVICE),auto)
  RUN_DEVICE := $(if $(HAS_GPU),gpu,cpu)
else
  $(error DEVICE must be auto, cpu or gpu (got '$(DEVICE)'))
endif
# Rounds of make bench-all: REPEATS, or bench's own default for the device. Round r runs every stack once,
# in an order shuffled with SEED (bench/core/rounds.py); a rerun with the same plan resumes where it stopped.
ROUNDS := $(or $(REPEATS),$(shell $(REQUEST) default repeats --device $(RUN_DEVICE)))
# The image flavor follows the device; FLAVOR=gpu DEVICE=cpu runs the GPU images on the CPU (what CI
# does to exercise the artefacts GPU users pull: CUDA builds of the frameworks run on a CPU too).
FLAVOR ?= $(RUN_DEVICE)
ifeq ($(filter cpu gpu,$(FLAVOR)),)
  $(error FLAVOR must be cpu or gpu (got '$(FLAVOR)'))
endif
ifeq ($(FLAVOR)-$(RUN_DEVICE),cpu-gpu)
  $(error FLAVOR=cpu images cannot use a GPU; use FLAVOR=gpu or DEVICE=cpu)
endif
# the stacks the goals name (make bench-pytroch, build-keras3-jaxx; collector, an image, too), checked with STACKS in
# one check: else a CPU host said "gpu image only ... add FLAVOR=gpu", and with it compose took "bench" for the service
# name. STACKS itself names stacks only.
goal_stacks := $(patsubst build-%,%,$(filter build-%,$(MAKECMDGOALS))) \
	$(patsubst bench-%,%,$(filter-out bench-all,$(filter bench-%,$(MAKECMDGOALS))))
named_stacks := $(STACKS) $(goal_stacks)
unknown_stacks := $(strip $(filter-out $(ALL_STACKS),$(STACKS)) $(filter-out $(ALL_STACKS) collector,$(goal_stacks) \
	$(foreach g,doctor selftest fidelity,$(patsubst $(g)-%,%,$(filter $(g)-%,$(MAKECMDGOALS))))))
ifneq ($(unknown_stacks),)
  $(error unknown stack(s) $(unknown_stacks); known: $(ALL_STACKS))
endif
gpu_only_stacks := $(sort $(filter-out $(CPU_STACKS) collector,$(named_stacks)))
ifeq ($(FLAVOR),cpu)
  ifneq ($(gpu_only_stacks),)
    $(if $(filter bench-% build build-% doctor selftest,$(MAKECMDGOALS)),$(error $(gpu_only_stacks): gpu image only \
      (no CPU build of its framework can be locked); add FLAVOR=gpu (it runs on a CPU too)))
  endif
endif
# SIZE unset or auto is resolved here as bench run resolves it on this device, so that the run's name says the size
# its cells ran at; the cloud gets the SIZE the user set (SIZE_SET), which its GPU resolves
SIZE_SET := $(if $(call user_set,SIZE),$(SIZE))
ifeq ($(if $(call user_set,SIZE),$(SIZE),auto),auto)
  override SIZE := $(shell $(REQUEST) default size --device $(RUN_DEVICE))
endif
RUN ?= $(SUITE)-$(SIZE)-$(RUN_DEVICE)$(if $(filter-out $(RUN_DEVICE),$(FLAVOR)),-$(FLAVOR)-images)
# The images' records name this code (env.git_commit): HEAD, -dirty.<hash of the edits> where bench/ differs from it,
# as bench.core.commit (the one definition) names it inside a cell too; unknown outside a git checkout
# read on first use, once per make: most goals (make help, each bench-<stack> step) never need it
GIT_COMMIT = $(eval GIT_COMMIT := $$(shell $(HOST_CLI) commit 2>/dev/null || echo unknown))$(GIT_COMMIT)
COMPOSE_FILES := -f compose.yaml $(if $(filter gpu,$(RUN_DEVICE)),-f compose.gpu.yaml)

export BENCH_FLAVOR := $(FLAVOR)
export BENCH_DEVICE := $(RUN_DEVICE)
export BENCH_RESULTS := $(RESULTS_DIR)
export BENCH_UID := $(shell id -u)
export BENCH_GID := $(shell id -g)
export DOCKER_BUILDKIT := 1

BUILD_ARGS = --build-arg FLAVOR=$(FLAVOR) --build-arg BENCH_GIT_COMMIT=$(GIT_COMMIT) \
	$(if $(BASE_IMAGE),--build-arg BASE_IMAGE=$(BASE_IMAGE)) \
	$(if $(CA_BUNDLE),--secret id=ca_bundle$(comma)src=$(CA_BUNDLE))

# collect's results history (results/history.sqlite, docs/history.md); off on a bucket mount (cloud/run.sh)
HISTORY ?= on
ifeq ($(filter on off,$(HISTORY)),)
  $(error HISTORY must be on or off (got '$(HISTORY)'))
endif

FIDELITY_WORKLOAD ?= cifar10_cnn
# where make fidelity writes, under RESULTS_DIR: fidelity/local is ignored by git; the committed measurements in
# fidelity/ (results/fidelity/README.md) are written only on purpose, FIDELITY_DIR=fidelity
FIDELITY_DIR ?= fidelity/local
# The doctor's Container Toolkit check runs `nvidia-smi -L` in this image with --gpus all.
TOOLKIT_IMAGE ?= $(or $(BASE_IMAGE),python:3.11-slim-bookworm)
DOCTOR := $(HOST_CLI) doctor host --device $(RUN_DEVICE) --flavor $(FLAVOR) --stacks "$(STACKS)" \
	--docker "$(DOCKER)" --compose "$(COMPOSE)" --toolkit-image "$(TOOLKIT_IMAGE)"

.PHONY: help git-commit check-request configure preflight doctor selftest build bench-all collect report site compare fidelity flops test test-full test-unit test-e2e test-slow slow-tests \
	lint lock stacks clean version-stack compare-versions cloud cloud-k8s cloud-collect push images e2e-base e2e-images
# bench-<stack> and build-<image> are pattern rules; make skips pattern rules for .PHONY targets.

help: ## List the targets
	@echo "make bench-all   build all images, run every stack in rounds (shuffled order), collect a CSV"
	@echo "make test        CI's test: lint, unit tests, the Docker end-to-end test's covering cells (smoke size, CPU)"
	@echo "make test-full   all of it: every unit test and cell, both image flavors, the whole window rehearsal"
	@echo
	@grep -hE '^[a-zA-Z0-9%_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'
	@echo
	@echo "Now: DEVICE=$(DEVICE) -> device $(RUN_DEVICE), images $(FLAVOR), SIZE=$(SIZE), SUITE=$(SUITE), RUN=$(RUN)"
	@echo "     STACKS=$(STACKS)"

configure: ## Write .env so that `docker compose run <service>` uses this host's flavor (cpu/gpu)
	@printf '%s\n' "# written by make configure" \
	  "COMPOSE_FILE=compose.yaml$(if $(filter gpu,$(RUN_DEVICE)),:compose.gpu.yaml)" \
	  "BENCH_FLAVOR=$(FLAVOR)" "BENCH_DEVICE=$(RUN_DEVICE)" "BENCH_RESULTS=$(RESULTS_DIR)" \
	  "BENCH_UID=$(BENCH_UID)" "BENCH_GID=$(BENCH_GID)" > .env
	@echo "wrote .env (flavor $(FLAVOR))"

build: configure $(addprefix build-,$(STACKS)) build-collector ## Build the stack images and the collector

# An image's label INPUTS_LABEL names the inputs it was built from (its registry tag, bench/host/imagetag.py): make
# push pushes an image only under the tag its label names, and make images takes a pulled image only where its label is
# the tag it pulled, so that a tag, the code under it and the commit its records name (env.git_commit, which the build
# bakes in) are one build's. An image built on another BASE_IMAGE than the Dockerfile's pinned one says so in its label
# (+base=...): the tag does not hash the base, so such an image is never pushed or taken under it.
# $(call inputs_label,REF): that label of image REF, as a shell substitution.
INPUTS_LABEL := dlbench.inputs
inputs_label = $$($(DOCKER) image inspect --format '{{index .Config.Labels "$(INPUTS_LABEL)"}}' $(1) 2>/dev/null)

build-%: ## Build one image: build-<stack> or build-collector
	inputs=$$($(HOST_CLI) imagetag $* $(if $(filter collector,$*),latest,$(FLAVOR))) && \
	$(DOCKER) build -f $(or $(dockerfile_$*),images/$*/Dockerfile) $(BUILD_ARGS) $(build_args_$*) \
	  --build-arg BENCH_IMAGE=dlbench/$*:$(if $(filter collector,$*),latest,$(FLAVOR)) \
	  --label "$(INPUTS_LABEL)=$$inputs$(if $(BASE_IMAGE),+base=$(BASE_IMAGE))" \
	  -t dlbench/$*:$(if $(filter collector,$*),latest,$(FLAVOR)) .

# An image's first repository digest (a registry's once pulled or pushed; Docker's containerd image store, the default
# of new Docker 29 installs, also lists one for an image built here), else its local image ID, as a shell substitution
# for a recipe: its records' env.image_digest. And its local image ID alone, which tagging and pushing leave as it is (make push
# fills RepoDigests of an unchanged image): its records' env.image_id, and part of the key of the GEMM peak measured
# in it (bench.run.peaks.image_identity). Both go to the container wherever it runs a cell or the doctor.
image_digest = $$($(DOCKER) image inspect --format '{{if .RepoDigests}}{{index .RepoDigests 0}}{{else}}{{.Id}}{{end}}' \
  dlbench/$(1):$(FLAVOR) 2>/dev/null)
image_id = $$($(DOCKER) image inspect --format '{{.Id}}' dlbench/$(1):$(FLAVOR) 2>/dev/null)
image_env = -e BENCH_IMAGE_DIGEST="$(call image_digest,$(1))" -e BENCH_IMAGE_ID="$(call image_id,$(1))"

# the inputs the user set, as `bench run` options (an input bench rejects stops make: its error is printed above;
# --device: a GPU-only input, COOLDOWN or IDLE_TEMP_C, is refused on a CPU run; --suite: SET, COMPILE, NO_AUGMENT
# are refused for the tuning suite, which runs its own grid)
REQUEST_ARGS = $(shell $(REQUEST) args --device $(RUN_DEVICE) --suite $(call shq,$(SUITE)) $(REQUEST_PAIRS) || \
  echo __bad_request__)

# the loop's variables (SUITE, SIZE, REPEATS, SEED, ORDER, and a stack's ROUND, one of the REPEATS rounds: request check) and, for bench-all or a stack's round
# (ROUND), the rounds they make with STACKS (launch --dry-run: ORDER=abba takes two stacks, a stack named twice)
# and, but for a round (the launcher holding the folder runs it), that no other bench-all holds the run folder:
# "ok", or empty when one is bad (its error printed above)
LOOP_OK = $(shell $(REQUEST) check $(foreach v,SUITE SIZE SEED ORDER,$(call shq,$(v)=$($(v)))) \
  $(if $(or $(REPEATS),$(ROUND)),$(call shq,REPEATS=$(ROUNDS))) $(if $(ROUND),$(call shq,ROUND=$(ROUND))) \
  $(if $(or $(ROUND),$(filter bench-all check-request,$(MAKECMDGOALS))),&& $(HOST_CLI) \
  launch compose --stacks $(call shq,$(STACKS)) --rounds $(call shq,$(ROUNDS)) --seed $(call shq,$(SEED)) \
  --order $(call shq,$(ORDER)) $(if $(ROUND),,--run-dir $(call shq,$(RESULTS_DIR)/runs/$(RUN))) --dry-run >/dev/null) \
  && echo ok)

# A '$' the user typed in a knob (make 'RUN=a$b', or RUN='a$b' in the environment) is make's: $b is its variable b,
# empty, so the run was named 'a' and every check saw 'a'. A $(NAME) or ${NAME} reference is make's on purpose; a
# lone $ is refused, whatever the goal.
dollar := $$
make_refs := $$$$ $$( $${
knobs := STACKS SUITE SIZE DEVICE FLAVOR REPEATS SEED ORDER ROUND RUN RESULTS_DIR PRICE_PER_HOUR HISTORY $(REQUEST_VARS)
stray_dollar = $(findstring $(dollar),$(call drop_refs,$(value $(1)),$(make_refs)))
drop_refs = $(if $(2),$(call drop_refs,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,3,$(2))),$(1))
$(foreach v,$(knobs),$(if $(and $(call user_set,$(v)),$(call stray_dollar,$(v))),$(error $(v): a lone '$$' in \
  '$(value $(v))': make reads $$<letter> as its own variable (here it gives '$($(v))'); write $$$$ for a '$$' itself)))

# RESULTS_DIR goes unquoted into recipes: empty, the preflight wrote its record to /doctor/host.json (and the
# containers' results went to ./results); with a space, the preflight's --out split in two (after `make -j` had
# started the builds) and mkdir made two folders.
ifneq ($(call user_set,RESULTS_DIR),)
  $(if $(call not_one_path,$(RESULTS_DIR)), \
    $(error RESULTS_DIR must be one folder path, without spaces or quotes (got '$(RESULTS_DIR)')))
endif

# The inputs are checked as make reads this file, before any target starts, so a bad one stops make bench-all before
# its preflight or any build whatever order -j runs its prerequisites in, and make bench-<stack> before its container.
ifneq ($(filter check-request bench-%,$(MAKECMDGOALS)),)
  REQUEST_ARGS := $(REQUEST_ARGS)
  $(if $(filter __bad_request__,$(REQUEST_ARGS)),$(error an input above is not valid for bench run))
  $(if $(LOOP_OK),,$(error an input above is not valid for make $(firstword $(filter check-request bench-%,$(MAKECMDGOALS)))))
endif

# RUN names a folder of results/runs and results/<RUN>.csv: one name (bench.core.request.check_run_name, which
# the cloud's CLOUD_RUN meets too; its error printed above)
ifneq ($(filter check-request bench-% collect,$(MAKECMDGOALS)),)
  $(if $(shell $(REQUEST) run-name -- $(call shq,$(RUN)) && echo ok),,$(error RUN above is not one folder name))
endif
# PRICE_PER_HOUR goes to bench report after the run (collect): a bad one failed the report once every cell had run.
# bench.core.price.dollars checks it, as it checks bench report's --price-per-hour (its error printed above).
ifneq ($(and $(PRICE_PER_HOUR),$(filter check-request bench-all collect report,$(MAKECMDGOALS))),)
  $(if $(shell $(REQUEST) price -- $(call shq,$(PRICE_PER_HOUR)) && echo ok),,$(error PRICE_PER_HOUR above is not a price))
endif

check-request: ## Check the inputs (SUITE, SIZE, REPEATS, SEED, ORDER, SET, BATCH_SIZE, ...): a bad one stops make before anything starts
	@:

bench-%: ## Run one stack in its container: bench-<stack> (e.g. bench-keras3-jax)
	@mkdir -p $(RESULTS_DIR)
	$(COMPOSE) $(COMPOSE_FILES) run --rm -T $(call image_env,$*) $(service_$*) \
	  bench run --stack $* --suite $(SUITE) --size $(SIZE) --device $(RUN_DEVICE) --out /results/runs/$(RUN) \
	  $(if $(ROUND),--round $(ROUND) --repeats $(ROUNDS) --seed $(SEED) --round-stacks "$(STACKS)" \
	    $(if $(filter-out shuffled,$(ORDER)),--order $(ORDER)), \
	    $(if $(REPEATS),--repeats $(REPEATS))) $(REQUEST_ARGS)

preflight: ## Host checks (Docker, disk, driver vs images, GPU not shared...): bench-all stops on a problem
	@$(DOCTOR) --out $(RESULTS_DIR)/doctor/host.json

doctor: ## Host checks, then each built image's (GPU seen, a matmul, GEMM TFLOP/s): table + results/doctor/*.json
	@status=0; $(MAKE) --no-print-directory preflight || status=1; \
	for s in $(STACKS); do $(MAKE) --no-print-directory doctor-$$s || status=1; done; exit $$status

doctor-%:
	@if ! $(DOCKER) image inspect dlbench/$*:$(FLAVOR) >/dev/null 2>&1; then \
	  echo "$*: image dlbench/$*:$(FLAVOR) not built yet (make build): its checks skipped"; \
	else mkdir -p $(RESULTS_DIR)/doctor && $(COMPOSE) $(COMPOSE_FILES) run --rm -T \
	  $(call image_env,$*) $(service_$*) \
	  bench doctor --stack $* --device $(RUN_DEVICE) --out /results/doctor/$*-$(FLAVOR).json; fi

selftest: ## Each built image checks its instruments on this device (barrier, GEMM peak, TF32, energy, memory, MFU): results/selftest/*.json
	@status=0; for s in $(STACKS); do $(MAKE) --no-print-directory selftest-$$s || status=$$?; done; exit $$status

selftest-%:
	@if ! $(DOCKER) image inspect dlbench/$*:$(FLAVOR) >/dev/null 2>&1; then \
	  echo "make selftest: image dlbench/$*:$(FLAVOR) not built yet: run make build STACKS=$* FLAVOR=$(FLAVOR) \
	first (or python -m bench selftest natively, docs/selftest.md)" >&2; exit 2; \
	else mkdir -p $(RESULTS_DIR)/selftest && $(COMPOSE) $(COMPOSE_FILES) run --rm -T $(service_$*) \
	  bench selftest --device $(RUN_DEVICE) --out /results/selftest/$*-$(FLAVOR).json; fi

# bench-all's launcher holds the run folder (bench.core.runlock: a second bench-all into it is refused); not under
# make -n, which writes nothing (the folder would be made)
RUN_DIR_LOCK = $(if $(findstring n,$(firstword -$(MAKEFLAGS))),,--run-dir "$(RESULTS_DIR)/runs/$(RUN)")
bench-all: check-request preflight configure $(if $(REGISTRY),images,build) ## Preflight, build (or pull), run the stacks in rounds (shuffled order per round), collect results/$(RUN).csv
	@if [ "$(RUN_DEVICE)" = cpu ]; then \
	  echo "!!!! CPU MODE: no NVIDIA GPU in use: CPU images, size $(SIZE). Numbers are NOT GPU benchmarks. !!!!"; fi
	@status=0; $(HOST_CLI) launch compose --stacks "$(STACKS)" --rounds $(ROUNDS) --seed $(SEED) \
	  --order $(ORDER) --device $(RUN_DEVICE) $(if $(COOLDOWN),--cooldown $(call shq,$(COOLDOWN))) \
	  --make "$(MAKE)" $(RUN_DIR_LOCK) || status=$$?; [ $$status -le 1 ] || exit $$status; \
	$(MAKE) --no-print-directory collect || { echo "collect failed" >&2; exit 1; }; exit $$status

collect: ## Merge results/runs/$(RUN) into results/$(RUN).csv (and results/history.sqlite unless HISTORY=off), then rewrite results/report.md (collector container)
# Checked here: in the container the error named its own path (/results/runs/...) and not what to run first.
	@test -d "$(RESULTS_DIR)/runs/$(RUN)" || { echo "collect: no run $(RUN) in $(RESULTS_DIR)/runs/: make bench-all \
	writes it (with the same SUITE, SIZE, DEVICE), or RUN= names another" >&2; exit 2; }
	$(COMPOSE) $(COMPOSE_FILES) run --rm -T collector \
	  bench collect /results/runs/$(RUN) -o /results/$(RUN).csv$(if $(filter off,$(HISTORY)), --no-history)
	$(MAKE) --no-print-directory report

report: ## results/report.md (one section per collected results/*.csv) + PNG plots in results/plots/<run>/
	$(COMPOSE) $(COMPOSE_FILES) run --rm -T collector bench report /results -o /results \
	  $(if $(PRICE_PER_HOUR),--price-per-hour $(PRICE_PER_HOUR))

# natively where $(PYTHON) has the collect extra (seconds), else in the collector image
site: ## results/site/index.html: runs, charts, every cell's record; opens offline from the file system (bench site)
	@if $(PYTHON) -c "import pandas, scipy, plotly, tabulate" 2>/dev/null; then \
	  $(PYTHON) -m bench site $(RESULTS_DIR) -o $(RESULTS_DIR)/site; \
	else $(COMPOSE) $(COMPOSE_FILES) run --rm -T collector bench site /results -o /results/site; fi

compare: ## Per-cell ratios B/A with a significance test: make compare A=run1.csv B=run2.csv (under results/)
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make compare A=<csv under results/> B=<csv>" >&2; exit 2; }
# Checked here: in the container a missing file was refused under its own path (/results/...), after compose started.
	@for f in "$(A)" "$(B)"; do test -f "$(RESULTS_DIR)/$$f" || { echo "compare: no file $(RESULTS_DIR)/$$f: A and B \
	name CSVs under RESULTS_DIR (make collect writes results/<RUN>.csv)" >&2; exit 2; }; done
	$(COMPOSE) $(COMPOSE_FILES) run --rm -T collector bench compare /results/$(A) /results/$(B)

# Version stacks (bench/host/versions.py, docs/versions.md): a stack = another stack + pin changes, then an ordinary
# stack; compare-versions runs two stacks in ABBA rounds (REPEATS: bench.host.versions.COMPARE_ROUNDS) into one run.
version-stack: ## Declare and lock a stack = BASE + pins: make version-stack BASE=keras3-jax PINS="keras==3.14.1 keras-hub==0.29.1"
	@test -n "$(BASE)" -a -n "$(PINS)" || { echo "usage: make version-stack BASE=<stack> PINS=\"name==version ...\"" >&2; exit 2; }
	@$(HOST_CLI) versions add --base "$(BASE)" --pins "$(PINS)"

compare-versions: ## BASE vs CANDIDATE in interleaved ABBA rounds on this device, then collect: make compare-versions BASE=keras3-jax CANDIDATE=<stack> [SUITE=] [REPEATS=4]
	@test -n "$(BASE)" -a -n "$(CANDIDATE)" || { echo "usage: make compare-versions BASE=<stack> CANDIDATE=<stack>" \
	  "[SUITE=classic] [REPEATS=4] [DEVICE=auto]" >&2; exit 2; }
	@$(HOST_CLI) versions pair "$(BASE)" "$(CANDIDATE)"
	$(MAKE) --no-print-directory bench-all STACKS="$(BASE) $(CANDIDATE)" ORDER=abba \
	  REPEATS=$(or $(REPEATS),$$($(HOST_CLI) versions rounds)) \
	  RUN=$(if $(call user_set,RUN),$(RUN),versions-$(BASE)-vs-$(CANDIDATE)-$(SUITE)-$(SIZE)-$(RUN_DEVICE))

# Registry (REGISTRY=ghcr.io/<owner>/dlbench): an image's tag names its flavor and a hash of its build inputs
# (bench/host/imagetag.py), so a changed lock, Dockerfile or harness is a new tag and a stale image is never reused.
# The images of STACKS (what make build builds: the default stacks, or those named), but the derived ones
PUSH_STACKS = $(filter-out $(DERIVED_STACKS),$(if $(filter cpu,$(FLAVOR)),$(filter $(CPU_STACKS),$(STACKS)),$(STACKS)))
IMAGE_REF = $(REGISTRY)/$$i:$$($(HOST_CLI) imagetag $$i $$v)
for_images = for i in $(1) collector; do v=$$( [ $$i = collector ] && echo latest || echo $(FLAVOR) );
need_registry = @test -n "$(REGISTRY)" || { echo "usage: make $@ REGISTRY=<registry>/<prefix> [FLAVOR=cpu|gpu]" >&2; exit 2; }

push: ## Push the built images of FLAVOR, tagged by their inputs: make push REGISTRY=ghcr.io/<owner>/dlbench FLAVOR=gpu
# results/images/<flavor>.txt: one line per image pushed, "<tag reference> <digest reference>", the digest the push
# itself printed (so neither another repository's digest of the image nor Docker's short form of a Docker Hub name):
# make cloud-k8s pulls those by digest (bench/host/cloud.py read_digests). Written to .part and moved into place
# once every image is pushed: a push that fails midway (the registry refused one) keeps the last good push's list.
	$(need_registry)
	@mkdir -p $(RESULTS_DIR)/images
# Every image is checked before any is pushed: one not built, or built from other inputs than this tree's (built, then
# bench/ or a lock edited), stops the push whole (whoever pulled it under this tree's tag would run other code than
# the tag says), so a list is never left holding some of a push's images and not others.
	@bad=0; $(call for_images,$(PUSH_STACKS)) ref=$(IMAGE_REF) || exit 2; \
	  if ! built=$(call inputs_label,dlbench/$$i:$$v); then bad=1; \
	    echo "push: dlbench/$$i:$$v is not built: make build-$$i FLAVOR=$(FLAVOR)" >&2; \
	  elif [ "$$built" != "$${ref##*:}" ]; then bad=1; echo "push: dlbench/$$i:$$v was built from other inputs \
	($${built:-no $(INPUTS_LABEL) label}) than this tree's ($${ref##*:}): make build first" >&2; fi; \
	done; exit $$bad
	@set -eo pipefail; list=$(RESULTS_DIR)/images/$(FLAVOR).txt; trap 'rm -f "$$list.part"' EXIT; \
	$(call for_images,$(PUSH_STACKS)) ref=$(IMAGE_REF); \
	  $(DOCKER) tag dlbench/$$i:$$v $$ref; \
	  digest=$$($(DOCKER) push $$ref | sed -n 's/.*digest: \(sha256:[0-9a-f]*\).*/\1/p' | tail -n 1); \
	  test -n "$$digest" || { echo "push: $$ref pushed, but the push printed no digest" >&2; exit 1; }; \
	  echo "$$ref $${ref%:*}@$$digest"; \
	done | tee "$$list.part"; mv "$$list.part" "$$list"

# The pulls on a line of their own, as make -n runs a line naming $(MAKE) (it pulled and retagged under -n): they list
# the images they took in PULLED, and the builds take the others. Under -n the pulls do not run, so PULLED is not
# written: the builds' line reads none (a PULLED left by a stopped make images hid the builds a real run makes).
# PULLED is written whole, once: the cloud's RESULTS_DIR is a bucket's FUSE mount, which takes no appends (goofys).
PULLED = $(RESULTS_DIR)/images/.pulled
dry_run = $(findstring n,$(firstword -$(MAKEFLAGS)))
images: ## The images of STACKS: pulled from REGISTRY where it has their inputs' tag, built otherwise
	@mkdir -p $(RESULTS_DIR)/images && pulled=; $(call for_images,$(STACKS)) ref=$(IMAGE_REF) || exit 2; \
	  if [ -n "$(REGISTRY)" ] && $(DOCKER) pull -q $$ref >/dev/null 2>&1; then \
	    if [ "$(call inputs_label,$$ref)" = "$${ref##*:}" ]; then \
	      $(DOCKER) tag $$ref dlbench/$$i:$$v && pulled="$$pulled $$i" && echo "$$i: pulled $$ref"; continue; fi; \
	    echo "$$i: $$ref pulled, but its $(INPUTS_LABEL) label does not name that tag (pushed before make push \
	checked it, or by another tool): building"; \
	  else echo "$$i: $$ref not in the registry, building"; fi; \
	done; printf '%s\n' $$pulled > $(PULLED)
	@$(call for_images,$(STACKS)) $(if $(dry_run),,grep -qx $$i $(PULLED) 2>/dev/null ||) \
	  $(MAKE) --no-print-directory build-$$i || exit 1; \
	done
	@rm -f $(PULLED)

# Cloud (bench/host/cloud.py, cloud/dlbench.sky.yaml): one SkyPilot managed job per GPU type, each running every stack
# of SUITE on one GPU; results on a bucket. CLOUD_RUN names the run (a folder of the bucket).
GPUS ?=
BUCKET ?=
REGISTRY ?=
GPU_PRODUCT ?=
CLOUD_RUN ?= dlbench-$(SUITE)-$(shell date -u +%Y%m%d-%H%M)
# Only what the user set goes to the cloud; `bench.host cloud` takes the rest from the request's GPU defaults.
CLOUD_REQUEST = $(if $(call user_set,STACKS),--stacks "$(STACKS)") $(if $(SIZE_SET),--size $(SIZE_SET)) \
	$(if $(REPEATS),--repeats $(REPEATS)) $(if $(call user_set,SEED),--seed $(SEED)) \
	$(foreach v,$(REQUEST_VARS),$(if $($(v)),--input $(call shq,$(v)=$($(v)))))

cloud: ## SkyPilot jobs, one per GPU type: make cloud SUITE=paper GPUS="A100 H100" BUCKET=name [SPOT=1] [DRY_RUN=1]
	$(HOST_CLI) cloud launch --suite $(SUITE) --gpus "$(GPUS)" $(CLOUD_REQUEST) \
	  --bucket "$(BUCKET)" --run-name "$(CLOUD_RUN)" \
	  $(if $(SPOT),--spot) $(if $(PRICE_PER_HOUR),--price-per-hour $(PRICE_PER_HOUR)) \
	  $(if $(REGISTRY),--registry "$(REGISTRY)") $(if $(DRY_RUN),--dry-run)

cloud-k8s: ## A Kubernetes Job (no SkyPilot) on the images make push pushed: make cloud-k8s REGISTRY=... GPU_PRODUCT=...
	@$(HOST_CLI) cloud k8s --suite $(SUITE) $(CLOUD_REQUEST) \
	  --registry "$(REGISTRY)" --gpu-product "$(GPU_PRODUCT)" \
	  $(if $(wildcard $(RESULTS_DIR)/images/gpu.txt),--digests $(RESULTS_DIR)/images/gpu.txt)

# the run's name: FROM's last part, a trailing / dropped (FROM=s3://b/run/ collected into results/cloud/ itself and
# wrote results/.csv); the report runs on a line of its own, as make -n runs a line naming $(MAKE) (the collector too)
FROM_RUN = $(notdir $(patsubst %/,%,$(FROM)))
cloud-collect: ## Bring a cloud run home: make cloud-collect FROM=s3://bucket/<CLOUD_RUN> (gs://, or a folder); CSV + report
	@test -n "$(FROM_RUN)" || { echo "usage: make cloud-collect FROM=s3://<bucket>/<run> (or gs://..., or a folder)" >&2; exit 2; }
	$(HOST_CLI) cloud collect --source "$(FROM)" --dest "$(RESULTS_DIR)/cloud/$(FROM_RUN)" $(if $(DRY_RUN),--dry-run)
	$(if $(DRY_RUN),@echo "(dry run: collect and report skipped)",$(COMPOSE) $(COMPOSE_FILES) run --rm -T collector \
	  bench collect /results/cloud/$(FROM_RUN) -o /results/$(FROM_RUN).csv)
	$(if $(DRY_RUN),,$(MAKE) --no-print-directory report)

# FIDELITY_WORKLOAD: one epoch-timed workload's name (bench.core.workloadnames.check_fit_workload, from the workload
# folders' specs; its error printed above), checked before any container: an unknown or a step-timed one (bert) was
# refused in each stack's container.
ifneq ($(filter fidelity fidelity-%,$(MAKECMDGOALS)),)
  $(if $(and $(filter 1,$(words $(FIDELITY_WORKLOAD))), \
    $(shell $(REQUEST) fit-workload -- $(call shq,$(FIDELITY_WORKLOAD)) && echo ok)),,$(error FIDELITY_WORKLOAD is \
    not one workload's name, of an epoch-timed workload (got '$(FIDELITY_WORKLOAD)')))
endif
fidelity: ## Each timing cadence vs a free-running loop, per stack (writes results/$(FIDELITY_DIR)/<stack>-<device>.json)
	@mkdir -p $(RESULTS_DIR)/$(FIDELITY_DIR)
	@for s in $(STACKS); do $(MAKE) --no-print-directory fidelity-$$s || exit 1; done

fidelity-%:
	$(COMPOSE) $(COMPOSE_FILES) run --rm -T $(service_$*) bench fidelity --stack $* \
	  --workload $(FIDELITY_WORKLOAD) --size $(SIZE) --device $(RUN_DEVICE) --out /results/$(FIDELITY_DIR)/$*-$(RUN_DEVICE).json

# The GPU window (docs/gpu-window.md): the wheels the GPU host lacks, an environment holding what it holds, and the
# window itself rehearsed on the CPU there. WINDOW_PYTHON: a CPython 3.12, the host's (pyenv's where there is one).
WINDOW_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12))
WINDOW_PLATFORMS := manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64
REHEARSAL := $(CURDIR)/.window

window-wheels: ## The wheels the GPU host lacks (window/wheels.txt), for CPython 3.12 on x86-64, into .whl/
	rm -rf .whl
	$(PYTHON) -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
	  --implementation cp $(addprefix --platform ,$(WINDOW_PLATFORMS)) -d .whl -r window/wheels.txt
	@ls .whl | sed 's/-.*//' | sort | uniq -d | grep . && { echo "two versions of one package in .whl" >&2; exit 1; } || true
	@du -sh .whl

window-env: ## .window-venv: CPython 3.12 holding only what the GPU host holds (window/host-packages.txt)
	@$(WINDOW_PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null || { \
	  echo "window-env: no CPython 3.12 ('$(WINDOW_PYTHON)'); set WINDOW_PYTHON=/path/to/python3.12" >&2; exit 2; }
	$(PYTHON) -m uv venv -q --seed --python $(WINDOW_PYTHON) .window-venv
	$(PYTHON) -m uv pip install -q --python .window-venv/bin/python --no-deps --compile-bytecode -r window/host-packages.txt

window-rehearse: ## The GPU window on this CPU at smoke size (WINDOW_PARTS), in .window-venv with the carried wheels, then its checks
	rm -rf $(REHEARSAL)
	PATH="$(CURDIR)/.window-venv/bin:$$PATH" bash window/run.sh --device cpu --size smoke --parts "$(WINDOW_PARTS)" \
	  --work $(REHEARSAL)/work --site $(REHEARSAL)/site $(REHEARSAL)/out || echo "window/run.sh exited $$?; the checks decide"
	BENCH_WINDOW_REHEARSAL=$(REHEARSAL) BENCH_WINDOW_PARTS="$(WINDOW_PARTS)" $(PYTHON) -m pytest -q -p no:cacheprovider tests/window

git-commit: ## Print the code the records of a run from this tree name (GIT_COMMIT: -dirty.<hash> where bench/ changed)
	@echo $(GIT_COMMIT)

window-command: ## The GPU window's device command line, naming this clean tree's commit (docs/gpu-window.md)
	@test -z "$$(git status --porcelain)" || { echo "window-command: commit first: the records name the commit, and \
	the device copies the working tree as it is" >&2; exit 1; }
	@compgen -G ".whl/*.whl" >/dev/null || { echo "window-command: make window-wheels first" >&2; exit 1; }
	@echo 'BENCH_GIT_COMMIT=$(GIT_COMMIT) bash window/run.sh $$OUT'

# Two scopes of one test (docs/ci.md). TEST_SCOPE=cover (`make test`, CI's, under 30 minutes on two cores): every
# unit test but those tests/slow.txt lists (3 s or more each), the CPU images, and in them each suite's covering
# selection (tests/e2e/test_e2e_docker.py: every stack, a few cells each), and the window's rehearsal without its
# classic and tuning parts. TEST_SCOPE=full (`make test-full`, ~75 minutes): all of it, both image flavors.
# The unit tests and the image builds run as parallel jobs (builds wait on the network and the disk as much as on
# the CPU); the end-to-end cells then run alone, one at a time, with every build a cache hit; then the GPU window's
# rehearsal alone: as a third parallel job its keras3-torch bAbI cell, 38 s on a quiet machine, passed its 300 s
# limit on CI's two shared cores.
TEST_SCOPE ?= cover
$(if $(filter-out cover full,$(TEST_SCOPE)),$(error TEST_SCOPE is cover or full, not '$(TEST_SCOPE)'))
WINDOW_PARTS ?= $(if $(filter full,$(TEST_SCOPE)),env instrument classic tuning paper,env instrument paper)
E2E := BENCH_E2E_SCOPE=$(TEST_SCOPE) $(PYTHON) -m pytest -m docker -q -s --durations=0 tests/e2e/test_e2e_docker.py

test: lint ## Lint; unit tests beside the image builds; the Docker end-to-end test; the window's rehearsal (TEST_SCOPE)
	$(MAKE) -j2 --output-sync=target test-unit e2e-images
	BENCH_E2E_PREPARED=1 $(MAKE) test-e2e
	$(MAKE) --no-print-directory test-window

test-full: ## `make test` with nothing left out: every unit test, both image flavors, every cell, the whole rehearsal
	$(MAKE) test TEST_SCOPE=full

test-window: ## The GPU window's rehearsal where its environment is made (make window-wheels window-env), else say so
	@if [ -x .window-venv/bin/python ] && [ -d .whl ]; then $(MAKE) --no-print-directory window-rehearse; \
	elif [ -n "$$BENCH_REQUIRE_WINDOW" ]; then echo "test-window: no .window-venv or .whl (make window-wheels window-env)" >&2; exit 1; \
	else echo "test-window: skipped, no rehearsal environment (make window-wheels window-env: needs CPython 3.12)"; fi

test-unit: ## Unit tests (no Docker); TEST_SCOPE=cover leaves out tests/slow.txt's
	$(PYTHON) -m pytest -m "not docker$(if $(filter cover,$(TEST_SCOPE)), and not slow)" -q --durations=10

test-slow: ## The unit tests make test leaves out (tests/slow.txt's: whole cells, real compiles); CI runs them after it
	$(PYTHON) -m pytest -m "slow and not docker" -q --durations=10

slow-tests: ## Rewrite tests/slow.txt from a whole unit run's own timings (alone on the machine: they decide the list)
	BENCH_SLOW_RECORD=$(CURDIR)/tests/slow.txt $(PYTHON) -m pytest -m "not docker" -q -p no:cacheprovider

test-e2e: ## Build the images on a local base image, run the suites at smoke size on CPU (TEST_SCOPE: which)
	$(E2E)

e2e-base:
	$(E2E) -k test_base_image

e2e-images: e2e-base
	BENCH_E2E_PREPARED=1 $(E2E) -k test_images_build

lint: ## ruff, mypy on bench/, hadolint on every Dockerfile, compose files against the compose-spec schema, the docs site (mkdocs --strict)
	$(PYTHON) -m ruff check bench tests
	$(PYTHON) -m mypy bench
	$(HOST_CLI) stackfiles --check
	hadolint images/Dockerfile images/collector/Dockerfile
	check-jsonschema --builtin-schema vendor.compose-spec compose.yaml compose.gpu.yaml
	$(PYTHON) -m mkdocs build --strict --quiet -d $(CURDIR)/.site

flops: ## Recount the paper suite's FLOPs per example on the meta device (bench/core/reference/paper_flops.csv)
	$(PYTHON) -m bench.models.flops

lock: ## Regenerate every image's locked, hashed requirements (needs uv)
	images/lock.sh

stacks: ## Rewrite compose.yaml, compose.gpu.yaml and images/stacks.mk from bench/core/stacks.py (the one stack list)
	$(HOST_CLI) stackfiles

clean: ## Remove scratch files of interrupted cells and Python caches (results are kept)
	find $(RESULTS_DIR) -name .work -type d -prune -exec rm -rf {} + 2>/dev/null || true
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
	rm -rf .pytest_cache .ruff_cache

# arkbench — `make help` lists the targets. Every target installs what it needs on first use.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HARNESS := $(VENV)/bin/harness
STAMP := $(VENV)/.installed

ENGINE ?= sqlite
SCENARIO ?= reorg
PROFILE ?=
MEM ?=
SCALE ?=
DURATION ?=
SET ?=
RUNTIME ?= auto
RESULTS ?= results
PYTEST_ARGS ?=

POLICY ?=
DURABILITY ?=
# POLICY (sized|stock) and DURABILITY (commit|checkpoint) are scenario fields, set like any other
POLICY_SET = $(if $(POLICY),--set memory.policy=$(POLICY)) $(if $(DURABILITY),--set durability=$(DURABILITY))
RUN_ARGS = --engine $(ENGINE) --scenario $(SCENARIO) --runtime $(RUNTIME) --results $(RESULTS) \
  $(if $(PROFILE),--profile $(PROFILE)) $(if $(MEM),--mem $(MEM)) \
  $(if $(SCALE),--scale $(SCALE)) $(if $(DURATION),--duration $(DURATION)) $(if $(filter-out 0,$(EARLY_ABORT)),--early-abort) \
  $(if $(DROP_STATES),--drop-states) $(if $(DATA),--data $(DATA)) $(POLICY_SET) $(foreach s,$(SET),--set $(s))

ENGINES ?=
MEMS ?=
SCALES ?=
REPEATS ?=
EARLY_ABORT ?=
RUN ?=
PLACE ?= local
CELL_ARGS = --runtime $(RUNTIME) --results $(RESULTS) $(if $(PROFILE),--profile $(PROFILE)) \
  $(if $(DURATION),--duration $(DURATION)) $(if $(REPEATS),--repeats $(REPEATS)) $(if $(filter-out 0,$(EARLY_ABORT)),--early-abort) \
  $(if $(DATA),--data $(DATA))
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
IMAGE_ENGINES ?=
WHEELHOUSE := build/wheelhouse
# Engines are discovered: every engines/<name>/engine.toml (harness/registry.py).
MANIFESTS := $(wildcard engines/*/engine.toml)
# Read with the system python3 (tomllib), before any venv exists.
MANIFEST_LIST = $(shell $(PYTHON) -c 'import glob, sys, tomllib; \
  print(" ".join(sorted({x for f in glob.glob("engines/*/engine.toml") for x in tomllib.load(open(f, "rb")).get(sys.argv[1], [])})))' $(1))

.PHONY: publish reproduce curve success faults schema layers knee store store-clean store-bias k8s-manifests images-save images-load help install run sweep verdict ceiling v1 report validate test test-fast clean bench-overhead bench-reads bench-build state states states-clean images

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml $(MANIFESTS)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "arkbench needs Python >= 3.11 ($(PYTHON))" >&2; exit 2; }
	@# Debian packages: the engines' (debian_packages in their engine.toml; a server engine runs its own
	@# private server per run, and no default cluster is created), chromium (the report test opens
	@# report.html in it, headless), fuse3 (a crash run's simulated power cut) and xfsprogs (make store).
	@missing=""; for p in $(call MANIFEST_LIST,debian_packages) chromium fuse3 xfsprogs; do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's$$missing"; \
	    mkdir -p /etc/postgresql-common && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "note: not installed:$$missing (apt-get install$$missing); the postgres engine or the report test cannot run" >&2; fi; \
	fi
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,report]' $(foreach r,$(call MANIFEST_LIST,requirements),'$(r)')
	@# another build of a distribution, apart, for a setting to load (sqlite's newest APSW)
	@$(PY) -m harness.registry_cli side-requirements | while read -r engine name req dir; do \
	  echo "side install for $$engine ($$name): $$req"; \
	  $(VENV)/bin/pip install -q --no-deps --upgrade --target "$$dir" "$$req" || exit 1; done
	@touch $@

install: $(STAMP) ## create .venv and install the harness and its drivers

run: $(STAMP) ## one run: ENGINE=sqlite SCENARIO=reorg [PROFILE=smoke|quick|ratio|full] [MEM=512m] [POLICY=sized|stock] [DURABILITY=commit|checkpoint] [SCALE=] [DURATION=s] [EARLY_ABORT=1] [DROP_STATES=1] [SET="k=v ..."]
	@$(HARNESS) run $(RUN_ARGS)

faults: $(STAMP) ## a fault campaign over a block log: kills at commit, apply, rotation and idle, then power cuts [ENGINES="sqlite postgres"] [PROFILE=smoke|quick] [SET=]
	@$(HARNESS) faults --engines $(or $(ENGINES),sqlite postgres) --results $(RESULTS) $(if $(PROFILE),--profile $(PROFILE)) $(foreach s,$(SET),--set $(s))

sweep: $(STAMP) ## every cell, resumable: ENGINES="sqlite libsql" SCENARIO=p99_5x MEMS="8g 16g" [SCALES=] [PROFILE=] [REPEATS=] [EARLY_ABORT=1] [DROP_STATES=1] [PLACE=local|swarm]
	@$(HARNESS) sweep --scenario $(SCENARIO) --engines $(if $(ENGINES),$(ENGINES),$(ENGINE)) \
	  $(if $(MEMS),--mems "$(MEMS)") $(if $(SCALES),--scales "$(SCALES)") $(if $(DROP_STATES),--drop-states) --place $(PLACE) $(if $(MIXED_NODES),--mixed-nodes) $(CELL_ARGS) $(POLICY_SET) $(foreach s,$(SET),--set $(s))

matrix: $(STAMP) ## the optimisation matrix at one MEM, resumable: ENGINE=sqlite or ENGINES="sqlite postgres" (side by side) [SCENARIO=p99_5x] [PROFILE=] MEM= [OPTIONS="cache_25 mmap"] [DURATION=s] [DROP_STATES=1]
	@$(HARNESS) matrix $(if $(ENGINES),--engines $(ENGINES),--engine $(ENGINE)) --scenario $(if $(filter command line environment,$(origin SCENARIO)),$(SCENARIO),p99_5x) \
	  $(if $(MEM),--mem $(MEM)) $(if $(OPTIONS),--options $(OPTIONS)) $(if $(DROP_STATES),--drop-states) $(CELL_ARGS) $(POLICY_SET) $(foreach s,$(SET),--set $(s))

experiments: $(STAMP) ## the reference's seed experiments, ours beside its ratios; resumable: [PROFILE=quick] [ONLY="insert_mode batch_size"]
	@$(HARNESS) experiments --profile $(if $(PROFILE),$(PROFILE),quick) $(if $(ONLY),--only $(ONLY)) $(CELL_ARGS)

compare: $(STAMP) ## two runs, sweeps or matrix runs side by side (B/A, significance over repeats): A=dir[,dir...] B=dir[,dir...] [MD=file] [WINDOW=0:600 [WINDOW_B=0:]]
	@$(HARNESS) compare $(A) $(B) $(if $(MD),--markdown $(MD)) $(if $(WINDOW),--window $(WINDOW)) $(if $(WINDOW_B),--window-b $(WINDOW_B))

success: $(STAMP) ## the reference's five questions in one table, from the runs published under DIR/<question>-<system>/ (make publish RUN=... AS=<date>-success/degradation-answer): DIR=docs/results/<date>-success
	@$(if $(DIR),,echo "DIR=docs/results/<date>-success is required" >&2; exit 2)
	@$(HARNESS) success $(DIR)

reproduce: $(STAMP) ## a published verdict's answers measured again in this sitting, level by level (exit 0 agreed, 1 disagreed, 3 disturbed), resumable: RUN=docs/results/<dir> [REWRITE=1: measure nothing, write its record again from its sittings]
	@$(if $(RUN),,echo "RUN=<dir> is required: a published verdict's folder under docs/results/" >&2; exit 2)
	@$(HARNESS) reproduce $(RUN) --runtime $(RUNTIME) --results $(RESULTS) $(if $(filter 1,$(REWRITE)),--rewrite)

verdict: $(STAMP) ## the tree's answer per MEM + report: [PROFILE=smoke|quick|ratio|full] [MEMS="256m 512m"] [DURABILITY=commit|checkpoint] [REPEATS=] [EARLY_ABORT=0] [ALL_CELLS=1] [DROP_STATES=1] [KNEES=1] [PLACE=local|swarm]
	@$(HARNESS) verdict $(if $(MEMS),--mems "$(MEMS)") $(if $(SCALE),--scale $(SCALE)) $(if $(ALL_CELLS),--all-cells) $(if $(KNEES),--knees) \
	  $(if $(filter 0,$(EARLY_ABORT)),--no-early-abort) $(if $(DROP_STATES),--drop-states) $(if $(DURABILITY),--durability $(DURABILITY)) \
	  --place $(PLACE) $(if $(MIXED_NODES),--mixed-nodes) $(CELL_ARGS)

ceiling: $(STAMP) ## highest read QPS beside the writes, resumable: ENGINE= [SCENARIO=combined] [PROFILE=] [MEM=] [POLICY=] [DURABILITY=] [SET="k=v ..."]
	@$(HARNESS) ceiling --engine $(ENGINE) --scenario $(if $(filter command line environment,$(origin SCENARIO)),$(SCENARIO),combined) \
	  $(if $(MEM),--mem $(MEM)) $(CELL_ARGS) $(POLICY_SET) $(foreach s,$(SET),--set $(s))

reads: $(STAMP) ## the reference's read benchmark, reads alone, resumable: ENGINE= [PROFILE=ratio|full] [MIXES="a b c dc"] [CONNECTIONS="1 10"] [MEM=] [SET=]
	@$(HARNESS) reads --engine $(ENGINE) $(if $(MIXES),--mixes "$(MIXES)") $(if $(CONNECTIONS),--connections "$(CONNECTIONS)") \
	  $(if $(MEM),--mem $(MEM)) $(CELL_ARGS) $(POLICY_SET) $(foreach s,$(SET),--set $(s))

writes: $(STAMP) ## the reference's max writes, resumable: ENGINE= POINTS="1:1284m 2:2568m 5:6420m 5:8g" (scale:MEM) [SCENARIO=p99_5x] [PROFILE=ratio] [START_ROWS= an earlier knee; each later point starts at the knee before it] [DURATION=s] [DROP_STATES=1: rebuilds the state every step, only where a clone does not fit [CONTINUE=1: or continues on the step before's]] [SET=]
	@$(HARNESS) writes --engine $(ENGINE) --scenario $(if $(filter command line environment,$(origin SCENARIO)),$(SCENARIO),p99_5x) \
	  --points "$(POINTS)" $(if $(START_ROWS),--start-rows $(START_ROWS)) $(if $(DROP_STATES),--drop-states) $(if $(CONTINUE),--continue-steps) $(CELL_ARGS) $(POLICY_SET) $(foreach s,$(SET),--set $(s))

RATIO ?=
curve: $(STAMP) ## the degradation curve, 10x projected, resumable: ENGINE= [SCENARIO=p99_5x] [SCALES="0.125 0.25 0.5 1 2 3 5"] [RATIO=8.4 | MEM_1X=1284m] [PROFILE=ratio] [SET=]
	@$(HARNESS) curve --engine $(ENGINE) --scenario $(if $(filter command line environment,$(origin SCENARIO)),$(SCENARIO),p99_5x) \
	  $(if $(SCALES),--scales "$(SCALES)") $(if $(RATIO),--ratio $(RATIO)) $(if $(MEM_1X),--mem-1x $(MEM_1X)) $(CELL_ARGS) $(POLICY_SET) $(foreach s,$(SET),--set $(s))

AXIS ?=
capacity: $(STAMP) ## the largest multiple of the offered load a configuration carries, measured on itself, resumable: ENGINE= [SCENARIO=p99_5x] [MEM=] [PROFILE=] [SET=]
	@$(HARNESS) capacity --engine $(ENGINE) --scenario $(if $(filter command line environment,$(origin SCENARIO)),$(SCENARIO),p99_5x) \
	  $(if $(MEM),--mem $(MEM)) $(CELL_ARGS) $(POLICY_SET) $(foreach s,$(SET),--set $(s))

knee: $(STAMP) ## how far from passing, resumable: ENGINE= [SCENARIO=p99_5x] AXIS=rows|mem|scale [MEM=] [SCALE=] [START_ROWS=] [PROFILE=] [DROP_STATES=1 [CONTINUE=1]] [SET=]
	@$(HARNESS) knee --engine $(ENGINE) --scenario $(if $(filter command line environment,$(origin SCENARIO)),$(SCENARIO),p99_5x) \
	  --axis $(AXIS) $(if $(START_ROWS),--start-rows $(START_ROWS)) $(if $(MEM),--mem $(MEM)) $(if $(SCALE),--scale $(SCALE)) $(if $(DROP_STATES),--drop-states) $(if $(CONTINUE),--continue-steps) $(CELL_ARGS) $(POLICY_SET) $(foreach s,$(SET),--set $(s))

v1: $(STAMP) ## the reference's V1 go/no-go (scenarios/v1.yaml), resumable: ENGINE= [PROFILE=quick|smoke|ratio] [MEM=] [SET="k=v ..."]
	@$(HARNESS) v1 --engine $(ENGINE) $(if $(MEM),--mem $(MEM)) --profile $(if $(PROFILE),$(PROFILE),quick) \
	  --runtime $(RUNTIME) --results $(RESULTS) $(if $(DURATION),--duration $(DURATION)) \
	  $(if $(filter-out 0,$(EARLY_ABORT)),--early-abort) $(POLICY_SET) $(foreach s,$(SET),--set $(s))

SWEEP ?= sweep
k8s-manifests: $(STAMP) ## a sweep's or verdict's cells as Kubernetes Indexed Jobs: SWEEP=sweep|verdict, the walk's own variables [REGISTRY=] [K8S_ARGS=]
	@$(HARNESS) k8s-manifests --walk $(SWEEP) $(if $(filter sweep,$(SWEEP)),--scenario $(SCENARIO) --engines $(if $(ENGINES),$(ENGINES),$(ENGINE))) \
	  $(if $(MEMS),--mems "$(MEMS)") $(if $(SCALES),--scales "$(SCALES)") $(if $(SCALE),--scale $(SCALE)) \
	  $(if $(REGISTRY),--registry $(REGISTRY)/) $(CELL_ARGS) $(foreach s,$(SET),--set $(s)) $(K8S_ARGS)

report: $(STAMP) ## report.md + report.html for a run, sweep or verdict: RUN=results/<dir> [MIXED_NODES=1]
	@$(if $(RUN),,echo "RUN=<dir> is required: a run, sweep or verdict directory under $(RESULTS)/" >&2; exit 2)
	@$(HARNESS) report $(RUN) $(if $(MIXED_NODES),--mixed-nodes)

publish: $(STAMP) ## a finished verdict, read ceiling, reads, writes, v1, curve or run under docs/results/<name>/ (report.md, its json, screenshot): RUN=results/verdict-...|ceiling-...|reads-...|writes-...|v1-...|curve-...|<run> [AS=name]
	@$(if $(RUN),,echo "RUN=<dir> is required: a verdict's, a ceiling's or a run's directory under $(RESULTS)/" >&2; exit 2)
	@$(HARNESS) publish $(RUN) $(if $(filter-out default,$(origin AS)),--name $(AS))  # make's own AS is the assembler, "as"

state: $(STAMP) ## build (or find) a starting state: ENGINE= SCENARIO= [SCALE=] [PROFILE=] [STATES=dir]; prints its directory last
	@$(HARNESS) state --engine $(ENGINE) --scenario $(SCENARIO) $(if $(PROFILE),--profile $(PROFILE)) \
	  $(if $(SCALE),--scale $(SCALE)) $(foreach s,$(SET),--set $(s))

states: $(STAMP) ## list the cached starting states [STATES=dir]
	@$(HARNESS) states

states-clean: $(STAMP) ## remove cached starting states: [IDS="id ..."] (default: all) [STATES=dir]
	@$(HARNESS) states --clean $(IDS)

SIZE ?= 75g
store: $(STAMP) ## a copy-on-write store where the disk has no reflinks (XFS on a loop device; root): [SIZE=75g]; then STATES=store/states DATA=store/data. Its writes are slower than ext4 (make store-bias: commit p99 3.3x, 12-07): no knee figure on it
	@$(HARNESS) store --size $(SIZE)

store-clean: $(STAMP) ## unmount the store and delete its image, with every state and cell in it
	@$(HARNESS) store --remove

store-bias: $(STAMP) ## what the store does to a cell's figures, resumable: ENGINE= MEM= [SCENARIO=p99_5x] [PROFILE=ratio] [SCALE=] [REPEATS=2] [SET=]: the cell alternately on the disk and on the store
	@$(HARNESS) store-bias --engine $(ENGINE) --scenario $(if $(filter command line environment,$(origin SCENARIO)),$(SCENARIO),p99_5x) \
	  $(if $(MEM),--mem $(MEM)) $(if $(SCALE),--scale $(SCALE)) $(CELL_ARGS) $(POLICY_SET) $(foreach s,$(SET),--set $(s))

bench-build: $(STAMP) ## bulk vs row-by-row build rows/s per engine, and the clone: [ENGINES=] [SCALE=0.05]
	@$(HARNESS) bench-build --results $(RESULTS) $(if $(ENGINES),--engines $(ENGINES)) --scale $(if $(SCALE),$(SCALE),0.05)

bench-overhead: $(STAMP) ## harness vs hand-written loop rows/s per engine: [ENGINES="sqlite duckdb"] [PROFILE=quick] [DURATION=s] [REPEATS=3] [DATA=dir (default tmpfs)]
	@$(HARNESS) bench-overhead --results $(RESULTS) $(if $(ENGINES),--engines $(ENGINES)) $(if $(REPEATS),--repeats $(REPEATS)) \
	  $(if $(DATA),--data $(DATA)) \
	  --profile $(if $(PROFILE),$(PROFILE),quick) $(if $(DURATION),--duration $(DURATION))

bench-reads: $(STAMP) ## harness vs raw driver loop read QPS per engine: [ENGINES=] [SCENARIO=read_mix_a] [PROFILE=quick] [DURATION=s] [REPEATS=3] [DATA=dir]
	@$(HARNESS) bench-reads --results $(RESULTS) $(if $(ENGINES),--engines $(ENGINES)) $(if $(REPEATS),--repeats $(REPEATS)) \
	  $(if $(DATA),--data $(DATA)) --scenario $(if $(filter command line environment,$(origin SCENARIO)),$(SCENARIO),read_mix_a) \
	  --profile $(if $(PROFILE),$(PROFILE),quick) $(if $(DURATION),--duration $(DURATION))

# The runtime dependencies at .venv's exact versions, as wheels, so image builds need no PyPI (the test
# and report extras stay on the host).
$(WHEELHOUSE)/requirements.txt: $(STAMP) docker/runtime-requirements.py
	@rm -rf $(WHEELHOUSE)/*.txt $(WHEELHOUSE)/core $(WHEELHOUSE)/engine-*/
	@$(PY) docker/runtime-requirements.py $(WHEELHOUSE)
	$(VENV)/bin/pip wheel -q -w $(WHEELHOUSE) -r $@ || { rm -f $@; exit 1; }
	@$(PY) -m harness.registry_cli side-requirements | while read -r engine name req dir; do \
	  $(VENV)/bin/pip wheel -q --no-deps -w $(WHEELHOUSE)/side "$$req" || { rm -f $@; exit 1; }; done
	@$(PY) docker/runtime-requirements.py $(WHEELHOUSE) --split || { rm -f $@; exit 1; }

images: $(WHEELHOUSE)/requirements.txt ## build every engine image (a local Debian base first when no registry answers) [IMAGE_ENGINES=] [REGISTRY=host:port to push them]
	@REGISTRY=$(REGISTRY) docker/images.sh $(PY) $(VERSION) "$(if $(IMAGE_ENGINES),$(IMAGE_ENGINES),$$($(PY) -m harness.registry_cli names))"

IMAGES_TAR ?= build/arkbench-images-$(VERSION).tar
images-save: images ## the engine images in one tarball, for nodes no registry serves: [IMAGES_TAR=]
	@docker save -o $(IMAGES_TAR) $$(docker images --format '{{.Repository}}:{{.Tag}}' | grep -E '^arkbench/[a-z_-]+:$(VERSION)$$')
	@echo "$(IMAGES_TAR): load it on each node with \`make images-load IMAGES_TAR=...\` (or docker load -i)"

images-load: ## load the engine images from a tarball `make images-save` wrote: [IMAGES_TAR=]
	docker load -i $(IMAGES_TAR)

validate: $(STAMP) ## validate every scenario under scenarios/
	@$(HARNESS) validate scenarios/

schema: $(STAMP) ## the scenario files' JSON Schema, from the models, to scenarios/schema.json (editors read it)
	@$(HARNESS) schema

layers: $(STAMP) ## the house's import picture (folder to folder, a floor a line) and its longest modules and functions
	@$(PY) -m tests.unit.test_layers && $(PY) -m tests.unit.test_sizes

# 3 workers on 2 cores: part 1 waits on fsyncs as much as on CPU (2026-11-29, fresh clones, empty image store,
# back to back: in all 1313 s with 2 workers, 1123 s with 3)
TEST_JOBS ?= 3
test: $(STAMP) ## the whole test suite (slow, cgroup and docker suites run when the machine can) [TEST_JOBS=3 parallel workers]
	@TEST_JOBS=$(TEST_JOBS) tests/suite.sh $(PY) "$(MAKE)" $(PYTEST_ARGS)

test-fast: $(STAMP) ## unit and contract tests only
	$(PY) -m pytest -m "not slow and not docker and not cgroup" $(PYTEST_ARGS)

clean: ## remove results/ and data/ (keeps .venv)
	rm -rf results data

# spade: run `make demo` for the main job on the embedded defaults, `make test` for the tests (`make test-short`
# for the quick ones).
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
SPADE := $(BIN)/spade
LAKE ?= ./lake
RUN ?= demo
STEP ?= 0
STEPS ?= 0-7
# Debian's interpreter has numpy/torch from apt; override with SPADE_PYTHON=... on other machines.
SPADE_PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)
export SPADE_PYTHON
VERSITYGW_VERSION := v1.8.0
# The Vendi and LSA routes link OpenBLAS (libopenblas-dev) through cgo. Where it cannot be linked (probe: a
# tiny C program with -lopenblas), build, test and bench add -tags noopenblas: the pure-Go fallbacks, same
# results, slower. Override with GOTAGS=... (GOTAGS= forces the OpenBLAS route).
HAVE_OPENBLAS := $(shell printf 'int main(void){return 0;}\n' | $(CC) -x c - -lopenblas -o /dev/null >/dev/null 2>&1 && echo yes)
GOTAGS ?= $(if $(HAVE_OPENBLAS),,noopenblas)
GOFLAGS_TAGS := $(if $(GOTAGS),-tags $(GOTAGS))

.PHONY: deps build blas-note test test-go test-python test-stress test-short test-go-short test-python-short bench demo lab tools clean sample generate gate rollout regret grpo run metrics report eval

build: blas-note
	$(GO) build $(GOFLAGS_TAGS) -o $(SPADE) ./cmd/spade

blas-note:
	@if [ -n "$(filter noopenblas,$(GOTAGS))" ]; then echo "note: OpenBLAS not found (libopenblas-dev): building with -tags noopenblas, the slower pure-Go Vendi and LSA routes"; fi

# tools installs the S3-compatible server the lake's S3 tests start and Qwen3's real tokenizer files the
# server emulator uses (into ./bin, not system-wide).
tools: $(BIN)/versitygw $(BIN)/qwen3/tokenizer.json
$(BIN)/versitygw:
	GOBIN=$(BIN) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
$(BIN)/qwen3/tokenizer.json:
	./scripts/qwen3.sh $(BIN)/qwen3

# deps installs the Debian packages the tests need (as root; otherwise it prints the sudo line and stops).
deps:
	./scripts/deps.sh

# test re-enters make after deps so the OpenBLAS probe sees packages that deps just installed.
test: deps tools
	$(MAKE) --no-print-directory build test-go test-python

test-go: blas-note
	PATH=$(BIN):$$PATH $(GO) test $(GOFLAGS_TAGS) -count=1 -timeout 30m ./...

test-python:
	@if [ -d stages/grpo/trainer/tests ]; then \
	  cd stages/grpo/trainer && $(SPADE_PYTHON) -m unittest discover -s tests -v 2>&1 | tail -n 30; \
	  exit $${PIPESTATUS[0]}; \
	fi

# test-stress runs the packages whose tests race real sandboxes against deadlines (sandbox, gate, bench,
# rollout; STRESS_PACKAGES=...) beside a CPU hog of twice the cores (STRESS_HOGS=N busy loops, stopped when
# the tests end), and fails when any test fails: a test a loaded machine breaks is a broken test.
test-stress: deps tools blas-note
	PATH=$(BIN):$$PATH GO="$(GO)" GOFLAGS_TAGS="$(GOFLAGS_TAGS)" ./scripts/stress.sh

# test-short is the quick suite (under 5 minutes on 2 cores, with the build cache warm): go test -short,
# under which the slow tests skip themselves (a -short skip is never a CI failure), and the trainer's
# Python tests but the slow modules named in PY_SLOW_TESTS.
PY_SLOW_TESTS ?= test_distributed
PY_TESTS_SHORT = $(filter-out $(PY_SLOW_TESTS),$(basename $(notdir $(wildcard stages/grpo/trainer/tests/test_*.py))))

test-short: deps tools
	$(MAKE) --no-print-directory test-go-short test-python-short

test-go-short: blas-note
	PATH=$(BIN):$$PATH $(GO) test $(GOFLAGS_TAGS) -short -count=1 -timeout 10m ./...

test-python-short:
	@if [ -n "$(PY_TESTS_SHORT)" ]; then \
	  cd stages/grpo/trainer/tests && $(SPADE_PYTHON) -m unittest $(PY_TESTS_SHORT) 2>&1 | tail -n 30; \
	  exit $${PIPESTATUS[0]}; \
	fi

bench: tools blas-note
	PATH=$(BIN):$$PATH $(GO) test $(GOFLAGS_TAGS) -run '^$$' -bench . -benchtime 3x -timeout 60m ./...

demo: build
	./scripts/demo.sh "$(LAKE)" "$(RUN)"

# The whole loop on this CPU with a real tiny policy: make lab [LAB_RUN=lab] [LAB_SEED=0] [LAB_STEPS=0-99]
LAB_RUN ?= lab
LAB_SEED ?= 0
LAB_STEPS ?= 0-99
lab: build
	$(SPADE) --lake $(LAKE) --run $(LAB_RUN) lab --seed $(LAB_SEED) --steps $(LAB_STEPS)

clean:
	rm -rf $(BIN) $(LAKE)

# Per-stage targets: make gate STEP=4 RUN=r1 LAKE=s3://bucket/prefix
sample generate gate rollout regret grpo: build
	$(SPADE) --lake $(LAKE) --run $(RUN) $@ --step $(STEP)

run: build
	$(SPADE) --lake $(LAKE) --run $(RUN) run --steps $(STEPS)

# eval scores the Agent on imported benchmarks: make eval STEP=100 BENCH=aime25,gpqa [SAMPLES=16]
eval: build
	$(SPADE) --lake $(LAKE) --run $(RUN) eval --step $(STEP) --bench $(BENCH) $(if $(SAMPLES),--samples $(SAMPLES))

metrics: build
	$(SPADE) --lake $(LAKE) --run $(RUN) metrics

report: build
	$(SPADE) --lake $(LAKE) --run $(RUN) report --out report.html

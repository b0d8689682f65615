# spade: run `make demo` for the main job on the embedded defaults, `make test` for the tests.
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

.PHONY: build test test-go test-python bench demo tools clean sample generate gate rollout regret grpo run metrics report

build:
	$(GO) build -o $(SPADE) ./cmd/spade

# tools installs the S3-compatible server the lake's S3 tests start (into ./bin, not system-wide).
tools: $(BIN)/versitygw
$(BIN)/versitygw:
	GOBIN=$(BIN) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

test: tools build test-go test-python

test-go:
	PATH=$(BIN):$$PATH $(GO) test -count=1 -timeout 30m ./...

test-python:
	@if [ -d stages/grpo/trainer/tests ]; then \
	  cd stages/grpo/trainer && $(SPADE_PYTHON) -m unittest discover -s tests -v 2>&1 | tail -n 30; \
	  exit $${PIPESTATUS[0]}; \
	fi

bench: tools
	PATH=$(BIN):$$PATH $(GO) test -run '^$$' -bench . -benchtime 3x -timeout 60m ./...

demo: build
	./scripts/demo.sh "$(LAKE)" "$(RUN)"

clean:
	rm -rf $(BIN) $(LAKE)

# Per-stage targets: make gate STEP=4 RUN=r1 LAKE=s3://bucket/prefix
sample generate gate rollout regret grpo: build
	$(SPADE) --lake $(LAKE) --run $(RUN) $@ --step $(STEP)

run: build
	$(SPADE) --lake $(LAKE) --run $(RUN) run --steps $(STEPS)

metrics: build
	$(SPADE) --lake $(LAKE) --run $(RUN) metrics

report: build
	$(SPADE) --lake $(LAKE) --run $(RUN) report --out report.html

# The two set-up commands of the README. Each creates .venv on first use.
# Recipes are silent and report on stderr, so `make demo` leaves only the
# capsule on stdout.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MCP_CLIENT := tests/mcp_client
MCP_CLIENT_STAMP := $(MCP_CLIENT)/node_modules/.installed
DEMO_PACKET ?= packets/GC-003/packet.yml

.PHONY: demo test check lint typecheck tools clean

# `make test ARGS='tests/test_build.py -k budget'` passes ARGS to pytest
# (CONTRIBUTING.md). JOBS is pytest-xdist's worker count: every CPU by default,
# `JOBS=0` for one process. Whole test files go to one worker each
# (--dist loadfile): the slow files share a module fixture (a built sdist, a
# pre-commit home) that would otherwise be made once per worker.
ARGS ?=
JOBS ?= auto
PYTEST := $(BIN)/python -m pytest -n $(JOBS) --dist loadfile
# The whole suite measures line coverage of governance/ and the hooks and fails
# under the floor (today's figure, rounded down); a run narrowed by ARGS does
# not judge it.
COVERAGE_FLOOR := 92
COVERAGE := $(if $(ARGS),,--cov --cov-report=term:skip-covered --cov-fail-under=$(COVERAGE_FLOOR))

$(STAMP): pyproject.toml
	@echo "make: creating $(VENV) and installing git-capsule with its test tools and optional extras" >&2
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,mcp,tokens,secrets]' >&2
	@touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/capsule build $(DEMO_PACKET)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# governance/ and hooks/ strictly (pyproject.toml); tests/ as pre-commit checks
# its own, untyped defs checked (tests/mypy.ini).
typecheck: $(STAMP)
	$(BIN)/mypy
	$(BIN)/mypy --config-file tests/mypy.ini tests

# Continuation agents are isolated with bubblewrap (docs/continuation.md), and
# `capsule completion` is loaded by the real zsh and fish: the tests run them
# for real. As root (CI), install what is missing.
TOOLS := bwrap:bubblewrap zsh:zsh fish:fish
tools:
	@for pair in $(TOOLS); do \
	    tool=$${pair%%:*}; package=$${pair#*:}; \
	    command -v $$tool >/dev/null 2>&1 && continue; \
	    if [ "$$(id -u)" = 0 ]; then \
	        echo "make: installing $$package ($$tool) for the tests that run it" >&2; \
	        apt-get update -qq >&2 && apt-get install -y -qq $$package >&2; \
	    else \
	        echo "make: $$tool is missing: install $$package, or the tests that run it fail" >&2; \
	    fi; \
	done

# tests/test_mcp_client.py drives capsule mcp with the TypeScript SDK's client,
# the one most MCP hosts embed, pinned with integrity hashes by its lockfile.
$(MCP_CLIENT_STAMP): $(MCP_CLIENT)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	    echo "make: installing the TypeScript MCP client for the tests (npm ci in $(MCP_CLIENT))" >&2; \
	    cd $(MCP_CLIENT) && npm ci --silent >&2 && touch node_modules/.installed; \
	else \
	    echo "make: npm is missing: install Node.js and npm, or the MCP client tests fail" >&2; \
	fi

# The whole suite: lint, types, then every test, in parallel, with coverage.
test: lint typecheck tools $(MCP_CLIENT_STAMP)
	$(PYTEST) $(COVERAGE) $(ARGS)

# The inner loop, about a minute: lint, types and the tests not marked slow or
# integration (pyproject.toml's markers), no coverage.
check: lint typecheck
	$(PYTEST) -q -m "not slow and not integration" $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .coverage .coverage.* \
	    $(MCP_CLIENT)/node_modules

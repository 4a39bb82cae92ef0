# The two set-up commands of the README. Each creates .venv on first use.
# Recipes are silent and report on stderr, so `make demo` leaves only the
# capsule on stdout.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_PACKET ?= packets/GC-003/packet.yml

.PHONY: demo test lint typecheck clean

$(STAMP): pyproject.toml
	@echo "make: creating $(VENV) and installing git-capsule with its test tools and optional extras" >&2
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,mcp,tokens]' >&2
	@touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/capsule build $(DEMO_PACKET)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

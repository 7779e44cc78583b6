# The two commands of the README's quick start: `make run` and `make test` (and `make docs`).
# Everything the tests need is installed and started here, so a fresh clone passes.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test setup system lint-self docs clean web-assets

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# the version lives in endstate_author/__init__.py: a bump re-installs, so the metadata follows
$(STAMP): pyproject.toml endstate_author/__init__.py | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

# Debian packages and daemons the tests talk to for real (root on CI; best effort elsewhere).
# After setup: the sandbox image is built by the installed `endstate-author sandbox build`.
system: setup
	@bash scripts/ensure-system.sh

run: setup
	@bash scripts/run-suite.sh

lint-self: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

test: setup system lint-self
	@bash scripts/run-tests.sh

# The documentation site: docs/rules/ regenerated from the rules, then a strict build into
# site/ (a warning or a broken link fails). tests/test_docs.py does the same in `make test`.
docs: setup
	$(BIN)/python scripts/gen_rule_docs.py
	$(BIN)/mkdocs build --strict

# prove --mutation-report's HTML view in a checkout: the pinned web component, fetched with npm
# (a wheel carries it: hatch_build.py fetches it at build time)
web-assets:
	$(PYTHON) scripts/web_assets.py endstate_author/data/web

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site

# Every target bootstraps its own virtualenv from the pinned project files
# (pyproject.toml + constraints.txt); nothing else needs installing first.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The official TypeScript client the benchmarks and the interop tests use
# (interop/): installed from interop/package-lock.json; optional — without Node,
# the TypeScript peers are reported as skipped and the interop tests skip.
NPM    ?= npm
INTEROP_STAMP := interop/node_modules/.installed

.PHONY: test lint bench demo format clean

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "agui-tools needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $@

# The interop tests drive the official TypeScript client: with Node present they
# need interop/node_modules, installed (npm ci, from the lockfile) when missing or
# older than package.json/package-lock.json; a failed install fails the target.
# Without node/npm those tests skip, saying why.
test: $(STAMP)
	@if command -v node >/dev/null 2>&1 && command -v $(NPM) >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory $(INTEROP_STAMP) \
			|| { echo "error: npm ci --prefix interop failed (the interop tests need it)"; exit 1; }; \
	else \
		echo "node/npm not found: the TypeScript interop tests will be skipped"; \
	fi
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

$(INTEROP_STAMP): interop/package.json interop/package-lock.json
	$(NPM) ci --prefix interop --no-audit --no-fund
	@touch $@

# Node peers are installed when Node is present; a failed install is reported
# and the benchmark still runs (its TypeScript rows then say "peer skipped").
bench: $(STAMP)
	@if command -v node >/dev/null 2>&1 && command -v $(NPM) >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory $(INTEROP_STAMP) \
			|| echo "warning: npm ci --prefix interop failed; the TypeScript peers will be skipped"; \
	else \
		echo "node/npm not found: the TypeScript peers will be skipped"; \
	fi
	$(BIN)/python -m bench

demo: $(STAMP)
	$(BIN)/agui-tools demo

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

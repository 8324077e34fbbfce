# Every target bootstraps its own virtualenv from the pinned project files
# (pyproject.toml + constraints.txt); nothing else needs installing first.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test lint bench demo format clean

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "agui-tools needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $@

test: $(STAMP)
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

bench: $(STAMP)
	$(BIN)/python -m bench

demo: $(STAMP)
	$(BIN)/agui-tools demo

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

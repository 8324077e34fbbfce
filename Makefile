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

# The release tools (build, twine, check-wheel-contents, MkDocs) live in a venv of
# their own, from the fully pinned requirements/release.txt.
RELEASE_VENV  := .venv-release
RBIN          := $(RELEASE_VENV)/bin
RELEASE_STAMP := $(RELEASE_VENV)/.installed
# The Pythons the wheel smoke installs the built wheel on (pyenv or PATH).
SMOKE_PYTHONS ?= 3.11 3.12 3.13

# The suite runs in TEST_WORKERS processes (pytest-xdist): most tests wait on sockets,
# child processes and timers rather than the CPU, so two workers halve the wall time
# even on two cores. A test file stays in one worker (--dist loadfile), so a file's
# servers and the doc examples' fixed ports are never shared. TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2

.PHONY: test test-fast lint bench demo format clean fuzz chaos chaos-faults chaos-processes \
	interop dist wheel-smoke docs docs-build

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "agui-tools needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $@

# The inspector's browser tests (tests/ui/) drive Debian's Chromium through the
# pinned playwright package: scripts/browser_setup.sh installs chromium with
# apt-get when missing (as root), and never lets CI skip them quietly.
# The interop tests drive the official TypeScript client: scripts/interop_setup.sh
# installs interop/node_modules from the lockfile (npm ci) when missing or stale —
# a failed install fails the target — and, as root on a bare machine with apt-get,
# installs Node itself first. Without Node those tests skip, saying why.
# scripts/postgres_setup.sh makes PostgreSQL's server binaries available (apt-get as
# root when missing); the store tests start a throw-away server from them and, under
# CI=true, fail rather than skip without them.
# The compatibility matrix (tests/interop/test_frameworks.py) serves seven agent
# frameworks' AG-UI adapters, each from its own virtualenv .venv-<framework> built
# from the pinned interop/frameworks/<framework>-requirements.txt (rebuilt when that
# file changes). `make test` builds them all first, in parallel (--soft: under CI a
# failed build fails the target; elsewhere it is a warning and those tests skip,
# saying why); `make interop` builds them and fails on any failure.
#
# Before the suite: the wheel is built and checked (dist), installed on its own on
# every supported Python and smoke-tested (wheel-smoke), and the documentation site
# builds with --strict (docs-build); the suite runs last, so its summary is the last
# line (its 25 slowest tests listed just above it).
test: $(STAMP) wheel-smoke docs-build
	@NPM=$(NPM) MAKE=$(MAKE) scripts/interop_setup.sh test
	@scripts/browser_setup.sh
	@scripts/postgres_setup.sh
	@$(BIN)/python -m tests.helpers.frameworks build --soft
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25

# The edit-test loop: the suite without its browser, slow and chaos
# tiers (the tests marked browser, slow or chaos: pyproject.toml, tests/conftest.py),
# no set-up step; what it leaves out is what `make test` adds.
test-fast: $(STAMP)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not browser and not slow and not chaos" --durations=10

$(RELEASE_STAMP): requirements/release.txt
	$(PYTHON) -m venv $(RELEASE_VENV)
	$(RBIN)/pip install --quiet --disable-pip-version-check -r requirements/release.txt
	@touch $@

# The sdist and the wheel in dist/, built in an isolated environment from the pinned
# build backend, then checked: the metadata renders (twine check --strict) and the
# wheel holds what it should (check-wheel-contents).
dist: $(RELEASE_STAMP)
	rm -rf dist
	$(RBIN)/python -m build --outdir dist .
	$(RBIN)/twine check --strict dist/*
	$(RBIN)/check-wheel-contents dist/*.whl

# The built wheel (never the checkout) in a fresh venv per Python and per extra,
# smoke-tested: scripts/wheel_smoke.py says what it checks.
wheel-smoke: dist $(STAMP)
	$(BIN)/python scripts/wheel_smoke.py dist/*.whl $(foreach v,$(SMOKE_PYTHONS),--python $(v))

# The documentation site (mkdocs.yml): `make docs` serves it on 127.0.0.1:8000 and
# rebuilds on each edit; `make docs-build` builds it into site/ with --strict — a
# broken link, a missing page or an API reference that does not resolve fails it.
docs: $(RELEASE_STAMP)
	NO_MKDOCS_2_WARNING=1 $(RBIN)/mkdocs serve --dev-addr 127.0.0.1:8000

docs-build: $(RELEASE_STAMP)
	NO_MKDOCS_2_WARNING=1 $(RBIN)/mkdocs build --strict --site-dir site

interop: $(STAMP)
	$(BIN)/python -m tests.helpers.frameworks build

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

# The same set-up; a failed install is reported and the benchmark still runs
# (its TypeScript rows then say "peer skipped").
bench: $(STAMP)
	@NPM=$(NPM) MAKE=$(MAKE) scripts/interop_setup.sh bench
	@scripts/postgres_setup.sh
	$(BIN)/python -m bench

# Bounded fuzzing (tests/fuzz, hypothesis — campaign.py says why not atheris):
# FUZZ_SECONDS (default 240) split across the targets, the amplification oracle
# judging every input. `make test` runs the same targets for 10 s in all.
FUZZ_SECONDS ?= 240
fuzz: $(STAMP)
	FUZZ_SECONDS=$(FUZZ_SECONDS) $(BIN)/pytest -q -o timeout=0 -p no:cacheprovider tests/fuzz

# `make chaos`: both chaos campaigns of issue #21, one after the other — the store
# fault campaign (chaos-faults) and the multi-process chaos run (chaos-processes).
# CHAOS_SEED seeds both.
CHAOS_SEED ?= 21
chaos: chaos-faults chaos-processes

# The exhaustive store fault campaign (tests/app/test_fault_campaign.py): every store
# operation of every scenario failed before, after, and by a death, with both session
# faces and both recovery habits, on memory, SQLite and PostgreSQL (sync and async),
# plus a larger real-SIGKILL sample; ends with the table of fault points covered and
# violations (also written to CHAOS_REPORT, default .chaos-report.txt). `make test`
# runs a bounded campaign (memory and SQLite exhaustive, PostgreSQL sampled).
CHAOS_REPORT ?= .chaos-report.txt
chaos-faults: $(STAMP)
	@scripts/postgres_setup.sh
	CHAOS=full CHAOS_SEED=$(CHAOS_SEED) CHAOS_REPORT=$(CHAOS_REPORT) $(BIN)/pytest -q -o timeout=0 -p no:cacheprovider tests/app/test_fault_campaign.py

# The exactly-once promise under chaos (issue #21; bench/chaos_processes.py): six
# worker processes on one PostgreSQL store (Session + AsyncPostgresStore, SyncSession
# + PostgresStore) and a real agent server; a seeded schedule of >= 100 SIGKILLs,
# hundreds of pg_terminate_backend and one immediate server restart, every retry
# recipe of docs/deployment.md followed; judged against a side-effect table.
# Then a short second phase: half the processes settle a call another replica
# started with docs/deployment.md's outcome_unknown= hook, as its example has it (no
# in_flight_wait). About 7 minutes in all; fails on any violation or finding (each
# reported with its seed, thread, call and timeline). CHAOS_SEED picks the schedule.
chaos-processes: $(STAMP)
	@scripts/postgres_setup.sh
	$(BIN)/python -m bench.chaos_processes --seed $(CHAOS_SEED)
	$(BIN)/python -m bench.chaos_processes --seed $(CHAOS_SEED) --seconds 45 --kills 15 \
	    --terminations 90 --restarts 0 --in-flight-wait 0 --reconcile-eagerly

demo: $(STAMP)
	$(BIN)/agui-tools demo

clean:
	rm -rf $(VENV) .venv-* .pytest_cache .mypy_cache .ruff_cache dist site

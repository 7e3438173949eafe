# The two commands of the README. Each installs what it needs first (uv, then the locked env).
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
PAIMON_WAREHOUSE ?= $(CURDIR)/.warehouse
DAGSTER_HOME ?= $(CURDIR)/.dagster_home
HOST ?= 127.0.0.1
PORT ?= 3000
# The oldest pypaimon pyproject.toml allows: the seam's tests run under it in a second environment,
# built from uv.lock with only pypaimon (and what it needs changed) moved to that version.
OLDEST_VENV := $(CURDIR)/.venv-oldest
# prints "<floor> <locked>" (the floor as the lock spells it when they are the same version)
PYPAIMON_VERSIONS = .venv/bin/python -c 'import tomllib; \
	from packaging.requirements import Requirement as R; \
	from packaging.version import Version as V; \
	deps = [R(d) for d in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]]; \
	floor = [s.version for r in deps if r.name == "pypaimon" for s in r.specifier if s.operator == ">="]; \
	(lock,) = [p["version"] for p in tomllib.load(open("uv.lock", "rb"))["package"] if p["name"] == "pypaimon"]; \
	print(lock if floor and V(floor[0]) == V(lock) else (floor or ["none"])[0], lock)'
# What exercises the seam: format reading and writing, stats, indexes, paths, commit, snapshots,
# maintenance, and pypaimon/paimon-rust reading what we write (tests/test_interop.py).
SEAM_TESTS := tests/format tests/test_interop.py tests/commit tests/snapshot \
	tests/io/test_manifest_compat.py tests/io/test_stats.py tests/io/test_index.py \
	tests/io/test_external.py tests/io/test_formats.py tests/io/test_read.py tests/io/test_write.py \
	tests/io/test_vectors.py tests/maintenance/test_expire.py tests/maintenance/test_manifests.py \
	tests/maintenance/test_orphans.py tests/maintenance/test_tags.py \
	tests/maintenance/test_changelogs.py tests/test_paimon_table.py

.PHONY: run test test-oldest sync uv bench browser

uv:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv

sync: uv
	$(UV) sync --locked

run: sync
	mkdir -p "$(DAGSTER_HOME)" "$(PAIMON_WAREHOUSE)"
	[ -f "$(DAGSTER_HOME)/dagster.yaml" ] || cp dagster.yaml "$(DAGSTER_HOME)/dagster.yaml"
	PAIMON_WAREHOUSE="$(PAIMON_WAREHOUSE)" $(UV) run --locked python resources/external.py
	PAIMON_WAREHOUSE="$(PAIMON_WAREHOUSE)" DAGSTER_HOME="$(DAGSTER_HOME)" \
		$(UV) run --locked dagster dev -w workspace.yaml -h $(HOST) -p $(PORT)

browser:
	@command -v chromium >/dev/null 2>&1 || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

test: sync browser
	$(UV) run --locked ruff check .
	$(UV) run --locked mypy
	@versions="$$($(PYPAIMON_VERSIONS))" || exit 1; read -r oldest locked <<< "$$versions"; \
	if [ "$$oldest" = "$$locked" ]; then \
		echo "pypaimon: the oldest allowed, $$oldest, is the locked one; the suite below tests it"; \
	else $(MAKE) --no-print-directory test-oldest; fi
	$(UV) run --locked pytest

# The seam's tests under the oldest pypaimon pyproject.toml allows (`make test` runs this when it
# is not the locked one). No bytecode at install: the run compiles only what it imports.
test-oldest: sync
	@versions="$$($(PYPAIMON_VERSIONS))" || exit 1; read -r oldest locked <<< "$$versions"; \
	[ "$$oldest" != none ] || { echo "pyproject.toml: pypaimon has no >= floor"; exit 1; }; \
	set -x; \
	UV_PROJECT_ENVIRONMENT=$(OLDEST_VENV) $(UV) sync --locked --quiet --no-compile-bytecode && \
	$(UV) pip install --quiet --no-compile-bytecode --python $(OLDEST_VENV) "pypaimon==$$oldest" && \
	DAGSTER_PAIMON_PYPAIMON=$$oldest $(OLDEST_VENV)/bin/pytest -q \
		-m "not spark and not slow and not s3 and not browser" $(SEAM_TESTS)

bench: sync
	$(UV) run --locked python bench/health.py

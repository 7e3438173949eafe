# The two commands of the README. Each installs what it needs first (uv, then the locked env).
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
PAIMON_WAREHOUSE ?= $(CURDIR)/.warehouse
DAGSTER_HOME ?= $(CURDIR)/.dagster_home
HOST ?= 127.0.0.1
PORT ?= 3000

.PHONY: run test sync uv bench browser

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
	$(UV) run --locked pytest

bench: sync
	$(UV) run --locked python bench/health.py

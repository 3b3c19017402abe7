# flowledger: `make run` builds the web console if needed and starts it on the
# embedded SQLite; `make test` runs lint (ruff, the import contracts), types,
# the console checks and the whole test suite (SQLite + PostgreSQL, browser
# tests included).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run migrate test lint typecheck pytest bench clean web-build web-client web-check

# The web console (web/): built by `make run` when dist is missing or older
# than its sources; checked by `make test` (npm ci, generated client current,
# ESLint, tsc, vite build). Playwright never downloads a browser: the browser
# tests drive Debian's chromium.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
WEB_SRC := $(shell find web/src web/index.html web/package.json web/package-lock.json web/vite.config.ts web/tsconfig.json -type f 2>/dev/null)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m compileall -q src  # an editable install writes no bytecode (see docs/performance.md)
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(BIN)/flowledger migrate

web/node_modules/.installed: web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	touch $@

web/dist/index.html: web/node_modules/.installed $(WEB_SRC)
	cd web && npx vite build
	touch $@

web-build: web/dist/index.html

web-client: install web/node_modules/.installed  # regenerate web/src/api/schema.d.ts
	PYTHON_BIN=$(BIN)/python scripts/web_client.sh

web-check: install
	cd web && npm ci --no-audit --no-fund && touch node_modules/.installed
	PYTHON_BIN=$(BIN)/python scripts/web_client.sh check
	cd web && npx eslint --max-warnings 0 src
	cd web && npx tsc --noEmit
	cd web && npx vite build

run: install web/dist/index.html
	$(BIN)/flowledger run

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/lint-imports  # the import contracts: [tool.importlinter] in pyproject.toml

typecheck: install
	$(BIN)/mypy

pytest: install
	$(BIN)/pytest -q -n 2 --dist loadfile --durations=25  # one worker per core; a file stays on one worker

test: lint typecheck web-check pytest

# on PostgreSQL (FLOWLEDGER_BENCH_DB=postgresql://…) the ledger and engine
# figures are also printed as ratios to the pgbench ceiling of the same run
bench: install
	case "$${FLOWLEDGER_BENCH_DB:-sqlite}" in \
	  postgresql*) $(BIN)/python bench/ceiling_ratios.py --db $$FLOWLEDGER_BENCH_DB --jobs 20000 --instances $${FLOWLEDGER_BENCH_INSTANCES:-2000} --rounds 3;; \
	  *) $(BIN)/python bench/ledger_throughput.py --db $${FLOWLEDGER_BENCH_DB:-sqlite:///./bench.db} --jobs 20000 --workers 1 && \
	     $(BIN)/python bench/engine_throughput.py --db $${FLOWLEDGER_BENCH_DB:-sqlite:///./bench.db} --instances $${FLOWLEDGER_BENCH_INSTANCES:-2000} --workers 1;; \
	esac

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache web/node_modules web/dist

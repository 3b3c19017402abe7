# flowledger: `make run` starts it on the embedded SQLite; `make test` runs
# lint, types and the whole test suite (SQLite + PostgreSQL).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run migrate test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(BIN)/flowledger migrate

run: install
	$(BIN)/flowledger run

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

pytest: install
	$(BIN)/pytest -q -n 2 --dist loadfile  # one worker per core; a file stays on one worker

test: lint typecheck pytest

bench: install
	$(BIN)/python bench/ledger_throughput.py --db $${FLOWLEDGER_BENCH_DB:-sqlite:///./bench.db} --jobs 20000 --workers 1

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

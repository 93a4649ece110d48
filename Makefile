# The README's two commands live here: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint unit proto bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed")'
	$(PYTHON) -m venv $(VENV)
	# uv installs the same requirements in a fraction of pip's time (compiled, as pip does: with
	# PYTHONDONTWRITEBYTECODE set, every process would compile its imports again); pip is the fallback
	$(BIN)/python -m pip install --quiet uv && $(BIN)/python -m uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[test,dev]' \
		|| $(BIN)/python -m pip install --quiet -e '.[test,dev]'
	@touch $(STAMP)

# On a terminal until Ctrl-C; `make demo DEMO_ARGS=--exit-when-done` stops once the examples have run.
demo: $(STAMP)
	$(BIN)/vglobal demo $(DEMO_ARGS)

test: $(STAMP) lint
	$(BIN)/python -m pytest -n 3 --dist loadgroup -q --durations=25

lint: $(STAMP)
	$(BIN)/ruff check vglobal tests bench scripts
	$(BIN)/mypy vglobal
	$(BIN)/lint-imports

# The fast lane: what needs no PostgreSQL and starts no hub or agent (markers db, e2e).
unit: $(STAMP)
	$(BIN)/python -m pytest -q -m "not db and not e2e" tests/unit

proto: $(STAMP)
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/python scripts/gen_protos.py

bench: $(STAMP)
	$(BIN)/python bench/dispatch.py
	$(BIN)/python bench/dispatch_durable.py
	$(BIN)/python bench/scheduler.py
	$(BIN)/python bench/philly.py --scale 0.25
	$(BIN)/python bench/topology.py
	$(BIN)/python bench/openb.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

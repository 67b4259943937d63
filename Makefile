# The README's two commands: `make serve` and `make test`. Each creates and fills .venv itself when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint install clean

$(STAMP): pyproject.toml api/feltsense-client/pyproject.toml
	@echo "feltsense: creating $(VENV) and installing (a few minutes the first time; pip shows each package)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install --progress-bar off -e '.[dev]' -e api/feltsense-client
	@touch $(STAMP)
	@echo "feltsense: installed"

install: $(STAMP)

serve: $(STAMP)
	$(BIN)/feltsense serve --dev

# The Weaviate server for the tests marked `weaviate` is built from its Go module on first use (minutes, with
# progress) and cached under $FELTSENSE_CACHE_DIR or ~/.cache/feltsense; pytest starts and stops it itself.
# The redis-server for the tests marked `redis` is Debian's package, installed with apt-get when missing (as root,
# as in CI); pytest starts it on a free loopback port and stops it itself.
# The PostgreSQL for the tests marked `postgres` is Debian's package too, installed the same way; pytest runs
# initdb into a temporary directory, starts it on a free loopback port (as the postgres user when root) and stops it.
# The tests marked `browser` drive Debian's chromium through Playwright (never `playwright install`); it is installed
# with apt-get when missing (with sudo unless root).
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m tests.servers.weaviate build
	$(BIN)/python -m tests.servers.redis ensure
	$(BIN)/python -m tests.servers.postgres ensure
	command -v chromium >/dev/null || { S=$$([ "$$(id -u)" = 0 ] || echo sudo); $$S apt-get update && $$S apt-get install -y chromium; }
	$(BIN)/python -m pytest -v  # -v: the log shows each backend's contract tests by name

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

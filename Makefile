# Two commands for a newcomer: `make run` (set up + start, embedded) and `make test` (set up + test).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# Exact versions: requirements.lock (runtime, the Docker image) and requirements-dev.lock (plus the
# dev and stack extras, what `make install` and CI use). `make lock` re-resolves both.
LOCK     := requirements.lock
DEV_LOCK := requirements-dev.lock
UV_COMPILE = $(BIN)/uv pip compile pyproject.toml --universal --python-version 3.11 --quiet $(LOCK_FLAGS)
HOST   ?= 127.0.0.1
PORT   ?= 8000
# Every target here is development: DJANGO_DEBUG defaults to false (production fails closed), so
# turn it on unless the environment says otherwise.
export DJANGO_DEBUG ?= true
# The project's own modules are cached as bytecode too, for the many processes the tests start.
unexport PYTHONDONTWRITEBYTECODE
# The second test pass and `make stack` use these; .ci/run starts both services if needed.
PG_URL    ?= postgres://postgres@127.0.0.1:5432/agent_platform
REDIS_URL_LOCAL ?= redis://127.0.0.1:6379/0

.PHONY: install lock check-port run test test-quick test-embedded test-distributed lint typecheck \
	typecheck-baseline format messages stack bench bench-peers migrate clean

# uv installs the locked versions (pip took about 90 s of CI's time on a fresh clone); pip
# only installs uv itself. uv writes no bytecode unless told: without it (and with
# PYTHONDONTWRITEBYTECODE set, as on CI's machine) every process the tests start compiled
# some 2,000 modules again, about 6 s each.
$(STAMP): pyproject.toml $(DEV_LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet "uv>=0.4,<0.14"
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python --no-deps -r $(DEV_LOCK)
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

install: $(STAMP)  ## the virtualenv with the locked versions (runtime + dev + stack)

lock:  ## re-resolve the lock files from pyproject.toml's ranges (LOCK_FLAGS=--upgrade for newest)
	test -x $(BIN)/uv || { $(PYTHON) -m venv $(VENV) && $(BIN)/pip install --quiet "uv>=0.4,<0.14"; }
	$(UV_COMPILE) -o $(LOCK)
	$(UV_COMPILE) --extra dev -c $(LOCK) -o $(DEV_LOCK)

migrate: install
	$(BIN)/python manage.py migrate --no-input

check-port:  ## fail fast, naming PORT, when HOST:PORT is taken
	@$(PYTHON) bin/check-port $(HOST) $(PORT)

run: check-port migrate  ## set up and start the app on the embedded default (SQLite, in-process, offline model)
	DEMO_SITE_URL=http://$(HOST):$(PORT) DEMO_LINE=true $(BIN)/python manage.py seed_demo --users
	@echo ""
	@echo "  Chat:  http://$(HOST):$(PORT)/      sign in as demo / demo"
	@echo "  Admin: http://$(HOST):$(PORT)/admin/ sign in as admin / admin"
	@echo "  LINE:  http://$(HOST):$(PORT)/demo/line/ a stand-in LINE app (DEMO_LINE)"
	@echo "  Model: $${OPENAI_API_KEY:+OpenAI-compatible API}$${OPENAI_API_KEY:-built-in offline model (set OPENAI_API_KEY for a real one)}"
	@echo ""
	DEMO_SITE_URL=http://$(HOST):$(PORT) DEMO_LINE=true $(BIN)/python manage.py runserver $(HOST):$(PORT)

test: test-embedded test-distributed  ## set up and run every test: SQLite pass, then Postgres + Redis pass

# Two workers (pytest-xdist): each has its own SQLite file, Postgres test database and Redis db.
TEST_WORKERS ?= 2
# The Postgres passes wait on the database and on worker processes: three workers took them from
# 8:13 + 3:31 to 7:28 + 2:37 on two cores (2026-11-28).
PG_WORKERS ?= 3

# Browser tests run after the rest, a module at a time per worker (`--dist loadfile`: it shares
# one chromium). One run of both with `--dist loadfile` ended with browser modules on one
# worker while the other idled (about 5 minutes longer in CI); `loadgroup` does not group
# under pytest 9.
BROWSER_TESTS := tests/*/*browser*.py
# Browser tests mostly wait (on chromium, a server, a poll): three at a time on two cores took
# the 69 of 2026-11-28 from 7:08 to 6:19 (four: 5:55, with a test race it exposed, since fixed).
BROWSER_WORKERS ?= 3

test-embedded: install
	$(BIN)/pytest -m "not distributed" -n $(TEST_WORKERS) --ignore-glob='*browser*.py'
	$(BIN)/pytest -m "not distributed" -n $(BROWSER_WORKERS) --dist loadfile $(BROWSER_TESTS)

test-distributed: install
	PG_URL=$(PG_URL) TEST_WORKERS=$(PG_WORKERS) bin/test-distributed

test-quick: install  ## the inner loop: SQLite only, in parallel, no browser or distributed tests
	$(BIN)/pytest -m "not distributed" -n $(TEST_WORKERS) --ignore-glob='*browser*.py'

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy's errors against mypy-baseline.txt (mypy-baseline, a PyPI tool): file, message and code,
# counted, line numbers left out so moved code is not new. mypy exits 1 when it finds errors (the
# baseline judges those) and 2 when it could not check: stop there, or no errors would read as
# every error fixed.
MYPY_REPORT = out=$$($(BIN)/mypy --no-error-summary) || [ $$? -eq 1 ] \
	|| { printf '%s\n' "$$out"; exit 2; }; printf '%s\n' "$$out"
MYPY_BASELINE_FLAGS = --baseline-path mypy-baseline.txt --sort-baseline --ignore-categories note

typecheck: install  ## mypy: fail on any error not in mypy-baseline.txt; say when some were fixed
	@$(MYPY_REPORT) | $(BIN)/mypy-baseline filter $(MYPY_BASELINE_FLAGS) --allow-unsynced

typecheck-baseline: install  ## rewrite mypy-baseline.txt from today's errors (after a code move)
	@$(MYPY_REPORT) | $(BIN)/mypy-baseline sync $(MYPY_BASELINE_FLAGS)

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The catalogues (locale/): the page's templates and scripts, and every gettext string of the apps
# (tool messages, the offline model, failure notes, reminder texts).
MESSAGES = $(BIN)/python manage.py makemessages -l zh_Hant -l zh_Hans --no-wrap --no-obsolete \
	-i .venv -i .venv-bench -i tests -i bench -i docs -i locale_vendor

# locale_vendor/: catalogs a package lacks (django-celery-beat's zh_Hant, converted from its
# zh_Hans with opencc s2twp; see its header), after locale/ in LOCALE_PATHS: compiled, never
# extracted into.
messages: install  ## extract new strings into locale/*.po (needs gettext); translate them, then run it again
	$(MESSAGES) -d django
	$(MESSAGES) -d djangojs -e js -i static/vendor
	for f in locale/*/LC_MESSAGES/*.po; do msgfmt --check -o "$${f%.po}.mo" "$$f"; done
	for f in locale_vendor/*/LC_MESSAGES/*.po; do msgfmt --check -o "$${f%.po}.mo" "$$f"; done

stack: install  ## the distributed stack locally: ASGI server + Celery worker + beat (needs Postgres, Redis)
	DATABASE_URL=$${DATABASE_URL:-$(PG_URL)} REDIS_URL=$${REDIS_URL:-$(REDIS_URL_LOCAL)} \
		sh -c '$(BIN)/python manage.py migrate --no-input && $(BIN)/python manage.py seed_demo && \
		PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/honcho start -f Procfile'

BENCH_VENV := .venv-bench
BENCH_PEERS = $(shell $(PYTHON) -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['bench']))")

$(BENCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet $(foreach p,$(BENCH_PEERS),"$(p)")
	touch $@

bench-peers: $(BENCH_VENV)/.installed  ## the `bench` extra (OpenAI Agents SDK) in its own venv

# bench/knowledge.py loads a million passages into Postgres (about 20 minutes on two cores):
# KNOWLEDGE_BENCH_ARGS="--pg-size 100000" for a quicker pass, "--keep" to reuse a loaded one.
bench: install bench-peers  ## every benchmark; the figures in bench/README.md come from here
	PG_URL=$(PG_URL) $(BIN)/python bench/peers.py
	$(BIN)/python bench/relay.py
	PG_URL=$(PG_URL) $(BIN)/python bench/turn.py
	$(BIN)/python bench/reminders.py
	$(BIN)/python bench/run_ends.py
	$(BIN)/python bench/startup.py
	PG_URL=$(PG_URL) $(BIN)/python bench/idle_sockets.py
	$(BIN)/python bench/concurrency.py
	$(BIN)/python bench/knowledge.py $(KNOWLEDGE_BENCH_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) .pytest_cache .ruff_cache *.egg-info

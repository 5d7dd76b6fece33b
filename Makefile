# One entry point for users and CI. `make test` creates .venv, installs the project with its dev
# extra, and runs the whole suite (lint + types + pytest, in parallel); `make check` is the inner
# loop's few minutes (lint + types + the fast tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEV_HOME ?= $(CURDIR)/.social_recording/dagster_home

.PHONY: install test check lint dev demo-run status test-mongo lock ferretdb ferretdb-path test-ferretdb clean image up secrets login helm-values

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall only when the project's dependencies change.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

lint: install
	$(BIN)/ruff check social_recording social_recording_tests test_support bench
	$(BIN)/mypy social_recording

# FerretDB, a MongoDB wire-protocol server on PostgreSQL: the Mongo store's tests run against it (the
# test session starts one on a free port with a database of its own on the local PostgreSQL). Built
# from the pinned release's source with Go when missing. Not `go install ...@$(FERRETDB_VERSION)`: the
# binary it builds panics at start, because the release's generated build/version/version.txt is not
# part of the Go module; the recipe builds a copy of the module with that file written.
# Go >= 1.21 fetches the toolchain the release's go.mod asks for (1.24) from the Go module proxy
# (GOTOOLCHAIN=auto; distributions' and users' go env often say `local`); README, "Set up and test",
# says where to get a Go on Debian and Ubuntu.
FERRETDB_VERSION := v1.24.2
FERRETDB ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/social_recording/ferretdb-$(FERRETDB_VERSION)/ferretdb
FERRETDB_GOTOOLCHAIN ?= auto
$(FERRETDB): export GOTOOLCHAIN = $(FERRETDB_GOTOOLCHAIN)
$(FERRETDB):
	@command -v go >/dev/null || { echo "FerretDB $(FERRETDB_VERSION) is built from source with Go >= 1.21 (it fetches 1.24), which is not on PATH: see README.md, 'Set up and test'" >&2; exit 1; }
	@v=$$(GOTOOLCHAIN=local go env GOVERSION); case "$$v" in go1.[0-9].*|go1.[0-9]|go1.1[0-9]*|go1.20*) echo "FerretDB $(FERRETDB_VERSION) needs Go >= 1.21 (it fetches 1.24), and PATH's go is $$v: see README.md, 'Set up and test'" >&2; exit 1;; esac
	set -e; src=$$(go mod download -json github.com/FerretDB/FerretDB@$(FERRETDB_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	work=$$(mktemp -d); trap 'chmod -R u+w "$$work"; rm -rf "$$work"' EXIT; \
	cp -R "$$src/." "$$work"; chmod -R u+w "$$work"; echo $(FERRETDB_VERSION) > "$$work/build/version/version.txt"; \
	mkdir -p "$(dir $@)"; cd "$$work" && go build -o "$@.tmp" ./cmd/ferretdb; mv "$@.tmp" "$@"
	"$@" --version | head -n 1

# The suite in two parts (social_recording_tests/README.md, "Running in parallel"): every test not
# marked `serial` on TEST_WORKERS pytest-xdist workers (each with its own servers, ports and
# databases), then the `serial` ones alone; the wall time at the end (CI's log shows it). Both parts
# always run; the target fails when either does. The first part lists the `serial` tests it collected
# (test_support/work_units.py, `-o serial_list`): the second runs those (none: it says so) instead of
# collecting the whole suite again; when the first part ended before it collected, the second
# collects all. Workers: one more than the cores (many tests wait on servers and subprocesses), at
# most 6. `make test PYTEST_ARGS="-x"` passes options to both. The package and the test helpers are
# byte-compiled first (as `make dev` does): the suite starts hundreds of processes that import them
# (runs, code servers, CLI calls, engine workers), and where PYTHONDONTWRITEBYTECODE is set each would
# compile them again.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); n=$$((n + 1)); [ $$n -gt 6 ] && n=6; echo $$n)
PYTEST_ARGS ?=
PYTEST := SOCIAL_RECORDING_TEST_FERRETDB=$(FERRETDB) $(BIN)/python -m pytest
test: install lint $(FERRETDB)
	@$(BIN)/python -m compileall -q social_recording test_support
	@start=$$(date +%s); status=0; serial=$$(mktemp -d); \
	$(PYTEST) -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder -m "not serial" -o serial_list=$$serial/ids $(PYTEST_ARGS) || status=$$?; \
	parallel=$$(( $$(date +%s) - start )); \
	if [ -f $$serial/ids ] && [ ! -s $$serial/ids ]; then echo "make test: no test is marked serial"; \
	else $(PYTEST) -q -m serial $(PYTEST_ARGS) $$([ -f $$serial/ids ] && echo "@$$serial/ids") || { rc=$$?; [ $$rc -eq 5 ] || status=$$rc; }; fi; \
	rm -rf "$$serial"; \
	wall=$$(( $$(date +%s) - start )); \
	echo "make test: pytest took $$((wall / 60)) min $$((wall % 60)) s wall ($$parallel s on $(TEST_WORKERS) workers, then the serial tests; load $$(cut -d' ' -f1-3 /proc/loadavg))"; \
	exit $$status

# The inner loop, in a few minutes: lint and types, then the tests that need no server (the domain's
# rules, the import layers, the documents' pointers, the settings, the HTTP layer, the upstream
# readers), in parallel. `make test` runs them again with everything else.
CHECK_TESTS := social_recording_tests/domain social_recording_tests/test_layers.py \
	social_recording_tests/test_doc_pointers.py social_recording_tests/test_settings.py \
	social_recording_tests/test_spend_settings.py social_recording_tests/test_provider_tables.py \
	social_recording_tests/test_settled_rules.py social_recording_tests/outbound social_recording_tests/upstream
check: install lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not mongo_server and not integration" $(CHECK_TESTS)

ferretdb: $(FERRETDB)

# Where the FerretDB binary is (built or not): .ci/run installs Go only when it is missing.
ferretdb-path:
	@echo $(FERRETDB)

# Only the tests that reach the Mongo-protocol server (the store's contract over the wire, the
# concurrency, fault and rehearsal runs on the Mongo store), on a FerretDB started for the session.
test-ferretdb: install $(FERRETDB)
	SOCIAL_RECORDING_TEST_FERRETDB=$(FERRETDB) $(BIN)/python -m pytest -q -m mongo_server

# `dg dev` (Dagster's dev server) on the embedded default: SQLite store + locks and the sandbox ledger under
# .social_recording/, instance settings (run concurrency) from dagster.yaml. It runs inside
# $(DEV_HOME), which holds the copy of dagster.yaml: Dagster reads its instance config there, and
# a `.env` in the repository root (docker compose's settings) is not loaded into the development
# copy. `DEV_ARGS="-p 3001"` passes options to `dg dev`. (`dg dev` from the repository root
# serves the same code location, see pyproject.toml's [tool.dg].)
# Every run is a new process that imports the code location: byte-compiled once here (as the
# image's `pip install` does), a run starts without compiling it again, even where
# PYTHONDONTWRITEBYTECODE keeps Python from caching it.
# The settings it starts with (the SOCIAL_RECORDING_* variables of its environment, secrets left out)
# are validated and written to $(DEV_HOME)/.env, where `make status` reads them.
# The terminal shows INFO and above: the services' own lines (`dg dev --log-level`), each run's log
# (the copy of dagster.yaml's python_log_level), and nothing for a sensor tick that launches nothing
# (dev/sitecustomize.py). `make dev DEV_LOG_LEVEL=debug` shows every run event and every tick.
DEV_ARGS ?=
DEV_LOG_LEVEL ?= info
dev: install
	$(BIN)/python -m compileall -q social_recording
	mkdir -p $(DEV_HOME)
	sed 's/^  python_log_level: INFO$$/  python_log_level: $(shell echo $(DEV_LOG_LEVEL) | tr a-z A-Z)/' dagster.yaml > $(DEV_HOME)/dagster.yaml
	$(BIN)/python -m social_recording record-settings $(DEV_HOME)/.env
	cd $(DEV_HOME) && DAGSTER_HOME=$(DEV_HOME) SOCIAL_RECORDING_DEV_LOG_LEVEL=$(DEV_LOG_LEVEL) \
		PYTHONPATH=$(CURDIR)/dev$${PYTHONPATH:+:$$PYTHONPATH} \
		$(abspath $(BIN))/dg dev -w $(CURDIR)/workspace.yaml --log-level $(DEV_LOG_LEVEL) $(DEV_ARGS)

demo-run: install
	$(BIN)/python -m social_recording.demo

# Where convergence stands in the store `make dev` writes (or the one SOCIAL_RECORDING_STORE_URL names),
# with the settings `make dev` started Dagster with ($(DEV_HOME)/.env, under this shell's environment):
# token URLs by status and platform, what the retry job takes next, the next retry.
# `make status STATUS_ARGS=--json` for scripts.
status: install
	DAGSTER_HOME=$(DEV_HOME) $(BIN)/python -m social_recording status $(STATUS_ARGS)

# Every test that reaches a Mongo-protocol server (the store's contract and index checks, the state
# machine's tests, the multi-process and fault runs on the Mongo store) against the docker-compose
# `mongodb` service, which only docker-compose.test.yml publishes (on MONGO_PUBLISH, default
# 127.0.0.1:27017), as the root user (MONGO_ROOT_USER of .env, its password from the secret file of
# `make secrets`; each test creates and drops a database of its own, which the application's user may not). The tests that stop and restart their store's server, and the
# deployment rehearsal, still start a FerretDB of their own:
#   docker compose -f docker-compose.yml -f docker-compose.test.yml up -d --wait mongodb && make test-mongo
test-mongo: install $(FERRETDB)
	set -a && . ./.env && set +a && \
	root_password="$$(cat $(SECRETS_DIR)/mongo_root_password)" && \
	SOCIAL_RECORDING_TEST_MONGO_URL="mongodb://$${MONGO_ROOT_USER:-social_recording}:$$root_password@$${MONGO_PUBLISH:-127.0.0.1:27017}/?authSource=admin" \
	SOCIAL_RECORDING_TEST_FERRETDB=$(FERRETDB) $(BIN)/python -m pytest -q -m mongo_server

# The image's lock file: pyproject.toml's dependencies with the `deploy` extra, plus what builds the
# project (deploy/requirements.in), every version pinned with its hashes, for Linux x86-64 and Python
# 3.11 (the Dockerfile's base). Run it after changing a dependency; without --upgrade, uv keeps every
# pin the current lock has that still fits, so it changes only what the change needs. A test runs this
# target into a copy and compares (social_recording_tests/deploy/test_lock.py).
LOCK ?= deploy/requirements.lock
lock: install
	$(BIN)/uv pip compile pyproject.toml deploy/requirements.in --extra deploy --generate-hashes \
		--python-version 3.11 --python-platform x86_64-unknown-linux-gnu \
		--custom-compile-command "make lock" --quiet -o $(LOCK)

# The deployment (docker-compose.yml; docs/operations.md). Every build is tagged with the commit it
# was built from (`-dirty` when the working tree has uncommitted changes), so `docker compose ps` and
# the Helm values name the code that runs; IMAGE_TAG=... overrides it.
IMAGE_TAG ?= $(shell git rev-parse --short HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
SECRETS_DIR ?= ./secrets
export IMAGE_TAG

image:
	docker compose build
	@echo "built social-recording:$(IMAGE_TAG)"

# Build and start (or upgrade: the one-shot migrate service runs first, the rest wait for it).
up:
	docker compose up -d --build

# The secret files compose mounts: passwords and URLs generated, empty files for the keys and logins
# (an existing file is never overwritten).
secrets:
	sh deploy/make-secrets.sh $(SECRETS_DIR)

# A login for the proxy in front of the webservers: `make login LOGIN=alice ROLE=operators` (or
# viewers); openssl asks for the password twice and stores its SHA-512 crypt hash.
ROLE ?= viewers
login:
	@test -n "$(LOGIN)" || { echo "usage: make login LOGIN=name ROLE=operators|viewers" >&2; exit 64; }
	@case "$(ROLE)" in operators|viewers) ;; *) echo "ROLE must be operators or viewers" >&2; exit 64;; esac
	@printf '%s:%s\n' "$(LOGIN)" "$$(openssl passwd -6)" >> $(SECRETS_DIR)/proxy_$(ROLE)_htpasswd
	@echo "added $(LOGIN) to $(SECRETS_DIR)/proxy_$(ROLE)_htpasswd"

# deploy/helm/values.yaml with this build's tag in place of its placeholder (build/helm-values.yaml,
# for `helm upgrade -f`): a values overlay or `--set` on a list element would replace the whole
# user-deployments list, so the tag goes into a copy of the file instead.
helm-values:
	mkdir -p build
	sed 's/set-at-install-to-the-commit/$(IMAGE_TAG)/g' deploy/helm/values.yaml > build/helm-values.yaml
	@echo "build/helm-values.yaml: image tag $(IMAGE_TAG)"

clean:
	rm -rf $(VENV) .social_recording .pytest_cache .mypy_cache .ruff_cache

# One entry point for users and CI. `make test` creates .venv, installs the project with its dev
# extra, and runs the whole suite (lint + types + pytest).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home

.PHONY: install test lint dev demo-run clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'

lint: install
	$(BIN)/ruff check social_recording social_recording_tests bench
	$(BIN)/mypy social_recording

test: install lint
	$(BIN)/python -m pytest -q

$(DAGSTER_HOME):
	mkdir -p $(DAGSTER_HOME) && cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml

dev: install $(DAGSTER_HOME)
	$(BIN)/dagster dev -w workspace.yaml

demo-run: install
	$(BIN)/python -m social_recording.demo

clean:
	rm -rf $(VENV) .social_recording .dagster_home .pytest_cache .mypy_cache .ruff_cache

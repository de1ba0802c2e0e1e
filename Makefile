# Two commands set everything up on a fresh Debian machine with Python 3.11:
#   make run   install what is missing, then start the whole service in the foreground
#   make test  install what is missing, then run every test
VENV := .venv
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
PYTHON ?= python3

.PHONY: run test bench bench-replication bench-density lint install system-packages

install: system-packages $(STAMP)

system-packages:
	@scripts/install-system-packages.sh

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $@

run: install
	scripts/run.sh

test: install
	scripts/test.sh

bench: install
	$(VENV)/bin/python bench/run_all.py

bench-replication: install
	$(VENV)/bin/python bench/replication.py

bench-density: install
	$(VENV)/bin/python -m bench.density

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

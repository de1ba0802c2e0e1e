#!/usr/bin/env bash
# `make test`: every test, in parallel. Uses Postgres when one answers on 127.0.0.1:5432
# (database `test`), SQLite otherwise; DATABASE_URL set by the caller always wins.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DATABASE_URL:-}" ] && .venv/bin/python - <<'PY' 2>/dev/null
import psycopg
psycopg.connect("postgresql://postgres@127.0.0.1:5432/test", connect_timeout=2).close()
PY
then
  export DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test
fi
echo "database: ${DATABASE_URL:-sqlite (default)}"
# The suite starts hundreds of Python processes (brokers, clients, the control plane's
# daemons); with PYTHONDONTWRITEBYTECODE set, as in some sandboxes, each compiled the
# project's modules from source again: a broker's imports took 0.42 CPU-seconds instead of
# 0.23 with bytecode cached.  The __pycache__ directories are ignored by git.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/pytest -n "${PYTEST_WORKERS:-4}" --dist loadfile -m "not serial" --durations=25 "$@"
# Tests marked `serial` are heavy (failover of 3,000 partitions): they run alone
# afterwards, so their load and the other tests' do not starve each other.  Timing bounds
# live in bench/, never here.  Exit code 5 means the
# arguments selected none of them.
status=0
.venv/bin/pytest -p no:xdist -m serial --durations=10 "$@" || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then exit "$status"; fi

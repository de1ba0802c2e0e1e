#!/usr/bin/env bash
# Rewrites the README's table of served Kafka APIs from the broker's registry
# (brokerd/server/api_table.py); the unit tests fail while the README's copy differs.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python - <<'PY'
from pathlib import Path

from brokerd.server.api_table import replace_table

readme = Path("README.md")
readme.write_text(replace_table(readme.read_text()))
PY

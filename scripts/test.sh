#!/usr/bin/env bash
# The README's test command: set up, then run every test (unit, integration, reliability).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"

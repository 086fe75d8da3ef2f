#!/usr/bin/env bash
# Create .venv (if missing) and install kgbridge with its test extra. Idempotent; safe to re-run.
# pip's output goes to .venv/setup.log and is shown only if the install fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
if ! { .venv/bin/python -m pip install --disable-pip-version-check --upgrade pip \
       && .venv/bin/python -m pip install --disable-pip-version-check -e '.[test]'; } > .venv/setup.log 2>&1; then
  cat .venv/setup.log >&2
  echo "setup failed (log above, also in .venv/setup.log)" >&2
  exit 1
fi

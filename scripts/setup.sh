#!/usr/bin/env bash
# Create .venv (if missing) and install kgbridge with its test extra. Idempotent; safe to re-run.
# pip's output goes to .venv/setup.log and is shown only if the install fails. A re-run with the
# same pyproject.toml and interpreter skips pip (the install is editable: code changes need none).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp="$(cat pyproject.toml; .venv/bin/python -VV)"
if [ -f .venv/setup.stamp ] && [ "$(cat .venv/setup.stamp)" = "$stamp" ] \
   && .venv/bin/python -c 'import kgbridge' 2>/dev/null; then
  exit 0
fi
rm -f .venv/setup.stamp
if ! { .venv/bin/python -m pip install --disable-pip-version-check --upgrade pip \
       && .venv/bin/python -m pip install --disable-pip-version-check -e '.[test]'; } > .venv/setup.log 2>&1; then
  cat .venv/setup.log >&2
  echo "setup failed (log above, also in .venv/setup.log)" >&2
  exit 1
fi
printf '%s' "$stamp" > .venv/setup.stamp

#!/usr/bin/env bash
# The README's main-job command: set up, then run the whole loop on the embedded example (serve,
# activate, two sessions captured through the real hook, projection mounted or materialized) and
# show MEMORY.md, a contested topic file and status. Everything lives in ./demo-root.
# Pass --keep to leave the server running and the projection mounted.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && ! command -v fusermount >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fuse libfuse2) >/dev/null 2>&1 \
    || echo "FUSE packages could not be installed; the projection will be materialized instead"
fi
bash scripts/setup.sh
exec .venv/bin/python scripts/demo_loop.py "$@"

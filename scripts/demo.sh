#!/usr/bin/env bash
# The README's main-job command: set up, then ingest the embedded example project into a fresh
# knowledge root (./demo-root) and show what the graph made of it, contested claims first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KG_KNOWLEDGE_ROOT="${KG_KNOWLEDGE_ROOT:-$PWD/demo-root}"
rm -rf "$KG_KNOWLEDGE_ROOT/ontology/shop"
KG=.venv/bin/kgbridge
$KG ingest examples/shop --ontology shop
$KG show --ontology shop --status CONTESTED
$KG show --ontology shop testing-real-db
$KG search "database" --ontology shop
echo "knowledge root: $KG_KNOWLEDGE_ROOT  (try: $KG show --ontology shop)"

#!/usr/bin/env bash
# Offline variant of the demo: ingest the embedded example project into ./demo-root and show the
# contested claims, one concept with every source behind each label, and a search.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KG_KNOWLEDGE_ROOT="$PWD/demo-root/Knowledge"
rm -rf "$KG_KNOWLEDGE_ROOT/ontology/shop"
KG=.venv/bin/kgbridge
$KG ingest examples/shop --ontology shop
$KG show --ontology shop --status CONTESTED
$KG show --ontology shop testing-real-db
$KG search "database" --ontology shop

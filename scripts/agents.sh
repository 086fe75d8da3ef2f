#!/usr/bin/env bash
# Install the pinned Claude Code and Codex binaries into ./.agents (gitignored) for the end-to-end
# tests and bench/agents.py. Idempotent: does nothing when the pinned versions are already there.
# Needs npm (the npm registry only). Prints the bin directory on success.
set -euo pipefail
cd "$(dirname "$0")/.."
# The versions the e2e tests were written against (issue 16 measured both); bump together with them.
CLAUDE_CODE="@anthropic-ai/claude-code@2.1.328"
CODEX="@openai/codex@0.169.0"
PREFIX=.agents
installed() {  # name version -> true when node_modules holds exactly that version
  local pkg="$PREFIX/node_modules/$1/package.json"
  [ -f "$pkg" ] && grep -q "\"version\": \"$2\"" "$pkg"
}
if ! installed "@anthropic-ai/claude-code" "${CLAUDE_CODE##*@}" || ! installed "@openai/codex" "${CODEX##*@}" \
   || [ ! -x "$PREFIX/node_modules/.bin/claude" ] || [ ! -x "$PREFIX/node_modules/.bin/codex" ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm not found: install Node.js and npm to get the agent binaries" >&2; exit 3; }
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" --save-exact --no-audit --no-fund --loglevel=error "$CLAUDE_CODE" "$CODEX" >&2
fi
echo "$PWD/$PREFIX/node_modules/.bin"

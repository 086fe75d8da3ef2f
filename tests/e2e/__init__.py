"""End-to-end tests with the real Claude Code and Codex binaries (a package, so its conftest is e2e.conftest)."""

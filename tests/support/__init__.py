"""Helpers the tests share: real FUSE mounts, a real server process, a sandboxed bridge environment.

Imported as `support.<module>` (pytest puts tests/ on sys.path). Nothing in bench/ may import these,
and nothing here imports bench/ (import-linter contracts in pyproject.toml).
"""

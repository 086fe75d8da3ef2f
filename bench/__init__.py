"""Benchmarks: run from the repository root as `python -m bench.<name>`; figures go to docs/BENCHMARKS.md."""

"""projection: brings the graph back to the agent as a ranked, budgeted MEMORY.md and topic files (rank, render, mount)."""

"""SLURM, the pure half (in progress: the scheduling passes; see NOTES.md)."""

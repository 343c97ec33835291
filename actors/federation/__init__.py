"""The federation's live half: its front ends, the driver of its sites on one
clock, and its summary (see README.md beside this file)."""

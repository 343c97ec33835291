"""Sparrow-style distributed sampling and the Hawk hybrid: the pure half.

``worker`` (a machine's slots and FIFO queue of tasks and reservations),
``placement`` (random, per-task and batch sampling, late binding),
``hybrid`` (Hawk: long jobs central, short jobs late-bound, work stealing),
``omniscient`` (the earliest-start reference), ``supermarket`` (the
power-of-d closed form). See NOTES.md.
"""

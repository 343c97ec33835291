"""Everything that runs: thin Ray shells over plain classes.

Only ``actors.engines.ray_engine`` imports Ray; every other module here is a plain class
driven through a ``Runtime`` (now, sleep, call, send), so the same classes can
later run on a virtual clock in one process.
"""

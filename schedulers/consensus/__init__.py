"""A pure Raft consensus core for the replicated coordinator.

Nothing here does I/O, reads a clock, starts a thread or imports Ray: a
``RaftNode`` is stepped by messages (``step``), by logical time (``tick``) and
by client proposals (``propose``), and hands back what must be persisted and
sent in a ``Ready``. The actor that will host it owns timers, storage and the
network; tests drive it through a seeded in-memory network.

Modules: ``messages`` (wire types), ``log`` (the in-memory log behind a
snapshot offset), ``statemachine`` (the state-machine protocol, a key-value
example and the exactly-once wrapper), ``storage`` (what a node persists and
how a ``Ready`` is applied to it), ``core`` (the node).
"""

"""Experiments and tools built on the API: the reproduction suite
(``reproduce`` over ``paper.findings`` in the ``fidelity`` frame), the engines'
cross-check (``crosscheck``), CSS side by side (``paper.css_compare``), the chaos
soak (``soak``), bin-packing ratios (``binpack``) and Borg cell compaction
(``compaction``). Each tool's ``main(argv)`` is a ``schedlab`` subcommand
(``schedlab.cli.tools``)."""

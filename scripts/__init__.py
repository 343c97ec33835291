"""What is truly a script: the benchmarks (``bench*.py``; the project's
speed targets live here, ``schedlab bench NAME`` runs them too), the
multi-node Ray helper ``cluster.sh`` and ``make_swf.py``; ``options.py``
holds the options every benchmark shares. Everything a user
runs as a command is a ``schedlab`` subcommand (``schedlab.cli``)."""

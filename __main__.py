"""``python -m schedlab``: the ``schedlab`` command. Subprocesses schedlab
starts (parallel sweeps, the soak's monkey) use this, so a ``scripts/`` folder
of the user's own can never stand in for ours."""
from schedlab.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())

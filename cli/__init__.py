"""The ``schedlab`` command: argument parsing, the subcommands and terminal
output (``main``: the parser and the run, compare, check, report, export and
scenarios commands; ``tools``: the experiments and benchmarks it runs by
name). Decisions and files are the API's (``schedlab.api``) and the
packages'; this only reads arguments, calls them and prints."""

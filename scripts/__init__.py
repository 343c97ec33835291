"""User entry points: thin, parse arguments and call the packages."""

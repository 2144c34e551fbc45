"""`python -m analyzer` is the `loglens` command."""

from analyzer.cli import main

main()

"""`python -m analyzer` is the `loglens` command."""

from analyzer._entry import main

main()

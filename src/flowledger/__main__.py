"""``python -m flowledger`` runs the CLI."""

from flowledger.cli.entry import main

main()

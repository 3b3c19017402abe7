"""``python -m flowledger`` runs the CLI."""

from flowledger.cli.main import main

main()

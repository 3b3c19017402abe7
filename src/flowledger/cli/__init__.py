"""The ``flowledger`` command line (Typer + rich)."""

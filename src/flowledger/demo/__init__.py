"""The demo data set (``flowledger demo``, and ``flowledger run`` on an empty
database): example definitions covering every node type and a realistic mix
of instances — approved, rejected, withdrawn, running on humans, waiting on
delays and subprocesses, suspended, and broken ones for the health pages."""

from flowledger.demo.loader import load_demo

__all__ = ["load_demo"]

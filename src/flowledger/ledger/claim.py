"""Claiming (SPEC L-6, L-7, L-10): the claim order of a pool's n-th claim.
The claim itself is the ledger driver's
(:meth:`LedgerDriver.jobs_claim <flowledger.ledger.driver.LedgerDriver.jobs_claim>`)."""

from __future__ import annotations

from flowledger.ledger.driver.job_values import DEFAULT_LEASE_MS

__all__ = ["DEFAULT_LEASE_MS", "EVERY_NTH_BY_DUE", "claim_order"]

EVERY_NTH_BY_DUE = 4  # SPEC L-7: every fourth claim orders by earliest due


def claim_order(claim_number: int) -> str:
    """The order of the ``claim_number``-th claim (1-based) of a pool."""
    return "due" if claim_number % EVERY_NTH_BY_DUE == 0 else "priority"

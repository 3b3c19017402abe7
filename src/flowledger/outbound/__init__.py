"""Outbound HTTP (SPEC X-4, L-16, L-17): the one way flowledger calls out.

- :mod:`~flowledger.outbound.ssrf` — URL parsing, the address policy (what a
  resolved address may be), the operator allow-list and host resolution;
  refusals raise :class:`~flowledger.outbound.ssrf.OutboundRefused` before any
  socket is opened.
- :mod:`~flowledger.outbound.client` — the single httpx-based client: no
  redirects followed, no transport retries, connect/read timeouts, and a
  network backend that connects only to the address the policy checked
  (DNS answers that change between check and connect cannot redirect it).
- :mod:`~flowledger.outbound.job_calls` — calls made from a job:
  ``X-Idempotency-Key`` (L-16), the side-effect marker before an unsafe write
  and the classification of every ending (L-17).
- :mod:`~flowledger.outbound.records` — what is stored on the attempt row:
  request and response with secret headers redacted and bodies truncated.

This package imports nothing at package level so the worker's executor can
import :mod:`~flowledger.outbound.records` cheaply.
"""

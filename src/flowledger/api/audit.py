"""The API's operation audit: :mod:`flowledger.access.audit` (re-exported
for the routers; the audit service lives below the API)."""

from flowledger.access.audit import AuditContext, AuditEntry, audited, write_audit

__all__ = ["AuditContext", "AuditEntry", "audited", "write_audit"]

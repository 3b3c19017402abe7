"""Consistency conclusions and the verdict of one instance (SPEC O-12).

interim: replaced at merge by the health-inspection implementation. This
module only fixes the interface the diagnostics document (SPEC O-10) calls:
:func:`instance_findings` returns no conclusion and the verdict "no check has
run"."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection


@dataclass(frozen=True)
class Evidence:
    task_ids: list[int]
    token_ids: list[int]
    job_ids: list[int]


@dataclass(frozen=True)
class Conclusion:
    rule: str
    level: str
    message: str
    evidence: Evidence
    repair: dict[str, Any] | None


@dataclass(frozen=True)
class Verdict:
    message: str
    action: str | None
    params: dict[str, Any]


@dataclass(frozen=True)
class InstanceFindings:
    conclusions: list[Conclusion]
    verdict: Verdict

    def to_public(self) -> dict[str, Any]:
        """``{"conclusions": [...], "verdict": {"message", "action", "params"}}``."""
        return {
            "conclusions": [
                {
                    "rule": c.rule,
                    "level": c.level,
                    "message": c.message,
                    "evidence": {
                        "taskIds": list(c.evidence.task_ids),
                        "tokenIds": list(c.evidence.token_ids),
                        "jobIds": list(c.evidence.job_ids),
                    },
                    "repair": c.repair,
                }
                for c in self.conclusions
            ],
            "verdict": asdict(self.verdict),
        }


async def instance_findings(
    conn: AsyncConnection, instance_id: int, *, now: datetime
) -> InstanceFindings:
    """The conclusions and the verdict of ``instance_id`` (interim: none)."""
    del conn, instance_id, now
    return InstanceFindings(
        conclusions=[], verdict=Verdict(message="no check has run", action=None, params={})
    )

"""The engine conformance suite (issue 28 item 6): each step plan of
tests/engine_conformance/flows.py runs on a fresh SQLite database and on a
fresh PostgreSQL database, and every table it writes — instances, tokens,
fork frames, tasks, form writes, the trace (E-8), the outbox (E-10), jobs,
attempts and step receipts (L-1, L-14), compensation tickets and their
history (C-8), the operation audit (A-2) — plus what the HTTP receiver was
sent must be the same on both, table by table, once normalized
(tests/engine_conformance/support.py).

SPEC ids per plan: start (E-1, E-2, E-3 inclusive fork, E-5, E-7, E-10);
approve with a parallel fork (E-3, E-4, E-5); the join of its branches and
the normal end (E-4, E-6, L-22); a delay woken by its ledger job (E-3, L-2,
L-14); subprocess spawn and join (E-3, L-12, L-14); HTTP trigger success
(X-1, L-16, E-7) and failure until its failure policy acts (X-1, L-5, C-1,
C-3, C-5, C-8); an instance ending with cleanup of its live jobs (E-6,
L-22); force jump (O-4, A-2)."""

from __future__ import annotations

import pytest

from tests.engine_conformance import flows
from tests.engine_conformance.support import Side, check_scenario


async def test_start_E1_E2_E3_E5_E7_E10(sides: list[Side]) -> None:
    await check_scenario(sides, flows.start_plan)


async def test_approve_with_fork_E3_E4_E5(sides: list[Side]) -> None:
    await check_scenario(sides, flows.approve_with_fork_plan)


async def test_join_of_the_fork_and_end_E4_E6_L22(sides: list[Side]) -> None:
    await check_scenario(sides, flows.join_plan)


async def test_delay_wake_E3_L2_L14(sides: list[Side]) -> None:
    await check_scenario(sides, flows.delay_wake_plan)


async def test_subprocess_spawn_and_join_E3_L12_L14(sides: list[Side]) -> None:
    await check_scenario(sides, flows.subprocess_plan)


async def test_trigger_success_X1_L16_E7(sides: list[Side]) -> None:
    await check_scenario(sides, flows.trigger_success_plan)


async def test_trigger_failure_until_its_policy_acts_X1_L5_C1_C3_C8(sides: list[Side]) -> None:
    await check_scenario(sides, flows.trigger_failure_plan)


@pytest.mark.parametrize("how", ["reject", "withdraw", "cancel"])
async def test_end_with_cleanup_of_live_jobs_E6_L22(how: str, sides: list[Side]) -> None:
    async def plan(side: Side) -> None:
        await flows.end_with_cleanup_plan(side, how)

    await check_scenario(sides, plan)


async def test_force_jump_O4_A2(sides: list[Side]) -> None:
    await check_scenario(sides, flows.force_jump_plan)

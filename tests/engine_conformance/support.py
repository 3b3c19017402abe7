"""The engine conformance machinery (issue 28 item 6): run one scenario on a
fresh SQLite database and on a fresh PostgreSQL database, dump every table
of the declared schema on each, normalize the two dumps so that only what a
step *means* is left, and compare them table by table.

What "normalized" means, in order:

1. **Ids are renumbered per table** by ascending id (the first row of a table
   becomes ``#1`` …). PostgreSQL reserves task, token and fork-frame ids in
   the statement that locks the instance and leaves the unused ones as gaps
   (docs/engine.md, "Tasks and lifecycle"); SQLite has no gaps. The order of
   the ids is part of the contract (ids ascend in creation order), their
   values are not.
2. **Every reference is remapped** through the map of the table it points to:
   the reference columns of :data:`COLUMN_REFS`, the ids inside JSON columns
   (:data:`JSON_KEY_REFS`, :data:`JSON_COLUMN_REFS`: job payloads'
   ``taskId``/``instanceId``, the trace's ``branches``/``joined`` token ids,
   a token's ``fork_stack`` …) and ids embedded in strings
   (:data:`STRING_REFS`: ``trigger:<task id>`` idempotency keys, the audit's
   ``target_id``). A column or JSON key that looks like a reference (``*_id``
   / ``*Id`` / ``*Ids`` holding integers) but is declared nowhere makes the
   dump fail loudly (:class:`UndeclaredReference`) instead of being compared
   raw by accident.
3. **Timestamps** become offsets from the scenario's clock start (both sides
   run on a :class:`~flowledger.clock.ManualClock` starting at the same
   instant), e.g. ``T+30.000000s``.
4. **Random values** (:data:`OPAQUE_COLUMNS`: trace ids, operation keys,
   lease tokens, token hashes) are renamed by order of first appearance
   (``<trace_id#1>``) everywhere they occur, also inside other strings and
   JSON (the ``X-Idempotency-Key`` header the receiver got is the job's
   operation key, L-16): which rows share a trace id stays compared, the
   random value itself does not.
5. **Excluded values** (:data:`EXCLUDED` columns, :data:`EXCLUDED_JSON`
   keys, each with its reason, all in one place below) keep only whether
   they are set: ``<set>`` or ``None``.

Rows are sorted by their renumbered id (tables without an integer ``id``: by
their normalized values). :func:`compare` aligns the two sides' rows of each
table (difflib, ignoring the table's own renumbered id so one extra row does
not shift every later one) and :func:`assert_same` fails with one short
section per differing table: the rows only one side has and, for paired
rows, only the columns that differ.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
from sqlalchemy import Table, select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import metadata
from flowledger.engine import Engine
from tests.integration.engine_helpers import run_due_jobs
from tests.outbound.receivers import Received, Receiver

BACKENDS = ("sqlite", "postgresql")

INSTANCES = "workflow_instances"
DEFINITIONS = "workflow_definitions"
TASKS = "workflow_tasks"
TOKENS = "workflow_tokens"
FORKS = "workflow_forks"
JOBS = "workflow_jobs"
OUTBOX = "workflow_event_outbox"
COMPENSATIONS = "workflow_compensations"
SUBSCRIPTIONS = "workflow_event_subscriptions"
CONNECTORS = "connectors"
ALERT_RULES = "workflow_alert_rules"
ALERT_EVENTS = "workflow_alert_events"
ALERT_SILENCES = "workflow_alert_silences"
RETENTION_RUNS = "workflow_retention_runs"
RECEIVED = "http_received"  # pseudo table: what the HTTP receiver was sent

# --------------------------------------------------------------- references

# table -> column -> the table whose id it holds
COLUMN_REFS: dict[str, dict[str, str]] = {
    INSTANCES: {
        "definition_id": DEFINITIONS,
        "parent_instance_id": INSTANCES,
        "parent_task_id": TASKS,
    },
    FORKS: {"instance_id": INSTANCES},
    TOKENS: {"instance_id": INSTANCES},
    TASKS: {"instance_id": INSTANCES, "token_id": TOKENS},
    "workflow_comments": {"instance_id": INSTANCES, "task_id": TASKS},
    "workflow_form_writes": {"instance_id": INSTANCES},
    "workflow_trace": {
        "instance_id": INSTANCES,
        "token_id": TOKENS,
        "task_id": TASKS,
        "job_id": JOBS,
    },
    OUTBOX: {"instance_id": INSTANCES},
    JOBS: {"instance_id": INSTANCES, "task_id": TASKS},
    "workflow_job_executions": {"job_id": JOBS},
    "workflow_job_effects": {"job_id": JOBS},
    "workflow_callbacks": {"instance_id": INSTANCES, "task_id": TASKS},  # + subject_id by kind
    COMPENSATIONS: {"instance_id": INSTANCES, "repair_task_id": TASKS, "action_job_id": JOBS},
    "workflow_compensation_logs": {"compensation_id": COMPENSATIONS},
    "workflow_subscription_hits": {
        "subscription_id": SUBSCRIPTIONS,
        "event_id": OUTBOX,
        "instance_id": INSTANCES,
        "job_id": JOBS,
    },
    "connector_calls": {"connector_id": CONNECTORS, "job_id": JOBS, "instance_id": INSTANCES},
    "workflow_task_reminders": {"task_id": TASKS},
    ALERT_EVENTS: {"rule_id": ALERT_RULES, "silence_id": ALERT_SILENCES},
    ALERT_RULES: {"last_event_id": ALERT_EVENTS},
    ALERT_SILENCES: {"rule_id": ALERT_RULES},
    "workflow_retention_run_items": {"run_id": RETENTION_RUNS},
}

# a callback's subject is a task (external approval) or a trigger job
CALLBACK_SUBJECTS = {"external": TASKS, "trigger": JOBS}

# JSON keys (anywhere inside a JSON column) whose value is an id or a list of ids
JSON_KEY_REFS: dict[str, str] = {
    "instanceId": INSTANCES,
    "parentInstanceId": INSTANCES,
    "childInstanceId": INSTANCES,
    "taskId": TASKS,
    "taskIds": TASKS,
    "parentTaskId": TASKS,
    "repairTaskId": TASKS,
    "tokenId": TOKENS,
    "tokenIds": TOKENS,
    "branches": TOKENS,  # trace token_forked: the branch tokens
    "joined": TOKENS,  # trace token_joined: the parked tokens that joined
    "forkId": FORKS,
    "jobId": JOBS,
    "jobIds": JOBS,
    "canceledJobs": JOBS,  # trace instance_finished / audit detail
    "ticketId": COMPENSATIONS,
    "compensationId": COMPENSATIONS,
    "definitionId": DEFINITIONS,
    # the operation audit's detail of a force jump
    "terminatedTasks": TASKS,
    "createdTasks": TASKS,
    "consumedTokens": TOKENS,
}

# (table, column) -> the table whose ids the whole JSON value lists
JSON_COLUMN_REFS: dict[tuple[str, str], str] = {
    (TOKENS, "fork_stack"): FORKS,
}

# (table, column) -> (pattern, table of the id in group 1) for ids inside
# strings; every match is replaced by the renumbered reference
STRING_REFS: dict[tuple[str, str], list[tuple[re.Pattern[str], str]]] = {
    (JOBS, "idempotency_key"): [
        (re.compile(r"^(?:spawn|trigger|external):(\d+)$"), TASKS),
        (re.compile(r"^join:(\d+)$"), INSTANCES),
        (re.compile(r"^ticket:(\d+):action$"), COMPENSATIONS),
    ],
    ("workflow_compensation_logs", "message"): [
        (re.compile(r"\bas job (\d+)\b"), JOBS),  # "http action enqueued as job 2"
    ],
    # the form write of a trigger's response names the job that called
    ("workflow_form_writes", "source"): [(re.compile(r"^trigger:(\d+)$"), JOBS)],
}
# (table, column, JSON key) -> the same, for ids inside strings of a JSON column
JSON_STRING_REFS: dict[tuple[str, str, str], list[tuple[re.Pattern[str], str]]] = {
    ("workflow_trace", "detail", "source"): STRING_REFS[("workflow_form_writes", "source")],
}
# columns whose every digit must be covered by a STRING_REFS rule
STRICT_STRING_COLUMNS = {(JOBS, "idempotency_key")}

# operation_audit.target_id is a string id whose table depends on target_type
AUDIT_TARGETS = {"instance": INSTANCES, "task": TASKS, "job": JOBS, "compensation": COMPENSATIONS}

# ----------------------------------------------------- random and excluded

# columns holding random values: renamed by first appearance, everywhere
OPAQUE_COLUMNS: dict[str, str] = {
    "trace_id": "a uuid4 per started instance (engine/instances.py), shared by its jobs",
    "operation_key": "a uuid4 per job (ledger/models.py); the receiver gets it as a header",
    "lease_token": "uuid4().hex on SQLite, gen_random_uuid()::text on PostgreSQL",
    "token_hash": "sha256 of a random bearer token (access/tokens.py)",
}

# (table, column) -> why the value is not compared (only whether it is set)
EXCLUDED: dict[tuple[str, str], str] = {
    # none so far: every column the plans write is either deterministic
    # under the ManualClock or covered by the rules above. Notably
    # compared, not excluded: workflow_jobs.lease_until / execution_deadline
    # and workflow_job_executions.started_at / finished_at / duration_ms
    # are computed from the claim's and settlement's ``now``, which the
    # in-process worker takes from the side's ManualClock; lease_owner and
    # node_id are the fixed node id of tests/integration/engine_helpers.py;
    # system_scheduler_nodes (hostname, pid, heartbeats) is not written by
    # the in-process worker, so an empty table is compared.
}

# (table, JSON column, key) -> why that key (at any depth of the column's
# JSON) is not compared (only whether it is set)
EXCLUDED_JSON: dict[tuple[str, str, str], str] = {
    ("workflow_job_executions", "response", "duration_ms"): (
        "the HTTP call's own timing (outbound client, monotonic host clock)"
    ),
}


class UndeclaredReference(AssertionError):
    """A column or JSON key looks like a reference but no rule says where it
    points: declare it (COLUMN_REFS / JSON_KEY_REFS / STRING_REFS)."""


# ------------------------------------------------------------------- sides


@dataclass
class Side:
    """One backend's half of a scenario: a fresh database, its own
    ManualClock (same start on both sides) and an engine as the default
    runtime builds it; ``receiver`` is the test's HTTP receiver on 127.0.0.1
    (one for both sides, so URLs in definitions are equal; its requests are
    cleared before each side runs); ``api`` is an API client over the same
    database and engine, authenticated as an operator (made on first use)."""

    backend: str
    db: Database
    clock: ManualClock
    engine: Engine
    receiver: Receiver
    api_factory: Callable[[Side], Awaitable[httpx.AsyncClient]]
    _api: httpx.AsyncClient | None = None
    start: datetime = field(init=False)  # the clock's reading when the side was made

    def __post_init__(self) -> None:
        self.start = self.clock.now()

    async def api(self) -> httpx.AsyncClient:
        if self._api is None:
            self._api = await self.api_factory(self)
        return self._api

    async def aclose(self) -> None:
        if self._api is not None:
            await self._api.aclose()
        await self.db.dispose()

    async def run_jobs(self) -> int:
        """Run every due job through the real handlers (claim → execute →
        settle, as a worker does) until none is due."""
        return await run_due_jobs(self.db, self.clock)


Scenario = Callable[[Side], Awaitable[None]]
Row = dict[str, Any]
Dump = dict[str, list[Row]]


# -------------------------------------------------------------------- dump


def _has_int_id(table: Table) -> bool:
    pk = list(table.primary_key.columns)
    return len(pk) == 1 and pk[0].name == "id" and pk[0].type.python_type is int


async def raw_dump(db: Database) -> dict[str, list[Row]]:
    """Every row of every table of the declared schema."""
    out: dict[str, list[Row]] = {}
    async with db.read() as conn:
        for table in sorted(metadata.tables.values(), key=lambda t: t.name):
            rows = (await conn.execute(select(table))).mappings().all()
            out[table.name] = [dict(r) for r in rows]
    return out


def received_rows(requests: Sequence[Received]) -> list[Row]:
    """The receiver's requests as rows of the pseudo table ``http_received``
    (in arrival order, numbered)."""
    return [
        {
            "id": n,
            "method": r.method,
            "path": r.path,
            "headers": r.headers,
            "body": r.body.decode("utf-8", "replace"),
        }
        for n, r in enumerate(requests, 1)
    ]


class _Normalizer:
    def __init__(self, raw: dict[str, list[Row]], start: datetime) -> None:
        self.raw = raw
        self.start = start
        self.maps: dict[str, dict[int, int]] = {}
        for name, rows in raw.items():
            table = metadata.tables.get(name)
            if (table is not None and _has_int_id(table)) or name == RECEIVED:
                ids = sorted(int(r["id"]) for r in rows)
                self.maps[name] = {old: new for new, old in enumerate(ids, 1)}
        self.opaque: dict[str, str] = {}
        for name in sorted(raw, key=lambda n: (n == RECEIVED, n)):  # the receiver's last
            for row in sorted(raw[name], key=lambda r: self._order_key(name, r)):
                for column, value in row.items():
                    if column in OPAQUE_COLUMNS and isinstance(value, str) and value:
                        self._label(column, value)
                if name == RECEIVED and "x-idempotency-key" in row["headers"]:
                    self._label("idempotency_header", row["headers"]["x-idempotency-key"])

    def _order_key(self, name: str, row: Row) -> Any:
        return row["id"] if name in self.maps else repr(sorted(row.items()))

    def _label(self, kind: str, value: str) -> None:
        if value not in self.opaque:
            n = sum(1 for v in self.opaque.values() if v.startswith(f"<{kind}#")) + 1
            self.opaque[value] = f"<{kind}#{n}>"

    # ---------------------------------------------------------- values

    def ref(self, table: str, value: Any, where: str) -> Any:
        if value is None:
            return None
        if isinstance(value, list):
            return [self.ref(table, v, where) for v in value]
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise UndeclaredReference(f"{where}: {value!r} is not an id of {table}")
        number = int(value)
        found = self.maps.get(table, {}).get(number)
        short = table.removeprefix("workflow_")
        return f"{short}#{found}" if found is not None else f"{short}#?{number} (no such row)"

    def text(self, value: str) -> str:
        for secret, label in self.opaque.items():
            if secret in value:
                value = value.replace(secret, label)
        return value

    def when(self, value: datetime) -> str:
        offset = (value - self.start).total_seconds()
        return f"T{offset:+.6f}s"

    def json(self, value: Any, where: str, key: str | None = None) -> Any:
        table, _, column = where.partition(".")
        if key is not None and (table, column, key) in EXCLUDED_JSON:
            return None if value is None else "<set>"
        if key is not None and key in JSON_KEY_REFS and value is not None:
            return self.ref(JSON_KEY_REFS[key], value, f"{where}.{key}")
        if isinstance(value, dict):
            return {k: self.json(v, where, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json(v, where) for v in value]
        if isinstance(value, str) and key is not None and (table, column, key) in JSON_STRING_REFS:
            return self._renumbered(JSON_STRING_REFS[(table, column, key)], value, where)[0]
        if isinstance(value, str):
            return self.text(value)
        if key is not None and _looks_like_id(key, value):
            raise UndeclaredReference(f"{where}: JSON key {key!r} holds {value!r}")
        return value

    # ------------------------------------------------------------ rows

    def row(self, name: str, row: Row) -> Row:
        refs = COLUMN_REFS.get(name, {})
        out: Row = {}
        for column, value in row.items():
            where = f"{name}.{column}"
            if (name, column) in EXCLUDED:
                out[column] = None if value is None else "<set>"
            elif column == "id" and name in self.maps:
                out[column] = self.ref(name, value, where)
            elif column in refs:
                out[column] = self.ref(refs[column], value, where)
            elif name == "workflow_callbacks" and column == "subject_id":
                out[column] = self.ref(CALLBACK_SUBJECTS[row["kind"]], value, where)
            elif name == "operation_audit" and column == "target_id":
                target = AUDIT_TARGETS.get(row["target_type"])
                out[column] = value if target is None else self.ref(target, value, where)
            elif (name, column) in JSON_COLUMN_REFS:
                out[column] = self.ref(JSON_COLUMN_REFS[(name, column)], value, where)
            elif (name, column) in STRING_REFS and isinstance(value, str):
                out[column] = self.embedded(name, column, value)
            elif isinstance(value, datetime):
                out[column] = self.when(value)
            elif isinstance(value, dict | list):
                out[column] = self.json(value, where)
            elif isinstance(value, str):
                out[column] = self.text(value)
            else:
                if column.endswith("_id") and isinstance(value, int) and column != "id":
                    raise UndeclaredReference(f"{where} holds {value!r}: declare it")
                out[column] = value
        return out

    def embedded(self, name: str, column: str, value: str) -> str:
        where = f"{name}.{column}"
        value, matched = self._renumbered(STRING_REFS[(name, column)], value, where)
        if (name, column) in STRICT_STRING_COLUMNS and not matched and re.search(r"\d", value):
            raise UndeclaredReference(f"{where}: no rule for {value!r}")
        return value

    def _renumbered(
        self, rules: list[tuple[re.Pattern[str], str]], value: str, where: str
    ) -> tuple[str, bool]:
        """``value`` with every id a rule matches renumbered (then its opaque
        values renamed), and whether any rule matched."""

        def renumber(table: str) -> Callable[[re.Match[str]], str]:
            def one(match: re.Match[str]) -> str:
                whole, start = match.group(0), match.start(0)
                ref = self.ref(table, int(match.group(1)), where)
                return whole[: match.start(1) - start] + f"<{ref}>" + whole[match.end(1) - start :]

            return one

        matched = False
        for pattern, table in rules:
            value, n = pattern.subn(renumber(table), value)
            matched = matched or n > 0
        return self.text(value), matched

    def dump(self) -> Dump:
        out: Dump = {}
        for name in sorted(self.raw):
            rows = sorted(self.raw[name], key=lambda r: self._order_key(name, r))
            normalized = [self.row(name, r) for r in rows]
            if name not in self.maps:
                normalized.sort(key=_sort_key)
            out[name] = normalized
        return out


def _looks_like_id(key: str, value: Any) -> bool:
    if not (key.endswith(("Id", "Ids")) or key.endswith("_id")):
        return False
    if isinstance(value, list):
        return any(isinstance(v, int) and not isinstance(v, bool) for v in value)
    return isinstance(value, int) and not isinstance(value, bool)


def _sort_key(row: Row) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def normalize(raw: dict[str, list[Row]], start: datetime) -> Dump:
    """The comparable form of one side's rows (see the module docstring)."""
    return _Normalizer(raw, start).dump()


async def snapshot(side: Side) -> Dump:
    raw = await raw_dump(side.db)
    raw[RECEIVED] = received_rows(side.receiver.requests)
    return normalize(raw, side.start)


# ---------------------------------------------------------------- compare


@dataclass
class TableDiff:
    table: str
    counts: tuple[int, int]
    lines: list[str]

    def render(self, names: tuple[str, str]) -> str:
        a, b = names
        head = f"table {self.table}: {a} {self.counts[0]} rows, {b} {self.counts[1]} rows"
        return "\n".join([head, *("  " + line for line in self.lines)])


MAX_LINES_PER_TABLE = 30
MAX_VALUE_CHARS = 160


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _value_diff(path: str, x: Any, y: Any, names: tuple[str, str]) -> list[str]:
    """The differing leaves of two values: JSON objects are descended into,
    so a long JSON column shows only the keys that differ."""
    if x == y:
        return []
    if isinstance(x, dict) and isinstance(y, dict):
        out: list[str] = []
        for key in sorted(set(x) | set(y)):
            if key not in x or key not in y:
                a, b = (
                    (_short(x[key]) if key in x else "(absent)"),
                    (_short(y[key]) if key in y else "(absent)"),
                )
                out.append(f"{path}.{key}: {names[0]}={a}  {names[1]}={b}")
            else:
                out += _value_diff(f"{path}.{key}", x[key], y[key], names)
        return out
    return [f"{path}: {names[0]}={_short(x)}  {names[1]}={_short(y)}"]


def _without_own_id(row: Row) -> str:
    return _sort_key({k: v for k, v in row.items() if k != "id"})


def _row_label(row: Row) -> str:
    return str(row.get("id", "row"))


def _describe(row: Row) -> str:
    return ", ".join(f"{k}={_short(v)}" for k, v in row.items() if k != "id")


def diff_table(
    table: str, left: list[Row], right: list[Row], names: tuple[str, str]
) -> TableDiff | None:
    if left == right:
        return None
    a, b = names
    lines: list[str] = []
    matcher = difflib.SequenceMatcher(
        a=[_without_own_id(r) for r in left], b=[_without_own_id(r) for r in right], autojunk=False
    )
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":  # same content; after a row one side lacks, renumbered
            shifted = sum(1 for x, y in zip(left[i1:i2], right[j1:j2], strict=True) if x != y)
            if shifted:
                lines.append(f"({shifted} more rows equal but for their renumbered id)")
            continue
        pairs = min(i2 - i1, j2 - j1) if op == "replace" else 0
        for x, y in zip(left[i1 : i1 + pairs], right[j1 : j1 + pairs], strict=True):
            label = (
                _row_label(x) if x.get("id") == y.get("id") else f"{_row_label(x)}/{_row_label(y)}"
            )
            lines.append(f"{label} differs:")
            for column in sorted(set(x) | set(y)):
                lines += [
                    "    " + d for d in _value_diff(column, x.get(column), y.get(column), names)
                ]
        for x in left[i1 + pairs : i2]:
            lines.append(f"only in {a}: {_row_label(x)} {_describe(x)}")
        for y in right[j1 + pairs : j2]:
            lines.append(f"only in {b}: {_row_label(y)} {_describe(y)}")
    if len(lines) > MAX_LINES_PER_TABLE:
        lines = [*lines[:MAX_LINES_PER_TABLE], f"… {len(lines) - MAX_LINES_PER_TABLE} more lines"]
    return TableDiff(table, (len(left), len(right)), lines)


def compare(dumps: dict[str, Dump]) -> list[TableDiff]:
    """The tables whose normalized rows differ between the two backends."""
    names = (BACKENDS[0], BACKENDS[1])
    left, right = dumps[names[0]], dumps[names[1]]
    found = []
    for table in sorted(set(left) | set(right)):
        diff = diff_table(table, left.get(table, []), right.get(table, []), names)
        if diff is not None:
            found.append(diff)
    return found


def assert_same(dumps: dict[str, Dump]) -> None:
    diffs = compare(dumps)
    if diffs:
        names = (BACKENDS[0], BACKENDS[1])
        body = "\n".join(d.render(names) for d in diffs)
        tables = ", ".join(d.table for d in diffs)
        raise AssertionError(f"the backends differ in {tables}:\n{body}")


async def run_on_both(sides: Iterable[Side], scenario: Scenario) -> dict[str, Dump]:
    """Run ``scenario`` on each side in turn (SQLite first) and return the
    normalized dumps by backend."""
    dumps: dict[str, Dump] = {}
    for side in sides:
        side.receiver.requests.clear()
        await scenario(side)
        dumps[side.backend] = await snapshot(side)
    return dumps


async def check_scenario(sides: Iterable[Side], scenario: Scenario) -> dict[str, Dump]:
    """Run ``scenario`` on both backends and assert their rows are the same."""
    dumps = await run_on_both(sides, scenario)
    assert_same(dumps)
    return dumps

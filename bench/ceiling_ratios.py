"""The throughput figures of issue 32 as ratios to the PostgreSQL ceiling
measured in the same run (issue 32 item 4; ``make bench`` on PostgreSQL).

    python bench/ceiling_ratios.py --db postgresql://… [--jobs 20000] [--instances 2000]

In this order, each a process of its own whose output is shown as it runs:
``bench/pg_ceiling.sh`` (pgbench: claim one row ``FOR UPDATE SKIP LOCKED``
and mark it done, two autocommit transactions a job, 8 clients), the
ledger's peer drain (``bench/ledger_throughput.py``) and the engine
(``bench/engine_throughput.py``, one worker), on the database at ``--db``
(emptied by each bench). Last line::

    ceiling_jobs_per_s=… ledger_drain_per_s=… ledger_ratio=… engine_instances_per_s=… engine_ratio=…

``ledger_ratio`` = drain ÷ ceiling (issue 32's bar: ≥ 1.0 in each of three
rounds); ``engine_ratio`` = approval instances a second ÷ ceiling (≥ 0.035).
The machine is shared: compare ratios of one sitting, several rounds.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(command: list[str]) -> str:
    """Run ``command``, echoing its output; its output (stdout and stderr)."""
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    output = done.stdout + done.stderr
    print(output, end="", flush=True)
    if done.returncode != 0:
        raise SystemExit(f"{command[1]} failed with exit code {done.returncode}")
    return output


def figure(output: str, name: str) -> float:
    """The last ``name=<number>`` in ``output``."""
    found = re.findall(rf"\b{name}=([0-9.]+)", output)
    if not found:
        raise SystemExit(f"no {name}= in the output")
    return float(found[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="a PostgreSQL URL (its tables are emptied)")
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--instances", type=int, default=2000)
    args = parser.parse_args()
    if not args.db.startswith("postgresql"):
        parser.error("--db must be a PostgreSQL URL: the ceiling is pgbench's")
    python = sys.executable
    ceiling = figure(
        run(["bash", str(HERE / "pg_ceiling.sh"), str(args.jobs)]), "ceiling_jobs_per_s"
    )
    ledger = [python, str(HERE / "ledger_throughput.py"), "--db", args.db, "--jobs", str(args.jobs)]
    drain = figure(run(ledger), "drain_per_s")
    engine = figure(
        run(
            [
                python,
                str(HERE / "engine_throughput.py"),
                "--db",
                args.db,
                "--instances",
                str(args.instances),
                "--workers",
                "1",
            ]
        ),
        "instances_per_s",
    )
    print(
        f"ceiling_jobs_per_s={ceiling:.0f} ledger_drain_per_s={drain:.0f} "
        f"ledger_ratio={drain / ceiling:.3f} engine_instances_per_s={engine:.1f} "
        f"engine_ratio={engine / ceiling:.4f}",
        flush=True,
    )


if __name__ == "__main__":
    main()

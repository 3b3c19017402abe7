#!/usr/bin/env bash
# The PostgreSQL ceiling of a job ledger (issue 15 "Done when"): pgbench runs
# the least a job queue must do per job, two autocommit transactions - claim
# one pending row with FOR UPDATE SKIP LOCKED, then mark it done - with
# `pgbench -M prepared -c 8 -j 2` on a throwaway database it creates and
# drops. Prints jobs/s (= pgbench transactions/s: one script run is one job)
# and, on Linux, the whole machine's busy CPU per job over pgbench's run
# (ceiling_machine_cpu_us_per_job: client and server, as the drain's
# drain_machine_cpu_us_per_job counts its worker and server).
#
#   bench/pg_ceiling.sh [JOBS]    (env: PGHOST PGPORT PGUSER; default 20000 jobs)
set -euo pipefail

JOBS=${1:-20000}
CLIENTS=8
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
DB="flowledger_pg_ceiling_$$"
WORK=$(mktemp -d)
cleanup() {
    dropdb --if-exists "$DB" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

createdb "$DB"
psql -q -v ON_ERROR_STOP=1 -d "$DB" <<SQL
CREATE TABLE jobs (
    id bigserial PRIMARY KEY,
    status text NOT NULL DEFAULT 'pending',
    run_at timestamptz NOT NULL DEFAULT now(),
    payload jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX jobs_pending ON jobs (run_at, id) WHERE status = 'pending';
INSERT INTO jobs (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, $JOBS) g;
VACUUM ANALYZE jobs;
SQL

# Each statement outside BEGIN/COMMIT is its own (autocommit) transaction.
cat >"$WORK/job.sql" <<'SQL'
UPDATE jobs SET status = 'running' WHERE id = (SELECT id FROM jobs WHERE status = 'pending' AND run_at <= now() ORDER BY run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id AS job_id \gset
UPDATE jobs SET status = 'succeeded' WHERE id = :job_id;
SQL

# the machine's busy CPU (every process: pgbench and the server's backends),
# in clock ticks: /proc/stat's cpu line but idle and iowait (as
# bench/machine_cpu.py reads it), for the CPU a job costs at the ceiling
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat 2>/dev/null || true; }
busy_before=$(busy_ticks)
out=$(pgbench -n -M prepared -c "$CLIENTS" -j 2 -t $((JOBS / CLIENTS)) -f "$WORK/job.sql" "$DB" 2>&1)
busy_after=$(busy_ticks)
done_jobs=$(psql -At -d "$DB" -c "SELECT count(*) FROM jobs WHERE status = 'succeeded'")
tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1)
echo "$out" | grep -E '^(number of transactions actually processed|latency average|tps)'
echo "pgbench ceiling: $done_jobs of $JOBS jobs claimed and settled, 2 autocommit transactions each"
if [ -n "$busy_before" ] && [ -n "$busy_after" ]; then
    echo "ceiling_machine_cpu_us_per_job=$(((busy_after - busy_before) * 1000000 / $(getconf CLK_TCK) / JOBS))"
fi
echo "ceiling_jobs_per_s=$tps"

"""The volume bench's arithmetic (``bench/volume.py``, issue 34 item 7): the
sizes a scale fills, its arguments, and the retention window that leaves one
to two days of the oldest history expired."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from bench import volume, volume_fill


def test_scale_one_is_the_issue_size() -> None:
    sizes = volume_fill.Sizes.of(1.0)
    assert (sizes.instances, sizes.jobs) == (2_000_000, 12_000_000)
    assert volume_fill.Sizes.of(0.01).instances == 20_000
    assert volume_fill.Sizes.of(1e-9).instances == 100  # never empty


def test_scale_must_be_positive() -> None:
    with pytest.raises(ValueError):
        volume_fill.instance_count(0)
    with pytest.raises(SystemExit):
        volume.parse_args(["--scale", "0"])


def test_arguments() -> None:
    args = volume.parse_args(["--scale", "0.01", "--reuse", "--db", "postgresql://h/x"])
    assert (args.scale, args.reuse, args.db, args.runs) == (0.01, True, "postgresql://h/x", 5)
    assert volume.parse_args([]).db == volume.DEFAULT_DB


def test_chunks_cover_every_instance_once() -> None:
    chunks = volume_fill._chunks(120_001, volume_fill.CHUNK)
    assert chunks[0][0] == 1 and chunks[-1][1] == 120_002
    assert all(a[1] == b[0] for a, b in itertools.pairwise(chunks))


@pytest.mark.parametrize(("age_days", "keep"), [(90.0, 89), (90.9, 89), (89.2, 88)])
def test_retention_keeps_all_but_one_or_two_days(age_days: float, keep: int) -> None:
    now = datetime(2026, 12, 6, tzinfo=UTC)
    assert volume.keep_days_for_one_day(now - timedelta(days=age_days), now) == keep

"""``flowledger migrate-instances``'s "what" column (issue 30): each kind of
change a dry run reports reads as one short phrase, the timeout change
included (a change kind the column did not know used to raise KeyError)."""

from __future__ import annotations

from flowledger.cli.migrate_instances import _what


def test_every_change_kind_reads() -> None:
    result = {
        "reasons": [],
        "changes": [
            {"kind": "node_renamed", "nodes": [{"from": "a", "to": "a2"}]},
            {"kind": "assignee", "nodeKey": "a2", "added": ["cat"], "removed": []},
            {"kind": "form_fields_added", "fields": ["cost"]},
            {"kind": "timeout", "nodeKey": "t", "added": 2, "canceled": 0},
        ],
    }
    assert _what(result) == ("a→a2; a2: +['cat'] -[]; fields cost; t: timeouts +2 -0")


def test_a_block_reads_its_reasons() -> None:
    reasons = [{"code": "consistency_check_failed", "message": "would break O-16 rule x"}]
    assert _what({"reasons": reasons, "changes": []}) == (
        "consistency_check_failed: would break O-16 rule x"
    )

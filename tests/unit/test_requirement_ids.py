"""Every requirement ID cited in the code, the tests and the docs resolves
inside the repository (issue 16 item 6): ``docs/requirements.md`` states each
one in a line, and every module it points at exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "docs" / "requirements.md"
ID = re.compile(r"\b([LEXCOA]-\d+)\b")


def _indexed() -> dict[str, str]:
    rows = {}
    for line in INDEX.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| ([LEXCOA]-\d+) \| (.+?) \| (.+) \|$", line)
        if match:
            rows[match.group(1)] = match.group(3)
    return rows


def test_every_cited_id_is_in_the_index() -> None:
    indexed = _indexed()
    cited: dict[str, str] = {}
    for folder in ("src", "tests", "docs", "bench"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in {".py", ".md", ".ts", ".tsx"} or path == INDEX:
                continue
            for found in ID.findall(path.read_text(encoding="utf-8", errors="replace")):
                cited.setdefault(found, str(path.relative_to(ROOT)))
    assert len(cited) > 50
    missing = {i: where for i, where in cited.items() if i not in indexed}
    assert not missing, f"cited but not in docs/requirements.md: {missing}"


def test_every_module_the_index_names_exists() -> None:
    package = ROOT / "src" / "flowledger"
    named = {
        p for where in _indexed().values() for p in re.findall(r"`([a-z_/]+(?:\.py|/))`", where)
    }
    assert named
    assert sorted(p for p in named if not (package / p).exists()) == []

"""Every user-visible string of the console goes through i18n in both
languages (issue 13 item 8): each namespace exists in zh-CN and en with the
same keys, no value is empty, and every literal key the source passes to
``t(...)`` exists in its namespace. (Keys built at run time — ``status.${s}``
— are caught in the browser tests: a missing key is a console error there.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

WEB = Path(__file__).resolve().parents[2] / "web" / "src"
LOCALES = WEB / "locales"
LANGUAGES = ("zh-CN", "en")


def _flatten(tree: dict[str, object], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{path}."))
        else:
            out[path] = str(value)
    return out


def _namespaces(lang: str) -> dict[str, dict[str, str]]:
    return {
        p.stem: _flatten(json.loads(p.read_text(encoding="utf-8")))
        for p in sorted((LOCALES / lang).glob("*.json"))
    }


def test_both_languages_have_the_same_namespaces_and_keys() -> None:
    zh, en = (_namespaces(lang) for lang in LANGUAGES)
    assert zh, "no locale files found"
    assert set(zh) == set(en)
    for ns in zh:
        missing_en = sorted(set(zh[ns]) - set(en[ns]))
        missing_zh = sorted(set(en[ns]) - set(zh[ns]))
        assert not missing_en, f"{ns}: missing in en: {missing_en}"
        assert not missing_zh, f"{ns}: missing in zh-CN: {missing_zh}"
        for lang, tree in (("zh-CN", zh[ns]), ("en", en[ns])):
            empty = [k for k, v in tree.items() if not v.strip()]
            assert not empty, f"{lang}/{ns}: empty values {empty}"


def test_placeholders_agree_between_languages() -> None:
    zh, en = (_namespaces(lang) for lang in LANGUAGES)
    for ns, keys in zh.items():
        for key, value in keys.items():
            here = set(re.findall(r"{{\s*(\w+)\s*}}", value))
            there = set(re.findall(r"{{\s*(\w+)\s*}}", en[ns][key]))
            assert here == there, f"{ns}:{key} placeholders {here} vs {there}"


_USE = re.compile(r'useTranslation\(\s*(?:"([\w-]+)")?\s*\)')
_CALL = re.compile(r'\bt\(\s*"([^"$]+)"')


def _literal_keys() -> list[tuple[Path, str, str]]:
    found = []
    for path in sorted(WEB.rglob("*.tsx")) + sorted(WEB.rglob("*.ts")):
        text = path.read_text(encoding="utf-8")
        uses = _USE.findall(text)
        if not uses:
            continue
        default_ns = uses[0] or "common"
        for key in _CALL.findall(text):
            ns, _, name = key.rpartition(":")
            found.append((path, ns or default_ns, name))
    return found


def test_every_literal_key_exists_in_both_languages() -> None:
    keys = _literal_keys()
    assert len(keys) > 100  # the scan sees the pages
    for lang in LANGUAGES:
        namespaces = _namespaces(lang)
        missing = [
            f"{p.relative_to(WEB)}: {ns}:{k}"
            for p, ns, k in keys
            if k not in namespaces.get(ns, {})
        ]
        assert not missing, f"{lang}: {missing}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_page_has_its_namespace(lang: str) -> None:
    registry = (WEB / "pages" / "registry.ts").read_text(encoding="utf-8")
    namespaces = re.findall(r'page\("[\w-]+", "[^"]+", "([\w-]+)"', registry)
    assert len(namespaces) >= 7
    for ns in namespaces:
        assert (LOCALES / lang / f"{ns}.json").is_file(), f"{lang}/{ns}.json"

"""No module-level mutable registry, cache or hook in ``src/flowledger``
(issue 16 item 3): what a process is wired from lives in its
:class:`~flowledger.runtime.Runtime`, built once from the settings and
passed down, never in a module global that an import fills.

The scan (``ast``, no import) refuses, anywhere in the package:

- a module-level name bound to a mutable container — a ``dict`` / ``list`` /
  ``set`` literal or comprehension, or a call of ``dict``, ``list``, ``set``,
  ``defaultdict``, ``OrderedDict``, ``Counter``, ``deque``, ``bytearray``,
  ``WeakKeyDictionary``, ``WeakValueDictionary`` or ``WeakSet`` — unless the
  name is a constant (UPPER_CASE, or ``__all__``) that no statement of the
  package ever changes (no item assignment or deletion, no ``append``,
  ``update``, ``setdefault``, ``pop`` …, no ``global``). A constant table may
  also be an immutable value (``MappingProxyType``, ``tuple``,
  ``frozenset``), which is never flagged;
- a module-level instance of one of the package's own classes that is not
  immutable (a frozen dataclass, a ``NamedTuple`` or an ``Enum``): a store of
  process state such as a registry object;
- a ``global`` statement;
- ``functools.lru_cache`` / ``cache`` on a function without parameters (a lazy
  process-wide singleton) or on one that reads the environment or the
  settings (``os.environ``, ``os.getenv``, ``Settings(``, ``get_settings``).

:data:`ALLOWED` names the exceptions, each with its reason; an entry that no
longer matches anything fails too, so the list shrinks as they are removed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "flowledger"

MUTABLE_CALLS = frozenset(
    {
        "dict",
        "list",
        "set",
        "defaultdict",
        "OrderedDict",
        "Counter",
        "deque",
        "bytearray",
        "WeakKeyDictionary",
        "WeakValueDictionary",
        "WeakSet",
    }
)
MUTABLE_NODES = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "add",
        "update",
        "setdefault",
        "pop",
        "popitem",
        "clear",
        "remove",
        "discard",
        "__setitem__",
        "__delitem__",
        "sort",
        "reverse",
    }
)
IMMUTABLE_BASES = frozenset({"NamedTuple", "Enum", "StrEnum", "IntEnum", "Flag", "IntFlag"})
ENVIRONMENT_READS = ("os.environ", "os.getenv", "Settings(", "get_settings")

# the one exemption, with its reason
ALLOWED: dict[str, str] = {
    "telemetry/setup.py: STATE": (
        "the process's OpenTelemetry tracer (issue 33 item 1): OpenTelemetry's provider and "
        "context are process-wide by the library's design, and the hooks of every step, "
        "attempt and outbound call read this one slot (None: tracing off) instead of a tracer "
        "argument threaded through them; build_runtime decides it once from OTEL_*"
    ),
}


@cache
def _package() -> tuple[tuple[str, ast.Module], ...]:
    return tuple(
        (path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
    )


def _modules(extra: dict[str, str]) -> Iterator[tuple[str, ast.Module]]:
    yield from _package()
    for name, source in extra.items():
        yield name, ast.parse(source, name)


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_constant(name: str) -> bool:
    return name == "__all__" or (name.strip("_").isupper() and any(c.isalpha() for c in name))


def _project_classes(modules: list[tuple[str, ast.Module]]) -> dict[str, dict[str, bool]]:
    """Each module's classes by name: True when the class is immutable (the
    key ``""`` holds every class of the package, immutable only when every
    class of that name is)."""
    found: dict[str, dict[str, bool]] = {"": {}}
    for path, tree in modules:
        own = found.setdefault(path, {})
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            frozen = any(
                isinstance(d, ast.Call)
                and _name(d.func) == "dataclass"
                and any(
                    k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value
                    for k in d.keywords
                )
                for d in node.decorator_list
            )
            immutable = frozen or any(_name(b) in IMMUTABLE_BASES for b in node.bases)
            own[node.name] = immutable
            found[""][node.name] = found[""].get(node.name, True) and immutable
    return found


def _mutated_names(modules: list[tuple[str, ast.Module]]) -> set[str]:
    """Every name the package changes in place or rebinds through ``global``."""
    names: set[str] = set()
    for _, tree in modules:
        for node in ast.walk(tree):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign | ast.Delete):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and (name := _name(target.value)):
                    names.add(name)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in MUTATORS
                and (name := _name(node.func.value))
            ):
                names.add(name)
            if isinstance(node, ast.Global):
                names.update(node.names)
    return names


def _assigned(node: ast.stmt) -> tuple[list[str], ast.expr | None]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)], node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id], node.value
    return [], None


def _mutable_value(value: ast.expr, classes: dict[str, bool]) -> str | None:
    if isinstance(value, MUTABLE_NODES):
        return type(value).__name__.lower()
    if isinstance(value, ast.Call) and (called := _name(value.func)):
        if called in MUTABLE_CALLS:
            return f"{called}()"
        if classes.get(called) is False:
            return f"a {called} instance"
    if (  # an alternate constructor: Registry.builtin()
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Name)
        and classes.get(value.func.value.id) is False
    ):
        return f"a {value.func.value.id} instance"
    return None


def _reads_environment(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    text = ast.unparse(fn)
    return any(marker in text for marker in ENVIRONMENT_READS)


def _cached(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in fn.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _name(target) in {"lru_cache", "cache"}:
            return True
    return False


def findings(extra: dict[str, str] | None = None) -> dict[str, str]:
    """``"path: name"`` → what is wrong, for every finding of the scan over
    the package and the ``extra`` modules (name → source)."""
    modules = list(_modules(extra or {}))
    classes = _project_classes(modules)
    mutated = _mutated_names(modules)
    found: dict[str, str] = {}
    for path, tree in modules:
        for node in tree.body:
            names, value = _assigned(node)
            known = {**classes[""], **classes[path]}  # a class of the module itself wins
            kind = None if value is None else _mutable_value(value, known)
            for name in names if kind else []:
                if kind.startswith("a ") or not _is_constant(name) or name in mutated:
                    found[f"{path}: {name}"] = f"module-level {kind} (line {node.lineno})"
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                for name in node.names:
                    found[f"{path}: global {name}"] = f"global statement (line {node.lineno})"
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _cached(node):
                arguments = node.args
                bare = not (arguments.args or arguments.kwonlyargs or arguments.vararg)
                if bare or _reads_environment(node):
                    found[f"{path}: cache {node.name}"] = (
                        f"process-wide cached {'singleton' if bare else 'settings read'}"
                        f" (line {node.lineno})"
                    )
    return found


def test_no_module_level_mutable_state_outside_the_allowlist() -> None:
    unexpected = {k: v for k, v in findings().items() if k not in ALLOWED}
    assert not unexpected, (
        "module-level mutable state (put it on the Runtime, or make a constant "
        f"table immutable): {unexpected}"
    )


def test_every_allowlist_entry_still_matches() -> None:
    stale = set(ALLOWED) - set(findings())
    assert not stale, f"remove these entries from ALLOWED (they are gone): {sorted(stale)}"


SNIPPETS = {
    "registry": "_handlers: dict[str, object] = {}\n",
    "constant that is changed": "TABLE = {}\n\ndef put(k, v):\n    TABLE[k] = v\n",
    "weak map": "from weakref import WeakKeyDictionary\n_by_loop = WeakKeyDictionary()\n",
    "global": "_x = None\n\ndef set_x(v):\n    global _x\n    _x = v\n",
    "cached singleton": "from functools import lru_cache\n\n@lru_cache\ndef box():\n    return 1\n",
    "cached settings": (
        "from functools import cache\n\n@cache\ndef get(name):\n    return get_settings()\n"
    ),
    "registry object": "class Registry:\n    pass\n\nREGISTRY = Registry()\n",
}


@pytest.mark.parametrize("source", SNIPPETS.values(), ids=SNIPPETS.keys())
def test_the_scan_refuses_a_new_mutable_global(source: str) -> None:
    """Each kind of process state, added as one more module of the package,
    is found."""
    new = {k for k in findings({"extra_state.py": source}) if k.startswith("extra_state.py")}
    assert new, f"not found: {source!r}"


def test_immutable_tables_and_unchanged_constants_pass() -> None:
    source = (
        "from types import MappingProxyType\n"
        "LIMITS = MappingProxyType({'a': 1})\n"
        "NAMES = ('a', 'b')\n"
        "KINDS = frozenset({'x'})\n"
        "UNITS = {'m': 1}\n"  # a constant no statement changes
        "__all__ = ['LIMITS']\n"
    )
    assert {k for k in findings({"extra_state.py": source}) if k.startswith("extra_state")} == set()

"""The sandboxed expression language of definitions (SPEC E-1, E-3).

Owns edge conditions (``form.amount > 1000``) and value expressions
(``form.vendor`` in inputMapping / outputMapping / ``assignees.expr``).

Expressions are Python-flavoured and run on simpleeval, never ``eval``. They
are checked twice:

* at compile time, against a whitelist of syntax: comparisons, ``and`` /
  ``or`` / ``not``, ``in``, arithmetic, conditional expressions, list/tuple
  literals (for ``in``), string and number literals, ``True`` / ``False`` /
  ``None`` (also ``true`` / ``false`` / ``null``), the names ``form`` and
  ``system``, attribute and subscript reads, and calls of the whitelisted
  functions ``len``, ``lower``, ``upper`` and ``contains`` only. Names starting
  with ``_`` (dunders) are refused, as are f-strings, lambdas, comprehensions,
  keyword arguments and anything else not listed; constant sub-expressions
  are folded with the run-time guards (:func:`check_shape`), so
  ``9**9**9**9`` and ``"a" * 10**9`` are refused here, at deploy, and every
  part that reads no data is evaluated by the run-time evaluator, so
  ``"a" > 1`` or ``1 / 0`` is refused at deploy too; a trigger's
  ``resultMapping`` is checked as it runs (:func:`compile_mapping`);
* at run time, by the evaluator: attribute and subscript reads only look into
  mappings and sequences (``getattr`` is never called), powers, string and
  list sizes are bounded, and ``%`` is numeric only.

Semantics a user would expect from a form-driven condition:

* a missing field reads as ``None``, and so does any path through it
  (``form.a.b`` with no ``a``);
* an ordering comparison (``<``, ``<=``, ``>``, ``>=``) with ``None`` on either
  side is false, so ``form.amount > 1000`` is false while amount is unset;
* ``x in None`` is false; ``len(None)`` is 0; ``lower(None)`` is ``None``;
* any other run-time failure (``"a" > 1``, division by zero) raises
  :class:`ExpressionError`; the caller decides what a failed condition means.
"""

from __future__ import annotations

import ast
import operator as op
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import simpleeval

from flowledger.errors import FlowledgerError

MAX_EXPRESSION_LENGTH = 2000
MAX_SEQUENCE_LENGTH = 100_000
MAX_POWER_EXPONENT = 1000
MAX_INT_BITS = 4096

_CONSTANT_NAMES: dict[str, Any] = {"true": True, "false": False, "null": None}
_CONTEXT_NAMES = ("form", "system")


class ExpressionError(FlowledgerError):
    """An expression or template that does not compile, or fails to evaluate."""

    code = "expression_invalid"


# ------------------------------------------------------------ run-time helpers


def _too_long(value: Any) -> bool:
    return isinstance(value, str | list | tuple) and len(value) > MAX_SEQUENCE_LENGTH


def _safe_add(a: Any, b: Any) -> Any:
    result = a + b
    if _too_long(result):
        raise ExpressionError("result too long")
    return result


def _safe_mult(a: Any, b: Any) -> Any:
    for seq, times in ((a, b), (b, a)):
        sized = isinstance(seq, str | list | tuple) and isinstance(times, int)
        if sized and len(seq) * times > MAX_SEQUENCE_LENGTH:
            raise ExpressionError("result too long")
    return a * b


def _check_power(a: Any, b: Any) -> None:
    if isinstance(b, int | float) and abs(b) > MAX_POWER_EXPONENT:
        raise ExpressionError(f"exponent {b} too large (max {MAX_POWER_EXPONENT})")
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() * abs(b) > MAX_INT_BITS:
        raise ExpressionError("power result too large")


def _safe_power(a: Any, b: Any) -> Any:
    _check_power(a, b)
    return a**b


def _safe_mod(a: Any, b: Any) -> Any:
    if isinstance(a, str) or isinstance(b, str):
        raise ExpressionError("'%' works on numbers only")
    return a % b


def _ordered(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def compare(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return False
        return fn(a, b)

    return compare


def _contains(container: Any, item: Any) -> bool:
    if container is None:
        return False
    return bool(item in container)


def _len(value: Any) -> int:
    return 0 if value is None else len(value)


def _lower(value: Any) -> Any:
    return None if value is None else str(value).lower()


def _upper(value: Any) -> Any:
    return None if value is None else str(value).upper()


_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: _safe_add,
    ast.Sub: op.sub,
    ast.Mult: _safe_mult,
    ast.Div: op.truediv,
    ast.FloorDiv: op.floordiv,
    ast.Mod: _safe_mod,
    ast.Pow: _safe_power,
    ast.Eq: op.eq,
    ast.NotEq: op.ne,
    ast.Lt: _ordered(op.lt),
    ast.LtE: _ordered(op.le),
    ast.Gt: _ordered(op.gt),
    ast.GtE: _ordered(op.ge),
    ast.In: lambda a, b: _contains(b, a),
    ast.NotIn: lambda a, b: not _contains(b, a),
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
    ast.Not: op.not_,
    ast.USub: op.neg,
    ast.UAdd: op.pos,
}

# function name -> (implementation, number of arguments)
FUNCTIONS: dict[str, tuple[Callable[..., Any], int]] = {
    "len": (_len, 1),
    "lower": (_lower, 1),
    "upper": (_upper, 1),
    "contains": (_contains, 2),
}

# ------------------------------------------------------------ compile time

_ALLOWED_NODES: tuple[type, ...] = (
    ast.Expression,
    ast.BoolOp,
    ast.UnaryOp,
    ast.BinOp,
    ast.Compare,
    ast.IfExp,
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Constant,
    ast.Call,
    ast.List,
    ast.Tuple,
    ast.Load,
    *_OPERATORS,
    ast.And,
    ast.Or,
)


def _check_tree(tree: ast.Expression, text: str) -> None:
    callees = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise ExpressionError(f"{type(node).__name__} is not allowed in {text!r}")
        if isinstance(node, ast.Name) and id(node) not in callees:
            if node.id not in _CONTEXT_NAMES and node.id not in _CONSTANT_NAMES:
                raise ExpressionError(
                    f"unknown name {node.id!r} in {text!r} (use form.<field> or system.<name>)"
                )
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, str | int | float | bool | type(None)):
                raise ExpressionError(f"literal {node.value!r} is not allowed in {text!r}")
        elif isinstance(node, ast.Call):
            _check_call(node, text)
    check_shape(tree, text)
    _check_constants(tree.body, text)


def _is_constant(node: ast.expr) -> bool:
    """Whether ``node`` reads no data (``form``, ``system``): its value, or its
    failure, is the same on every run."""
    if isinstance(node, ast.Name):
        return node.id in _CONSTANT_NAMES
    if isinstance(node, ast.Call):
        return all(_is_constant(arg) for arg in node.args)
    return all(
        _is_constant(child) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)
    )


def _check_constants(node: ast.expr, text: str) -> None:
    """Evaluate every largest part of ``text`` that reads no data with the
    run-time evaluator (its guards included, after :func:`check_shape` has
    bounded the sizes): a part that fails there fails on every run
    (``"a" > 1``, ``1 / 0``, ``len(5)``, ``"a" % 2``, ``[1][0].x``), so it is
    refused at deploy (issue 31 item 6) — also in a branch the data might
    never take."""
    if not _is_constant(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                _check_constants(child, text)
        return
    if isinstance(node, ast.Constant | ast.Name):
        return
    try:
        _Evaluator(dict(_CONSTANT_NAMES)).eval(text, previously_parsed=node)
    except ExpressionError as exc:
        raise ExpressionError(
            f"{ast.unparse(node)!r} always fails in {text!r}: {exc.message}"
        ) from None
    except (
        simpleeval.InvalidExpression,
        ArithmeticError,
        TypeError,
        ValueError,
        LookupError,
        AttributeError,
        RecursionError,
    ) as exc:
        raise ExpressionError(f"{ast.unparse(node)!r} always fails in {text!r}: {exc}") from None


# the size guards of the evaluator, applied to constant sub-expressions at
# compile time (issue 17 item 5): one implementation for both times
_SIZE_GUARDED: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: _safe_add,
    ast.Mult: _safe_mult,
    ast.Pow: _safe_power,
}
_UNKNOWN = object()


def check_shape(tree: ast.AST, text: str) -> None:
    """Refuse the shapes the run-time guard would refuse whatever the data:
    attributes starting with ``_`` (dunders), and constant sub-expressions
    whose power, repetition or concatenation exceeds the evaluator's bounds
    (``9**9**9**9``, ``"a" * 10**9``, ``form.x ** 10**9``). Constants are
    folded with the evaluator's own guarded operators, so folding is bounded
    too. Raise :class:`ExpressionError`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ExpressionError(f"access to {node.attr!r} is not allowed in {text!r}")
    try:
        _fold(tree)
    except ExpressionError as exc:
        raise ExpressionError(f"{exc.message} in {text!r}") from None
    except RecursionError:
        raise ExpressionError(f"{text!r} is nested too deeply") from None


class _ResponseName(ast.NodeTransformer):
    """``response.x`` → ``system.response.x`` (the sandbox knows ``form`` and
    ``system`` only; the rewritten text is checked by it like any other)."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id != "response":
            return node
        system = ast.Name(id="system", ctx=ast.Load())
        return ast.copy_location(ast.Attribute(value=system, attr="response", ctx=node.ctx), node)


def mapping_text(text: str) -> str:
    """A ``resultMapping`` expression (over ``response`` and ``form``) as the
    sandbox runs it: ``response`` read as ``system.response``."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise ExpressionError(f"resultMapping {text!r} does not parse: {exc}") from None
    return ast.unparse(_ResponseName().visit(tree))


def compile_mapping(text: str) -> CompiledCondition:
    """Check a ``resultMapping`` expression exactly as the evaluator will run
    it (issue 31 item 6: what the run time would refuse is refused at deploy)."""
    rewritten = mapping_text(text)
    try:
        return compile_condition(rewritten)
    except ExpressionError as exc:
        message = exc.message.replace(repr(rewritten), repr(text))
        raise ExpressionError(f"resultMapping {text!r}: {message}") from None


def _fold(node: ast.AST) -> Any:
    """The constant value of ``node``, or ``_UNKNOWN`` when it depends on data
    (or fails in a way the run time reports, such as ``1 / 0``)."""
    if isinstance(node, ast.Expression):
        return _fold(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        items = [_fold(item) for item in node.elts]
        if any(item is _UNKNOWN for item in items):
            return _UNKNOWN
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _fold(node.operand)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
        return _UNKNOWN
    if isinstance(node, ast.BinOp):
        left, right = _fold(node.left), _fold(node.right)
        guarded = _SIZE_GUARDED.get(type(node.op))
        if isinstance(node.op, ast.Pow) and right is not _UNKNOWN:
            _check_power(None if left is _UNKNOWN else left, right)
        if guarded is None or left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        try:
            return guarded(left, right)
        except (ArithmeticError, TypeError, ValueError):
            return _UNKNOWN
    for child in ast.iter_child_nodes(node):
        _fold(child)
    return _UNKNOWN


def _check_call(node: ast.Call, text: str) -> None:
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if name is None or name not in FUNCTIONS:
        allowed = ", ".join(sorted(FUNCTIONS))
        shown = name or ast.unparse(node.func)
        raise ExpressionError(f"call of {shown!r} is not allowed in {text!r} (allowed: {allowed})")
    if node.keywords:
        raise ExpressionError(f"keyword arguments are not allowed in {text!r}")
    arity = FUNCTIONS[name][1]
    if len(node.args) != arity:
        raise ExpressionError(f"{name}() takes {arity} argument(s) in {text!r}")


class _Evaluator(simpleeval.EvalWithCompoundTypes):  # type: ignore[misc,unused-ignore]
    """simpleeval with mapping-only attribute reads and null-safe paths."""

    def __init__(self, names: dict[str, Any]) -> None:
        super().__init__(
            operators=_OPERATORS,
            functions={name: fn for name, (fn, _) in FUNCTIONS.items()},
            names=names,
        )
        for kind in (ast.Dict, ast.Set, ast.ListComp, ast.GeneratorExp, ast.DictComp):
            self.nodes.pop(kind, None)

    def _eval_attribute(self, node: ast.Attribute) -> Any:
        return _read(self._eval(node.value), node.attr)

    def _eval_subscript(self, node: ast.Subscript) -> Any:
        return _read(self._eval(node.value), self._eval(node.slice))


def _read(container: Any, key: Any) -> Any:
    if container is None:
        return None
    if isinstance(container, Mapping):
        return container.get(key)
    if isinstance(container, Sequence) and isinstance(key, int) and not isinstance(key, bool):
        try:
            return container[key]
        except IndexError:
            return None
    raise ExpressionError(f"cannot read {key!r} of a {type(container).__name__}")


class CompiledCondition:
    """A checked expression, ready to evaluate any number of times (thread-safe)."""

    __slots__ = ("_tree", "text")

    def __init__(self, text: str, tree: ast.Expression) -> None:
        self.text = text
        self._tree = tree

    def __repr__(self) -> str:
        return f"CompiledCondition({self.text!r})"

    def value(self, form: Mapping[str, Any], system: Mapping[str, Any] | None = None) -> Any:
        """The raw value of the expression."""
        names: dict[str, Any] = {"form": form, "system": system or {}, **_CONSTANT_NAMES}
        try:
            return _Evaluator(names).eval(self.text, previously_parsed=self._tree.body)
        except ExpressionError as exc:
            raise ExpressionError(f"cannot evaluate {self.text!r}: {exc.message}") from exc
        except (simpleeval.InvalidExpression, ArithmeticError, TypeError, ValueError) as exc:
            raise ExpressionError(f"cannot evaluate {self.text!r}: {exc}") from exc
        except (LookupError, AttributeError, RecursionError) as exc:
            raise ExpressionError(f"cannot evaluate {self.text!r}: {exc!r}") from exc

    def evaluate(self, form: Mapping[str, Any], system: Mapping[str, Any] | None = None) -> bool:
        """The truth of the expression (a condition)."""
        return bool(self.value(form, system))


@lru_cache(maxsize=2048)
def compile_condition(text: str) -> CompiledCondition:
    """Parse and check ``text``; raise :class:`ExpressionError` if it is not a
    valid expression of the language. Results are cached by text."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("expression is empty")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"syntax error in {text!r}: {exc.msg}") from exc
    except ValueError as exc:  # e.g. null bytes
        raise ExpressionError(f"cannot parse {text!r}: {exc}") from exc
    _check_tree(tree, text)
    return CompiledCondition(text, tree)


def evaluate_value(
    text: str, form: Mapping[str, Any], system: Mapping[str, Any] | None = None
) -> Any:
    """Evaluate a value expression (inputMapping, outputMapping, assignees.expr)."""
    return compile_condition(text).value(form, system)

"""Tests that prove, not pin (issue 48, point 6): every test asserts something about what it
exercises, and the sentence checks of tests/wording_checks.py read numbers as they are printed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.wording_checks import assert_says, numbers_in, says_numbers

TESTS = Path(__file__).resolve().parent

# Calls that assert: pytest's, and helpers named for it (np.testing.assert_*, pd.testing.assert_*,
# mock.assert_called_*, playwright's expect(...), the project's check_* helpers).
PYTEST_ASSERTS = {"raises", "warns", "approx", "fail", "deprecated_call"}
PREFIXES = ("assert_", "assert", "check_", "expect")


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _asserts_directly(node: ast.AST, helpers: set[str]) -> bool:
    """Whether ``node`` holds an assert statement, a pytest asserter, a call of an asserting
    helper (by its name's prefix) or of a function in ``helpers`` (known to assert)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert):
            return True
        if isinstance(sub, ast.Call):
            name = _name(sub.func)
            if name.startswith(PREFIXES) or name in helpers:
                return True
            if name in PYTEST_ASSERTS and isinstance(sub.func, ast.Attribute) and _name(sub.func.value) == "pytest":
                return True
    return False


def _functions(tree: ast.AST):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _is_fixture(func) -> bool:
    return any("fixture" in ast.unparse(d) for d in func.decorator_list)


def asserting_helpers(tree: ast.AST, imported: set[str] = frozenset()) -> set[str]:
    """The names of the non-test functions of ``tree`` (fixtures aside: a test does not call them)
    that assert, directly or through another such function or one of ``imported``, to a fixed
    point: a test that calls one asserts through it."""
    defs = [f for f in _functions(tree) if not f.name.startswith("test_") and not _is_fixture(f)]
    found: set[str] = set()
    while True:
        more = {f.name for f in defs if f.name not in found and _asserts_directly(f, found | set(imported))}
        if not more:
            return found
        found |= more


class Suite:
    """The test suite's modules by name (tests/, tests/app/, tests/browser/ are each on the path of
    their tests), and the asserting helpers each module defines or imports from another."""

    def __init__(self, root: Path = TESTS):
        self.paths = {p.stem: p for p in sorted(root.rglob("*.py"))}
        self.trees = {name: ast.parse(p.read_text(encoding="utf-8")) for name, p in self.paths.items()}
        self._helpers: dict[str, set[str]] = {}

    def imported_helpers(self, tree: ast.AST, seen=()) -> set[str]:
        """The names ``tree`` imports from a module of the suite that are asserting helpers there."""
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                stem = node.module.rsplit(".", 1)[-1]
                if stem in self.trees and stem not in seen:
                    there = self.helpers(stem, seen)
                    names |= {a.asname or a.name for a in node.names if a.name in there}
        return names

    def helpers(self, stem: str, seen=()) -> set[str]:
        if stem not in self._helpers:
            tree = self.trees[stem]
            imported = self.imported_helpers(tree, (*seen, stem))
            self._helpers[stem] = imported | asserting_helpers(tree, imported)
        return self._helpers[stem]


def bare_tests(source: str, helpers: set[str] = frozenset(), where: str = "<source>",
               suite: Suite | None = None) -> list[str]:
    """``where:name`` of every ``test_*`` function of ``source`` that asserts nothing (``helpers``:
    names known to assert; ``suite``: the modules its imports may name)."""
    tree = ast.parse(source)
    imported = set(helpers) | (suite.imported_helpers(tree) if suite else set())
    known = imported | asserting_helpers(tree, imported)
    return [f"{where}:{f.name}" for f in _functions(tree)
            if f.name.startswith("test_") and not _asserts_directly(f, known)]


def test_every_test_asserts_something():
    suite = Suite()
    files = sorted(TESTS.rglob("test_*.py"))
    assert len(files) > 100  # the scan sees the whole suite
    bare = [name for path in files
            for name in bare_tests(path.read_text(encoding="utf-8"), where=str(path.relative_to(TESTS.parent)),
                                   suite=suite)]
    assert not bare, "tests that assert nothing about what they exercise:\n" + "\n".join(bare)


SYNTHETIC = '''
import numpy as np
import pytest

def helper(x):
    assert x

def wraps(x):
    helper(x)

def test_bare():
    compute(1)

def test_plain_assert():
    assert compute(1) == 1

def test_raises():
    with pytest.raises(ValueError):
        compute(-1)

def test_numpy():
    np.testing.assert_allclose(compute(1), 1)

def test_through_a_helper():
    wraps(compute(1))

def test_approx_only_in_a_comparison_is_an_assert():
    x = compute(1) == pytest.approx(1)

class TestGroup:
    def test_method_bare(self):
        compute(2)
'''


def test_the_scan_flags_a_test_that_asserts_nothing():
    flagged = bare_tests(SYNTHETIC, where="synthetic.py")
    assert flagged == ["synthetic.py:test_bare", "synthetic.py:test_method_bare"]
    # a helper known from another module counts; one that merely calls nothing asserting does not
    assert bare_tests("def test_a():\n    fresh()\n", {"fresh"}) == []
    assert bare_tests("def test_a():\n    fresh()\n", set()) == ["<source>:test_a"]


def test_the_scan_sees_a_helper_imported_from_another_test_module(tmp_path):
    (tmp_path / "shared.py").write_text("def compare(a, b):\n    assert a == b\n\n"
                                        "def quiet(a):\n    return a\n\n"
                                        "def through(a):\n    compare(a, 1)\n")
    suite = Suite(tmp_path)
    source = ("from shared import compare, quiet, through as via\n"
              "def test_compares():\n    compare(f(1), 1)\n"
              "def test_through_an_alias():\n    via(f(1))\n"
              "def test_quiet():\n    quiet(f(1))\n")
    assert bare_tests(source, suite=suite) == ["<source>:test_quiet"]


def test_numbers_are_read_as_printed():
    assert numbers_in("In short: 221 of the 450 runs (49%) succeeded") == [221, 450, 49]
    assert numbers_in("more than the 1,000 rows, Δ −0.052 (SE 0.01), 1e-6, part-0, v2.") == \
        [1000, -0.052, 0.01, 1e-6]
    # a printed number stands for its value rounded to the digits printed, no further
    assert says_numbers("TPS -0.523 nats", [-0.5234]) and not says_numbers("TPS -0.523 nats", [-0.5236])
    assert says_numbers("49% of 450", [450, 49.2]) and not says_numbers("49% of 450", [450, 450])


def test_assert_says_looks_in_the_sentence_of_its_label():
    text = "verbal is optimistic: says 94.1%, succeeds 50%. Truthful is trustworthy: says 51%\nnoisy: 3"
    assert assert_says(text, "optimistic", 94.12, 50).startswith("verbal")
    with pytest.raises(AssertionError, match="prints"):
        assert_says(text, "optimistic", 51)  # printed, but in another sentence
    with pytest.raises(AssertionError, match="prints"):
        assert_says(text, "noisy", 94.1)  # printed, but on another line
    with pytest.raises(AssertionError, match="no sentence says"):
        assert_says(text, "pessimistic")

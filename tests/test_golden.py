"""Golden files (issue 48, "Done when": ``score`` on each log prints the same numbers as before the
restructuring): every case of ``tests/golden/`` is rerun in-process through
:func:`tpsviz.cli.main.main`, and every number the golden holds must come back at the same JSON path,
within ``RTOL``/``ATOL``. Strings are not compared (wording may change); the set of predictors and
the exit code are. The binary in-memory cases are also rerun through :func:`tpsviz.evaluate`.

A regression pin, not a correctness test: the numbers were checked against independent
computations elsewhere (test_tps.py, test_engines.py, ...); here they must only not move.
Regenerate with ``tests/golden/make_golden.py --force`` only for a deliberate change of numbers
(tests/golden/README.md).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import os
from pathlib import Path

import pytest

import tpsviz
from tpsviz.cli.main import main

GOLDEN = Path(__file__).resolve().parent / "golden"
ROOT = GOLDEN.parents[1]
RTOL, ATOL = 1e-9, 1e-12

_spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
make_golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_golden)

#: JSON paths whose numbers legitimately vary between two runs of the same argv, with the reason
#: (a path is a tuple of keys; ``"*"`` matches any key or list index). Found by rerunning every case
#: (a subprocess against make_golden.py's subprocess, and six times in-process for DuckDB): no
#: number is a timing, and paths are strings (not compared). Only ``score_dataset_duckdb`` varies:
#: DuckDB's multi-threaded sums change the last bits of ``tece_pooled`` and reliability's
#: ``mean_forecast`` (relative change <= 1.6e-15), well inside RTOL, so nothing is skipped.
SKIPPED: dict[tuple, str] = {}

#: ``score``'s flags -> :func:`tpsviz.evaluate`'s keywords (with the type of the value), for the
#: cases rerun through ``evaluate``. A flag not listed here keeps a case off that comparison.
EVALUATE_KEYWORDS = {
    "--n-boot": ("n_boot", int), "--seed": ("seed", int), "--alpha": ("alpha", float),
    "--beta": ("beta", float), "--schedule": ("schedule", str), "--censoring": ("censoring", str),
    "--rollouts": ("rollouts", str), "--recalibrate": ("recalibrate", str),
    "--cluster-by": ("cluster_by", str), "--interval": ("interval", str),
    "--treat": ("treat", lambda v: (v,)),
}
#: the binary cases scored in memory, rerun as ``tpsviz.evaluate(path, **keywords).to_json()``
EVALUATE_CASES = [
    "score_webshop_default", "score_webshop_brier_back", "score_tau2_default", "score_drift_default",
    "score_webshop_rollouts_exact", "score_taubench_references", "score_raw_only_platt_simple",
    "score_dataset_memory", "score_inspect_unscored_failure", "score_webshop_cluster_run",
    "score_webshop_percentile",
]


def _goldens() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(GOLDEN.glob("*.json"))}


GOLDENS = _goldens()


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _skipped(path: tuple) -> bool:
    return any(len(s) == len(path) and all(a == "*" or a == b for a, b in zip(s, path)) for s in SKIPPED)


def _leaves(obj, path=()):
    """(path, value) of every number, boolean and null of a parsed JSON object (strings left out)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, path + (i,))
    elif not isinstance(obj, str):
        yield path, obj


_MISSING = object()


def _at(obj, path):
    for key in path:
        if isinstance(obj, dict) and key in obj:
            obj = obj[key]
        elif isinstance(obj, list) and isinstance(key, int) and key < len(obj):
            obj = obj[key]
        else:
            return _MISSING
    return obj


def _same(old, new) -> bool:
    if old is None or new is None or isinstance(old, bool) or isinstance(new, bool):
        return old is new or (isinstance(old, bool) and isinstance(new, bool) and old == new)
    if not (_number(old) and _number(new)):
        return False
    if math.isnan(old) or math.isnan(new):
        return math.isnan(old) and math.isnan(new)
    if math.isinf(old) or math.isinf(new):
        return old == new
    return math.isclose(old, new, rel_tol=RTOL, abs_tol=ATOL)


def differences(golden, now) -> list[str]:
    """One line per number (or boolean, or null) of ``golden`` that ``now`` lacks or changed:
    the JSON path and both values."""
    out = []
    for path, old in _leaves(golden):
        if _skipped(path):
            continue
        new = _at(now, path)
        where = "/".join(map(str, path))
        if new is _MISSING:
            out.append(f"{where}: golden {old!r}, now missing")
        elif not _same(old, new):
            out.append(f"{where}: golden {old!r}, now {new!r}")
    return out


def run_in_process(argv: list[str]) -> tuple[int, dict | None, str]:
    """``python -m tpsviz argv`` in this process: (exit code, the JSON printed, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    text = out.getvalue()
    return code, (json.loads(text) if text.strip() else None), err.getvalue()


@pytest.fixture
def golden_env(monkeypatch):
    """Run as make_golden.py ran: from the repository's root, without ``TPSVIZ_*`` variables."""
    for key in [k for k in os.environ if k.startswith("TPSVIZ_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(ROOT)


def _assert_same(case: str, how: str, golden: dict, now: dict) -> None:
    bad = differences(golden, now)
    assert not bad, (f"golden case {case} ({how}): {len(bad)} number(s) moved (rtol={RTOL}, atol={ATOL}):\n  "
                     + "\n  ".join(bad[:25]) + ("\n  ..." if len(bad) > 25 else ""))


def test_every_case_has_a_golden_file():
    assert sorted(GOLDENS) == sorted(name for name, _ in make_golden.CASES)
    for name, argv in make_golden.CASES:
        assert GOLDENS[name]["argv"] == argv, f"golden case {name}: argv differs from make_golden.CASES"


@pytest.mark.parametrize("case", sorted(GOLDENS))
def test_cli_prints_the_golden_numbers(case, golden_env):
    g = GOLDENS[case]
    code, now, err = run_in_process(g["argv"])
    assert code == g["exit_code"], f"golden case {case}: exit code {code}, golden {g['exit_code']} ({err.strip()})"
    assert now is not None, f"golden case {case}: no JSON printed ({err.strip()})"
    old_preds, new_preds = g["output"].get("predictors"), now.get("predictors")
    assert set(old_preds or ()) == set(new_preds or ()), (
        f"golden case {case}: predictors {sorted(new_preds or ())}, golden {sorted(old_preds or ())}")
    _assert_same(case, "python -m tpsviz " + " ".join(g["argv"]), g["output"], now)


def evaluate_call(argv: list[str]) -> tuple[str, dict]:
    """(path, keywords of :func:`tpsviz.evaluate`) of a ``score`` argv, by :data:`EVALUATE_KEYWORDS`."""
    assert argv[0] == "score"
    path, rest, kwargs = argv[1], argv[2:], {}
    while rest:
        flag = rest.pop(0)
        if flag == "--json":
            continue
        if flag == "--engine" and rest[0] == "memory":
            rest.pop(0)
            continue
        assert flag in EVALUATE_KEYWORDS, f"{flag}: no evaluate keyword mapped in EVALUATE_KEYWORDS"
        name, kind = EVALUATE_KEYWORDS[flag]
        kwargs[name] = kind(rest.pop(0))
    return path, kwargs


@pytest.mark.parametrize("case", EVALUATE_CASES)
def test_evaluate_returns_the_golden_numbers(case, golden_env):
    g = GOLDENS[case]
    path, kwargs = evaluate_call(g["argv"])
    now = json.loads(json.dumps(tpsviz.evaluate(path, **kwargs).to_json()))
    assert set(now["predictors"]) == set(g["output"]["predictors"]), f"golden case {case}: predictors differ"
    _assert_same(case, f"tpsviz.evaluate({path!r}, **{kwargs})", g["output"], now)


def test_the_comparison_can_fail():
    """A moved number, a missing one and a NaN against a number are each named with their path."""
    golden = {"predictors": {"a": {"tps_mean": -1.0, "ci": [0.1, float("nan")], "ok": True, "why": "x"}}}
    assert differences(golden, json.loads(json.dumps(golden))) == []
    moved = {"predictors": {"a": {"tps_mean": -1.0 * (1 + 1e-8), "ci": [0.1, 0.2], "ok": False, "why": "y"}}}
    assert differences(golden, moved) == ["predictors/a/tps_mean: golden -1.0, now -1.00000001",
                                          "predictors/a/ci/1: golden nan, now 0.2",
                                          "predictors/a/ok: golden True, now False"]
    assert differences(golden, {"predictors": {"a": {}}})[0] == "predictors/a/tps_mean: golden -1.0, now missing"

"""The parts of an Evaluation are keyed by exactly the settings they depend on (issue 48, point 4).

Two proofs, setting by setting:
- a part not keyed on a setting is the same, computed afresh, whichever value the setting takes
  (so the memo never hands back a stale part);
- with a memo, moving one setting recomputes exactly the parts keyed on it (so a nudge of α refits
  nothing it does not need), and after a sequence of nudges the memoised Evaluation is a fresh
  ``tpsviz.evaluate``'s, number for number.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.core.tps import ScoreSettings, TPSResult
from tpsviz.diagnostics.caveats import Caveats
from tpsviz.evaluation.parts import DEPENDS, PartsMemo, evaluation_parts, part_key
from tpsviz.forecasts.references import add_references

DEMO = Path(__file__).resolve().parents[1] / "demo_data"
BASE = ScoreSettings(n_boot=200)


@pytest.fixture(scope="module")
def log():
    """150 runs of the webshop-like demo (some censored), two of its predictors and a reference."""
    data = tpsviz.load(DEMO / "webshop-like.csv")
    data = data.subset(np.arange(data.n_trajectories) < 150)
    assert data.n_censored > 5 and data.n_trajectories == 150
    data = add_references(data, BASE)
    names = [p for p in data.predictors if not p.startswith("ref:")][:2] + ["ref:step"]
    return replace(data, predictors=names)


#: each setting, moved from BASE to another value (the censoring mode to exact, with a q_Z for every run)
MOVES = {
    "alpha": dict(alpha=1.0), "beta": dict(beta=0.5), "schedule": dict(schedule=tpsviz.parse_schedule("linear")),
    "censoring": dict(censoring="complete"), "eps": dict(eps=0.01), "n_boot": dict(n_boot=300),
    "level": dict(level=0.9), "seed": dict(seed=7), "cluster_by": dict(cluster_by="run"),
    "interval": dict(interval="percentile"),
}


def same(a, b) -> bool:
    """Whether two parts hold the same numbers and words (NaN equal to NaN)."""
    if isinstance(a, TPSResult):
        return same(a.summary, b.summary) and same(a.per_trajectory, b.per_trajectory)
    if isinstance(a, pd.DataFrame):
        try:
            pd.testing.assert_frame_equal(a, b, check_exact=True)
        except AssertionError:
            return False
        return True
    if isinstance(a, Caveats):
        return a.log == b.log and a.predictors == b.predictors
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "to_dict"):
        return same(a.to_dict(), b.to_dict()) and a.text == b.text
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (np.isnan(a) and np.isnan(b))
    return type(a) is type(b) and a == b


def test_every_part_is_keyed_on_a_setting_of_the_score():
    assert set(DEPENDS["metrics"]) == {"eps", "cluster_by"} and set(DEPENDS["excess_movement"]) == {"cluster_by"}
    assert "alpha" not in DEPENDS["statistics"] and "n_boot" not in DEPENDS["statistics"]
    fields = {f for f in ScoreSettings.__dataclass_fields__} | {"q_z"}
    assert set().union(*map(set, DEPENDS.values())) == fields  # every setting counts somewhere


@pytest.mark.parametrize("name", list(MOVES))
def test_a_part_not_keyed_on_a_setting_does_not_change_with_it(log, name):
    before = evaluation_parts(log, BASE)
    after = evaluation_parts(log, replace(BASE, **MOVES[name]))
    part_of = {"tps": "result"}
    for part in DEPENDS:
        if part in ("tps_points", "statistics") or name in DEPENDS[part]:
            continue
        key = part_of.get(part, part)
        assert same(before[key], after[key]), f"{part} changed with {name} but is not keyed on it"
    assert not same(before["result"], after["result"]) or name in ("n_boot", "level", "seed", "interval") and \
        not same(before["result"].summary["tps_ci_low"], after["result"].summary["tps_ci_low"])


def test_the_verdict_tests_and_q_z_count_only_where_they_are_keyed(log):
    """The verdicts' tests (not a part of the returned dict) and q_Z: exact mode with two constants
    changes the parts keyed on q_Z; in simple mode q_Z changes nothing."""
    from tpsviz.diagnostics.verdict import statistics_for

    q1, q2 = np.full(log.n_trajectories, 0.3), np.full(log.n_trajectories, 0.6)
    exact = replace(BASE, censoring="exact")
    assert part_key("tps", BASE, q1) == part_key("tps", BASE, q2)  # simple mode: q_Z is not in the key
    assert part_key("tps", exact, q1) != part_key("tps", exact, q2)
    s = evaluation_parts(log, BASE, q1), evaluation_parts(log, BASE, q2)
    assert all(same(s[0][k], s[1][k]) for k in s[0])
    e = evaluation_parts(log, exact, q1), evaluation_parts(log, exact, q2)
    assert not same(e[0]["result"], e[1]["result"])
    # the tests use the labels only: α, β, the schedule, ε and the bootstrap leave them as they are
    stats = statistics_for(log, replace(BASE, n_boot=0), list(log.predictors))
    moved = replace(BASE, alpha=1.0, beta=0.5, schedule=tpsviz.parse_schedule("linear"), eps=0.01, n_boot=0,
                    cluster_by="run", interval="percentile")
    assert same(stats, statistics_for(log, moved, list(log.predictors)))
    assert not same(stats, statistics_for(log, replace(BASE, censoring="complete", n_boot=0), list(log.predictors)))


@pytest.mark.parametrize("name", list(MOVES))
def test_moving_a_setting_recomputes_exactly_the_parts_keyed_on_it(log, name):
    memo = PartsMemo()
    evaluation_parts(log, BASE, cache=memo)
    assert list(dict.fromkeys(memo.computed)) == list(DEPENDS)  # the first call computes every part
    memo.computed.clear()
    evaluation_parts(log, replace(BASE, **MOVES[name]), cache=memo)
    assert list(dict.fromkeys(memo.computed)) == [p for p in DEPENDS if name in DEPENDS[p]]
    memo.computed.clear()
    evaluation_parts(log, BASE, cache=memo)  # back: every part is in the memo
    assert memo.computed == []


def test_an_alpha_nudge_refits_nothing():
    """An α nudge rescores TPS, skill and what follows from them, never the metrics, the verdicts'
    tests or the excess movement; a recalibrated log is fitted before the memo and not again."""
    memo = PartsMemo()
    tpsviz.evaluate(DEMO / "webshop-like.csv", n_boot=200, cache=memo).complete()
    memo.computed.clear()
    tpsviz.evaluate(DEMO / "webshop-like.csv", n_boot=200, alpha=0.05, cache=memo).complete()
    assert set(memo.computed) == {"tps_points", "tps", "skill", "verdicts", "versus", "warnings"}


def test_a_predictor_added_to_a_selection_combines_with_the_kept_ones(log):
    """Selecting one more predictor after others were scored: the kept predictors' TPS (scored on a
    copy of the log selecting fewer predictors) combine with the new one's (the dashboard's sidebar
    did this; it raised "results combine only on the same log and settings")."""
    memo, names = PartsMemo(), list(log.predictors)
    tpsviz.evaluate(replace(log, predictors=names[:2]), n_boot=200, cache=memo).complete()
    kept = tpsviz.evaluate(replace(log, predictors=names), n_boot=200, cache=memo)
    assert _numbers(kept) == _numbers(tpsviz.evaluate(replace(log, predictors=names), n_boot=200))
    assert memo.computed.count("tps_points") == len(names)  # the third one alone was scored again


def test_a_part_is_computed_when_first_read(log):
    """An Evaluation read only for its TPS (compare, monitor) never runs the verdicts' tests; reading a
    verdict computes what it needs, and the numbers are a complete Evaluation's."""
    memo = PartsMemo()
    ev = tpsviz.evaluate(log, n_boot=200, cache=memo)
    assert ev.parts.computed() == ("points",)  # scored by the call (a setting the log refuses raises there)
    ev.compare(log.predictors[0], metrics=(), n_boot=0)
    assert memo.computed == ["tps_points"] * len(log.predictors)  # no bootstrap of TPS, no verdict
    ev.summary
    assert memo.computed == ["tps_points"] * len(log.predictors) + ["tps"]
    ev.verdicts
    assert {"statistics", "verdicts", "skill", "versus"} <= set(memo.computed)
    assert "excess_movement" not in memo.computed and "warnings" not in memo.computed
    assert _numbers(ev) == _numbers(tpsviz.evaluate(log, n_boot=200).complete())


def _numbers(ev) -> str:
    return json.dumps(ev.to_json(), sort_keys=True, default=str)


def test_the_memoised_evaluation_is_a_fresh_one_after_a_sequence_of_nudges(log):
    memo = PartsMemo()
    steps = [dict(), dict(alpha=0.5), dict(alpha=0.5, beta=0.3), dict(alpha=0.5, beta=0.3, schedule="linear"),
             dict(alpha=0.5, beta=0.3, schedule="linear", censoring="exact", q_z=0.4),
             dict(alpha=0.5, beta=0.3, schedule="linear", censoring="exact", q_z=0.7),
             dict(alpha=0.5, beta=0.3, schedule="linear", censoring="exact", q_z=0.7, eps=0.001),
             dict(alpha=0.5, beta=0.3, schedule="linear", censoring="exact", q_z=0.7, eps=0.001, n_boot=300),
             dict(alpha=0.0, beta=0.3, schedule="linear", censoring="simple", eps=0.001, n_boot=300),
             dict()]
    for kw in steps:
        kw = dict(n_boot=200) | kw
        kept, fresh = tpsviz.evaluate(log, cache=memo, **kw), tpsviz.evaluate(log, **kw)
        assert _numbers(kept) == _numbers(fresh), kw
        pd.testing.assert_frame_equal(kept.leaderboard, fresh.leaderboard, check_exact=True)
    # ε moved once (and back, to what the memo holds): the metrics of each predictor computed twice
    assert memo.computed.count("metrics") == 2 * len(log.predictors)


def test_a_log_read_again_finds_its_parts():
    memo = PartsMemo()
    first = tpsviz.evaluate(DEMO / "webshop-like.csv", n_boot=0, cache=memo).complete()
    n = len(memo.computed)
    again = tpsviz.evaluate(DEMO / "webshop-like.csv", n_boot=0, cache=memo).complete()
    assert len(memo.computed) == n and again.data is not first.data  # read again, nothing computed
    assert _numbers(again) == _numbers(first)
    other = tpsviz.evaluate(DEMO / "tau2-like.csv", n_boot=0, cache=memo).complete()
    assert set(memo.computed[n:]) == set(DEPENDS) and _numbers(other) != _numbers(first)


def test_the_memo_is_bounded_and_computes_a_part_once_across_threads():
    memo = PartsMemo(max_entries=3)
    data = tpsviz.load(DEMO / "tau2-like.csv")
    for i in range(5):
        memo.get("p", data, (i,), lambda i=i: i)
    assert len(memo) == 3 and memo.get("p", data, (4,), lambda: -1) == 4  # the newest kept
    assert memo.get("p", data, (0,), lambda: "again") == "again"  # the oldest went first
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return "value"

    got = []
    threads = [threading.Thread(target=lambda: got.append(memo.get("q", data, (), slow))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == ["value"] * 4 and len(calls) == 1
    with pytest.raises(ValueError):
        PartsMemo(max_entries=0)


def test_a_new_selection_of_predictors_finds_each_ones_parts(log):
    """Parts kept one predictor at a time: deselecting a predictor and selecting it again computes
    none of them, and each selection's Evaluation is a fresh one's."""
    memo = PartsMemo()
    names = list(log.predictors)
    for chosen in (names, names[:1] + names[2:], names[1:], names):
        sub = replace(log, predictors=chosen)
        before = len(memo.computed)
        kept, fresh = tpsviz.evaluate(sub, n_boot=200, cache=memo), tpsviz.evaluate(sub, n_boot=200)
        assert _numbers(kept) == _numbers(fresh), chosen
        if chosen != names:  # every predictor's own parts were kept by the first call
            assert not set(memo.computed[before:]) & {"tps_points", "metrics", "skill", "statistics"}

"""Propriety of every proper setting, proved in expectation (issue 48 point 6; docs/theory.md §2–§4).

A small agent is enumerated exactly, not sampled: a latent task type θ (prior π) fixes, at every
step, the chance g_θ of a signal bit x_t, the chance f_θ that the run ends after this step, and
the chance s_θ that a run that ends succeeds. A run still going after the budget H is cut off
(censored at Z = H). The history H_t = (x_1 … x_t, still running) has the posterior
π_θ · Π_{u<t}(1 − f_θ) · Π_u g_θ^{x_u}(1 − g_θ)^{1 − x_u}, so every target is a finite sum:

    q_t = P(Y = 1 | H_t) = Σ_θ post_θ s_θ                               (exact)
    m_t = P(Δ = 1, Y = 1 | H_t) = Σ_θ post_θ s_θ (1 − (1 − f_θ)^(H−t+1))    (simple)
    u_t = 1 − P(Δ = 1, Y = 0 | H_t)                                       (upper)
    c_t = m_t / P(Δ = 1 | H_t)                                            (complete)

and a censored run's q_Z = P(Y = 1 | H_Z, not ended at Z) (the evaluator's honest estimate).

Every leaf of the tree (an ending with Y = 1, with Y = 0, or a cut-off) becomes one run of a log,
with its probability. ``compute_tps`` scores the log (the thing under test); the expectation is
Σ_leaf P(leaf) · TPS_leaf. The independent side is the closed form of the tower property,

    E[TPS] = Σ_nodes w_t [A1 · S(F_t, 1) + A0 · S(F_t, 0)],

A1, A0 the probability mass of label 1 and 0 below the node under the censoring mode, with
S from scipy's quadrature of the integral representation (never tpsviz's scores), and the
gap to a distorted trace as Σ w_t (A1 + A0) · ∫ |τ_t − c| ω(c) dc between F_t and τ_t
(the Schervish divergence), which is > 0 wherever a forecast moves.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from score_oracle import divergence, s_quad

from tpsviz import ScoreSettings, compute_tps, from_frame, parse_schedule
from tpsviz.core.scores import expected_score
from tpsviz.core.schedules import SCHEDULE_NAMES

MODES = ("simple", "exact", "upper", "complete")


# ----------------------------------------------------------------------------- the enumerated agent
@dataclass(frozen=True)
class Node:
    """A history H_t: its signals, P(H_t), and the mass of each label below it per mode."""

    path: tuple          # (x_1, …, x_t)
    prob: float          # P(H_t)
    targets: dict        # mode -> (A1, A0): P(H_t)·P(label = 1 | H_t), P(H_t)·P(label = 0 | H_t)


@dataclass(frozen=True)
class Leaf:
    path: tuple
    prob: float
    outcome: float       # NaN when cut off
    censored: bool
    q_z: float           # NaN unless cut off


def enumerate_agent(prior, finish, success, signal, budget):
    """Every history node and every leaf of the agent (module docstring), exactly."""
    prior, f, s, g = (np.asarray(v, dtype=float) for v in (prior, finish, success, signal))
    nodes, leaves = [], []

    def visit(path, joint):  # joint: P(θ, H_t) before the ending at step t
        t = len(path)
        p = joint.sum()
        post = joint / p
        end_by_budget = 1.0 - (1.0 - f) ** (budget - t + 1)
        q = float(post @ s)
        m = float(post @ (s * end_by_budget))
        fail_within = float(post @ ((1.0 - s) * end_by_budget))
        done = float(post @ end_by_budget)
        nodes.append(Node(path, p, {
            "exact": (p * q, p * (1.0 - q)),
            "simple": (p * m, p * (1.0 - m)),
            "upper": (p * (1.0 - fail_within), p * fail_within),
            "complete": (p * m, p * fail_within),
        }))
        leaves.append(Leaf(path, float(joint @ (f * s)), 1.0, False, np.nan))
        leaves.append(Leaf(path, float(joint @ (f * (1.0 - s))), 0.0, False, np.nan))
        going = joint * (1.0 - f)
        if t == budget:
            leaves.append(Leaf(path, float(going.sum()), np.nan, True, float(going @ s / going.sum())))
            return
        for x in (0, 1):
            visit(path + (x,), going * (g if x else 1.0 - g))

    for x in (0, 1):
        visit((x,), prior * (g if x else 1.0 - g))
    return nodes, leaves


def weight(spec: str, t: int) -> float:
    """w_t of a strictly proper schedule, written out here (not tpsviz's Schedule.weights)."""
    parts = spec.split(":")
    if parts[0] == "uniform":
        return 1.0
    if parts[0] == "linear":
        return float(t)
    if parts[0] == "front":
        return float(parts[1]) ** (t - 1)
    return float(parts[1]) ** (int(parts[2]) - t)


def log_of(leaves, traces: dict) -> pd.DataFrame:
    """The leaves as runs of a long-format log; ``traces`` maps a name to {path: F_t}."""
    rows = []
    for k, leaf in enumerate(leaves):
        for t in range(1, len(leaf.path) + 1):
            row = {"trajectory_id": f"leaf{k:04d}", "step": t, "outcome": leaf.outcome,
                   "censored": leaf.censored, "q_z": leaf.q_z}
            for name, trace in traces.items():
                row[f"conf_{name}"] = trace[leaf.path[:t]]
            rows.append(row)
    return pd.DataFrame(rows)


def expected_tps_by_tpsviz(leaves, traces, settings_: ScoreSettings) -> dict:
    """Σ_leaf P(leaf) · TPS_leaf, TPS_leaf from compute_tps (a run left out counts 0)."""
    data = from_frame(log_of(leaves, traces))
    res = compute_tps(data, settings_)
    m = res.tps_matrix()
    prob = pd.Series({f"leaf{k:04d}": leaf.prob for k, leaf in enumerate(leaves)})
    return {name: float((m[name].reindex(prob.index).fillna(0.0) * prob).sum()) for name in traces}


def expected_tps_closed_form(nodes, trace, mode, spec, a, b) -> float:
    """Σ_nodes w_t [A1 S(F_t, 1) + A0 S(F_t, 0)] with S by quadrature."""
    total = 0.0
    for node in nodes:
        a1, a0 = node.targets[mode]
        p = trace[node.path]
        total += weight(spec, len(node.path)) * (a1 * s_quad(p, 1, a, b) + a0 * s_quad(p, 0, a, b))
    return total


def truthful(nodes, mode) -> dict:
    """τ_t = A1 / (A1 + A0): the target the mode elicits (docs/theory.md §4's table)."""
    return {n.path: n.targets[mode][0] / sum(n.targets[mode]) for n in nodes}


# ----------------------------------------------------------------------------- strategies
unit = st.floats(0.05, 0.95)
ALPHA_BETA = st.one_of(
    st.sampled_from([(0.0, 0.0), (1.0, 1.0), (-0.5, -0.5), (2.0, 1.0), (1.0, 2.0)]),  # the presets
    st.tuples(st.floats(-0.9, 4.0), st.floats(-0.9, 4.0)),
)


@st.composite
def agents(draw):
    k = draw(st.integers(1, 3))
    prior = np.array(draw(st.lists(st.floats(0.1, 1.0), min_size=k, max_size=k)))
    return (prior / prior.sum(), draw(st.lists(unit, min_size=k, max_size=k)),
            draw(st.lists(unit, min_size=k, max_size=k)), draw(st.lists(unit, min_size=k, max_size=k)),
            draw(st.integers(1, 4)))


@st.composite
def proper_schedules(draw):
    """A spec of every schedule family whose verdict is strictly proper, parameters drawn."""
    name = draw(st.sampled_from(["uniform", "linear", "front", "back"]))
    if name == "front":
        return f"front:{draw(st.sampled_from([0.5, 0.8, 0.95, 1.3]))}"
    if name == "back":
        return f"back:{draw(st.sampled_from([0.5, 0.8, 1.2]))}:{draw(st.integers(1, 6))}"
    return name


@st.composite
def distortions(draw, n_nodes: int):
    """A map from the truthful target to another adapted forecast: a shift or scale in logit, a
    constant, or a move at one node."""
    kind = draw(st.sampled_from(["shift", "scale", "constant", "one node", "noise"]))
    if kind == "shift":
        return kind, draw(st.sampled_from([-1.0, -0.3, 0.2, 0.7]))
    if kind == "scale":
        return kind, draw(st.sampled_from([0.3, 0.8, 1.5, 3.0]))
    if kind == "constant":
        return kind, draw(st.floats(0.02, 0.98))
    if kind == "one node":
        return kind, (draw(st.integers(0, n_nodes - 1)), draw(st.floats(0.02, 0.98)))
    return kind, draw(st.lists(st.floats(-1.5, 1.5), min_size=n_nodes, max_size=n_nodes))


def distort(target: dict, how) -> dict:
    kind, arg = how
    paths = list(target)
    logit = {k: np.log(v / (1.0 - v)) for k, v in target.items()}
    if kind == "shift":
        out = {k: 1.0 / (1.0 + np.exp(-(logit[k] + arg))) for k in paths}
    elif kind == "scale":
        out = {k: 1.0 / (1.0 + np.exp(-arg * logit[k])) for k in paths}
    elif kind == "constant":
        out = {k: arg for k in paths}
    elif kind == "one node":
        out = dict(target)
        out[paths[arg[0]]] = arg[1]
    else:
        out = {k: 1.0 / (1.0 + np.exp(-(logit[k] + d))) for k, d in zip(paths, arg)}
    return {k: float(np.clip(v, 0.01, 0.99)) for k, v in out.items()}


# ----------------------------------------------------------------------------- the properties
def test_the_strictly_proper_schedules_are_the_ones_drawn_here():
    """The property below covers every schedule family the verdicts call strictly proper."""
    examples = {"uniform": "uniform", "linear": "linear", "front": "front:0.9", "back": "back:0.9:5",
                "endpoint": "endpoint", "per-length": "per-length", "column": "column"}
    assert set(examples) == set(SCHEDULE_NAMES)
    proper = {n for n, spec in examples.items() if parse_schedule(spec).verdict.is_strictly_proper}
    assert proper == {"uniform", "linear", "front", "back"}
    for spec in ("front:0.5", "back:1.2:1"):  # every γ > 0 and budget H are called strictly proper
        assert parse_schedule(spec).verdict.is_strictly_proper
    for t in range(1, 6):  # the weights written out here are tpsviz's (the schedule is the same)
        for spec in ("uniform", "linear", "front:0.8", "back:1.2:3"):
            assert parse_schedule(spec).weights(np.array([t]), np.array([9]))[0] == pytest.approx(weight(spec, t))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent=agents(), ab=ALPHA_BETA, spec=proper_schedules(), mode=st.sampled_from(MODES), data=st.data())
def test_the_truthful_trace_wins_in_expectation(agent, ab, spec, mode, data):
    """E[TPS(target of the mode)] ≥ E[TPS(any other adapted trace)], strictly when a forecast moves:
    for every α, β > −1, every strictly proper schedule and every censoring mode, with the
    expectation summed exactly over the enumerated runs."""
    a, b = ab
    assert parse_schedule(spec).verdict.is_strictly_proper
    nodes, leaves = enumerate_agent(*agent)
    assert sum(leaf.prob for leaf in leaves) == pytest.approx(1.0, abs=1e-12)
    target = truthful(nodes, mode)
    other = distort(target, data.draw(distortions(len(nodes))))
    st_ = ScoreSettings(alpha=a, beta=b, schedule=parse_schedule(spec), censoring=mode, n_boot=0)
    got = expected_tps_by_tpsviz(leaves, {"truthful": target, "other": other}, st_)
    want = {name: expected_tps_closed_form(nodes, tr, mode, spec, a, b)
            for name, tr in (("truthful", target), ("other", other))}
    scale = max(abs(want["truthful"]), abs(want["other"]), 1e-300)
    for name in want:  # tpsviz's expectation is the tower property's closed form
        assert got[name] == pytest.approx(want[name], rel=1e-8, abs=1e-10 * scale), name
    gap = sum(weight(spec, len(n.path)) * sum(n.targets[mode]) * divergence(other[n.path], target[n.path], a, b)
              for n in nodes)
    assert got["truthful"] - got["other"] == pytest.approx(gap, rel=1e-6, abs=1e-9 * scale)
    assert got["truthful"] >= got["other"] - 1e-12 * scale
    moved = any(abs(other[k] - target[k]) > 1e-3 for k in target)
    if moved and gap > 1e-8 * scale:  # strictly proper: a moved forecast costs
        assert got["truthful"] > got["other"], (got, gap)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent=agents(), ab=ALPHA_BETA, spec=proper_schedules())
def test_under_a_step_budget_each_mode_prefers_its_own_target(agent, ab, spec):
    """docs/theory.md §4: simple elicits m_t, exact (true q_Z) q_t, upper P(Y=1 or Δ=0 | H_t),
    complete P(Y=1 | H_t, Δ=1). Each mode's expected TPS ranks its own target at least as high as
    every other mode's target, and strictly higher where they differ."""
    a, b = ab
    nodes, leaves = enumerate_agent(*agent)
    targets = {mode: truthful(nodes, mode) for mode in MODES}
    for mode in MODES:
        st_ = ScoreSettings(alpha=a, beta=b, schedule=parse_schedule(spec), censoring=mode, n_boot=0)
        got = expected_tps_by_tpsviz(leaves, targets, st_)
        scale = max(abs(v) for v in got.values()) or 1.0
        for other, trace in targets.items():
            gap = sum(weight(spec, len(n.path)) * sum(n.targets[mode]) *
                      divergence(trace[n.path], targets[mode][n.path], a, b) for n in nodes)
            assert got[mode] - got[other] == pytest.approx(gap, rel=1e-6, abs=1e-9 * scale), (mode, other)
            if gap > 1e-8 * scale:
                assert got[mode] > got[other], (mode, other, got)


@settings(max_examples=60, deadline=None)
@given(ab=ALPHA_BETA, q=st.floats(0.01, 0.99), p=st.floats(0.01, 0.99))
def test_expected_score_is_the_closed_form_and_its_gap_the_divergence(ab, q, p):
    """Per step: tpsviz's expected_score(p, q) is q·S(p,1) + (1−q)·S(p,0) with S by quadrature, and
    expected_score(q, q) − expected_score(p, q) = ∫ |q − c| ω(c) dc ≥ 0."""
    a, b = ab
    for x in (p, q):
        want = q * s_quad(x, 1, a, b) + (1.0 - q) * s_quad(x, 0, a, b)
        assert float(expected_score(x, q, a, b)) == pytest.approx(want, rel=1e-9, abs=1e-300)
    gap = float(expected_score(q, q, a, b)) - float(expected_score(p, q, a, b))
    d = divergence(p, q, a, b)
    scale = abs(float(expected_score(q, q, a, b)))
    assert gap == pytest.approx(d, rel=1e-6, abs=1e-10 * scale)
    assert gap >= -1e-13 * scale


def test_per_length_is_not_proper_here_either():
    """The verdict "not proper" of w_t = 1/T is right on this agent: the length-tilted report
    Σ P(leaf)·ℓ/T / Σ P(leaf)/T over the leaves below a node beats the truthful q_t in expectation."""
    nodes, leaves = enumerate_agent([0.5, 0.5], [0.2, 0.7], [0.9, 0.2], [0.5, 0.5], 4)
    assert parse_schedule("per-length").verdict.status == "not proper"
    num, den = {}, {}
    for leaf in leaves:
        if leaf.censored:
            continue  # complete-case: the censored runs are left out
        for t in range(1, len(leaf.path) + 1):
            k = leaf.path[:t]
            num[k] = num.get(k, 0.0) + leaf.prob * leaf.outcome / len(leaf.path)
            den[k] = den.get(k, 0.0) + leaf.prob / len(leaf.path)
    tilted = {k: num[k] / den[k] for k in num}
    target = truthful(nodes, "complete")
    assert max(abs(tilted[k] - target[k]) for k in target) > 0.05
    for a, b in [(0.0, 0.0), (1.0, 1.0)]:
        got = expected_tps_by_tpsviz(leaves, {"truthful": target, "tilted": tilted},
                                     ScoreSettings(alpha=a, beta=b, schedule=parse_schedule("per-length"),
                                                   censoring="complete", n_boot=0))
        assert got["tilted"] > got["truthful"], got
        # the same two traces under uniform weights: the truthful one wins again
        got = expected_tps_by_tpsviz(leaves, {"truthful": target, "tilted": tilted},
                                     ScoreSettings(alpha=a, beta=b, censoring="complete", n_boot=0))
        assert got["truthful"] > got["tilted"], got


def test_the_enumeration_is_a_probability_tree():
    """The agent's tree sums to 1 and its targets are the leaves' frequencies (a check of the
    oracle itself: q_t, m_t from posteriors equal the leaf-mass ratios below each node)."""
    nodes, leaves = enumerate_agent([0.3, 0.7], [0.4, 0.1], [0.8, 0.3], [0.7, 0.2], 3)
    assert sum(leaf.prob for leaf in leaves) == pytest.approx(1.0, abs=1e-14)
    for node in nodes:
        below = [lf for lf in leaves if lf.path[:len(node.path)] == node.path]
        mass = sum(lf.prob for lf in below)
        assert mass == pytest.approx(node.prob, rel=1e-12)
        ok1 = sum(lf.prob for lf in below if lf.outcome == 1.0)
        ok0 = sum(lf.prob for lf in below if lf.outcome == 0.0)
        cz = sum(lf.prob * lf.q_z for lf in below if lf.censored)
        assert node.targets["simple"][0] == pytest.approx(ok1, rel=1e-12)
        assert node.targets["exact"][0] == pytest.approx(ok1 + cz, rel=1e-12)
        assert node.targets["complete"] == pytest.approx((ok1, ok0), rel=1e-12)
        assert node.targets["upper"][1] == pytest.approx(ok0, rel=1e-12)
    assert list(itertools.islice((n.path for n in nodes), 2)) == [(0,), (0, 0)]

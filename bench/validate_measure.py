"""What ``bench/validate.py`` measures on one simulated log, and the true values of a scenario.

Every figure is the product's own: ``tpsviz.evaluate`` (what ``tpsviz score`` computes: TPS with its
bootstrap CI, skill with its CI, the verdicts), ``compare`` (paired Δ, as ``tpsviz compare --baseline``),
``group_difference`` (unpaired Δ of two groups of runs, as ``tpsviz compare --by``, pair_on "auto")
and ``metric_table`` (the AUROC's bootstrap CI), each with the product's defaults (2,000 bootstrap
replicates, 200 null draws). Imported by ``bench/validate.py`` (a script's own folder is on sys.path).
"""

from __future__ import annotations

import inspect
import time
import zlib
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

import tpsviz
from tpsviz.core.schedules import parse_schedule
from tpsviz.core.tps import ScoreSettings, compute_tps
from tpsviz.diagnostics.calibrate import add_recalibrated
from tpsviz.diagnostics.compare import compare
from tpsviz.diagnostics.groups import group_difference
from tpsviz.diagnostics.leaderboard import metric_table, skill_table
from tpsviz.synthetic.validation import (
    VALIDATION_AGENT, distortions, mode_target, raw_signals, simulate_tasks, stretch_centre)

#: step budgets: "short" cuts off about 40% of runs, "long" about 6%
BUDGETS = {"short": 8, "long": 40}
#: tasks repeated over epochs: runs per task and SD of a task's prior log-odds
EPOCHS, SPREAD = 10, 2.0
#: the back-loaded schedule's ratio (w_t = γ^(H − t), H the budget)
BACK_GAMMA = 0.9
#: the paired comparison: truthful − this distortion, on the same runs
PAIRED_BASELINE = "logit_x2"
#: the unpaired comparison: group b − group a of the ``difficulty`` column (the task's family)
GROUPS = ("easy", "medium")
#: the conversions: raw signals × methods (``--recalibrate`` semantics, 5 folds by run)
CONVERSIONS = tuple((src, method) for src in ("affine", "log") for method in ("platt", "isotonic"))
QUANTITIES = ("tps", "skill", "paired", "unpaired", "auroc")


@dataclass(frozen=True)
class Spec:
    """One scenario of the design."""

    name: str
    mode: str
    n_runs: int
    budget: str
    tasks: bool
    schedule: str
    logs: int
    headline: bool = False

    @property
    def horizon(self) -> int:
        return BUDGETS[self.budget]

    @property
    def schedule_spec(self) -> str:
        return "uniform" if self.schedule == "uniform" else f"back:{BACK_GAMMA:g}:{self.horizon}"

    @property
    def truth_key(self) -> tuple:
        """What the true values depend on (not the number of runs: they are per-run expectations)."""
        return (self.mode, self.budget, self.tasks, self.schedule)


def simulate_spec(spec: Spec, n_runs: int, seed: int):
    """A log of the scenario's agent, budget and task structure."""
    epochs, spread = (EPOCHS, SPREAD) if spec.tasks else (1, 0.0)
    return simulate_tasks(replace(VALIDATION_AGENT, budget=spec.horizon), n_runs, seed, epochs, spread)


def scored_rows(log, mode: str) -> np.ndarray:
    """The step rows a mode's score labels: every row, or the complete runs' rows (complete-case)."""
    if mode == "complete":
        return ~log.steps["censored"].to_numpy(dtype=bool)
    return np.ones(len(log.steps), dtype=bool)


def log_seed(name: str, rep: int, base: int) -> int:
    """The seed of log ``rep`` of a scenario: a function of (base, scenario, rep) alone, so the results do
    not depend on how many workers ran them or in which order."""
    return int(np.random.SeedSequence([base, zlib.crc32(name.encode()), rep]).generate_state(1)[0])


def population_constants(spec: Spec, seed: int, n_runs: int = 40_000) -> dict:
    """Fixed parts of the predictors, from a pilot simulation: the centres of the ×2 and ×0.5 stretches
    (they keep the mean target over the scored rows) and the base rate of the constant predictor. Fixed
    per scenario, so each predictor is a fixed function of the history and its true TPS is defined."""
    log = simulate_spec(spec, n_runs, seed)
    target, rows = mode_target(log.rows, spec.mode), scored_rows(log, spec.mode)
    data = log.to_data({"conf_truthful": target}, q_z=spec.mode == "exact")
    rate = float(skill_table(data, _settings(spec, 0))["ref_rate"].iloc[0])
    return {"centre_x2": stretch_centre(target, 2.0, rows), "centre_half": stretch_centre(target, 0.5, rows),
            "base_rate": rate}


def _settings(spec: Spec, n_boot: int) -> ScoreSettings:
    return ScoreSettings(censoring=spec.mode, schedule=parse_schedule(spec.schedule_spec), n_boot=n_boot)


def forecasts(log, spec: Spec, consts: dict, rng: np.random.Generator) -> dict:
    """The predictors (``conf_*``) and raw signals (``raw_*``) of a log: the truthful target of the
    mode, its six distortions (stretches around the scenario's fixed centres) and two raw signals."""
    target = mode_target(log.rows, spec.mode)
    out = {"conf_truthful": target}
    dist = distortions(target, rng, consts["base_rate"],
                       centres={2.0: consts["centre_x2"], 0.5: consts["centre_half"]})
    out.update({f"conf_{k}": v for k, v in dist.items()})
    out.update({f"raw_{k}": v for k, v in raw_signals(target).items()})
    return out


def _takes_censoring() -> bool:
    return "censoring" in inspect.signature(add_recalibrated).parameters


def fit_population() -> str:
    """Which runs the conversions are fitted on, on this code."""
    return "the score's population (censoring=mode)" if _takes_censoring() else "complete runs (old behaviour)"


def convert(data, log, mode: str):
    """Every conversion ``<signal>@<method>`` added as ``--recalibrate`` does (5 folds by run), fitted on
    the score's population where add_recalibrated takes ``censoring=`` (else the old call)."""
    new = _takes_censoring()
    qz = pd.Series(log.truth["q_z_true"].to_numpy(), index=log.truth["trajectory_id"].to_numpy())
    for src, method in CONVERSIONS:
        if new:
            extra = {"censoring": mode} | ({"q_z": qz} if mode == "exact" else {})
            data, _ = add_recalibrated(data, f"raw_{src}", method, **extra)
        else:
            data, _ = add_recalibrated(data, f"raw_{src}", method)
    return data


def _interval(est, lo, hi) -> list:
    return [float(est), float(lo), float(hi)]


def intervals(data, ev) -> dict:
    """Each quantity's estimate and 95% interval, as the product reports them: (est, low, high)."""
    s, k = ev.summary.loc["truthful"], ev.skill.loc["truthful"]
    out = {"tps": _interval(s.tps_mean, s.tps_ci_low, s.tps_ci_high),
           "skill": _interval(k.skill, k.skill_ci_low, k.skill_ci_high)}
    c = compare(data, ev.settings, baseline=PAIRED_BASELINE, predictors=["truthful"], metrics=(),
                q_z=ev.q_z, result=ev.result).loc["truthful"]
    out["paired"] = _interval(c.tps_delta, c.tps_ci_low, c.tps_ci_high)
    out["unpaired"] = _unpaired(data, ev.settings, ev.q_z)
    m = metric_table(data, ev.settings, predictors=["truthful"]).loc["truthful"]
    out["auroc"] = _interval(m.auroc, m.auroc_ci_low, m.auroc_ci_high)
    return out


def _unpaired(data, settings, q_z) -> list | None:
    """Group b − group a of mean TPS (None when a group has too few scored runs in this log)."""
    try:
        d = group_difference(data, "difficulty", GROUPS[0], GROUPS[1], settings, ["truthful"], q_z=q_z,
                             pair_on="auto").loc["truthful"]
    except ValueError:  # a group is absent from this log
        return None
    return _interval(d.tps_delta, d.tps_ci_low, d.tps_ci_high) if np.isfinite(d.tps_ci_low) else None


def conversion_bias(data, target: np.ndarray, rows: np.ndarray) -> dict:
    """Mean over the scored rows of (converted forecast − target), per conversion."""
    out = {}
    for name in data.predictors:
        if "@" in name:
            f = data.forecasts(name)
            ok = rows & np.isfinite(f)
            out[name] = float(np.mean(f[ok] - target[ok]))
    return out


def measure_log(job: tuple) -> dict:
    """One log of a scenario: (spec, rep, seed, constants) → its labels, intervals and conversion biases."""
    spec, rep, seed, consts = job
    t0, c0 = time.perf_counter(), time.process_time()
    log = simulate_spec(spec, spec.n_runs, seed)
    rng = np.random.default_rng([seed, 1])
    data = log.to_data(forecasts(log, spec, consts, rng), q_z=spec.mode == "exact")
    data = convert(data, log, spec.mode)
    ev = tpsviz.evaluate(data, censoring=spec.mode, schedule=spec.schedule_spec)
    target, rows = mode_target(log.rows, spec.mode), scored_rows(log, spec.mode)
    return {"scenario": spec.name, "rep": rep, "seed": seed,
            "labels": {n: v.label for n, v in ev.verdicts.items()},
            "intervals": intervals(data, ev), "bias": conversion_bias(data, target, rows),
            "censored": float(log.truth["censored"].mean()), "seconds": time.perf_counter() - t0,
            "cpu_seconds": time.process_time() - c0}


def truth_batch(job: tuple) -> dict:
    """Point estimates of every quantity on one large batch of a scenario (no bootstrap)."""
    spec, seed, consts, n_runs = job
    log = simulate_spec(spec, n_runs, seed)
    rng = np.random.default_rng([seed, 1])
    data = log.to_data(forecasts(log, spec, consts, rng), q_z=spec.mode == "exact")
    settings = _settings(spec, 0)
    names = ["truthful", PAIRED_BASELINE]
    result = compute_tps(data, settings, names)
    tps = result.summary["tps_mean"]
    mat = result.tps_matrix()["truthful"]
    per_run = np.sort(mat.dropna().to_numpy())  # worst (most negative) first
    task = pd.Series(log.truth["task"].to_numpy(), index=log.truth["trajectory_id"].to_numpy())
    skill = skill_table(data, settings, ["truthful"], result=result).loc["truthful", "skill"]
    diff = group_difference(data, "difficulty", GROUPS[0], GROUPS[1], settings, ["truthful"],
                            pair_on="none").loc["truthful", "tps_delta"]
    auroc = metric_table(data, settings, ["truthful"], n_boot=0).loc["truthful", "auroc"]
    return {"tps": float(tps["truthful"]), "skill": float(skill),
            "paired": float(tps["truthful"] - tps[PAIRED_BASELINE]), "unpaired": float(diff),
            "auroc": float(auroc), "tail_share": float(per_run[:max(1, per_run.size // 100)].sum() / per_run.sum()),
            "design_effect": design_effect(mat.to_numpy(), task.reindex(mat.index).to_numpy())}


def design_effect(values: np.ndarray, clusters: np.ndarray) -> float:
    """Var of a mean clustered by task over its variance with runs independent:
    Σ_k (Σ_{i∈k} (v_i − v̄))² / Σ_i (v_i − v̄)² (1 when every run is its own task)."""
    ok = np.isfinite(values)
    d = values[ok] - values[ok].mean()
    sums = pd.Series(d).groupby(clusters[ok]).sum().to_numpy()
    return float(np.sum(sums ** 2) / np.sum(d ** 2))

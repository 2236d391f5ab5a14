"""The one summary line above the verdicts (issue 37): the success rate defined once, how many of
the agent's signals can be trusted and which is most off, and model X against model Y, in words.

Every claim follows its interval as the verdict sentences do: a label comes from the verdict's
tests, a difference between models is called a win only when |Δ/SE| ≥ 2
(:func:`tpsviz.diagnostics.claims.is_clear`) and is always given with its SE. The dashboard's
Overview renders these strings; nothing here knows about a front end.

- :func:`success_words`: the one success rate of the log under the censoring mode (the rate the
  score itself assumes, :func:`tpsviz.diagnostics.leaderboard.reference_rate`), with its definition.
- :func:`settings_line`: the score's settings in one line of plain words.
- :func:`verdict_words`: "2 of 5 signals are trustworthy (…); verbal is over-optimistic …".
- :func:`model_column`: the run-level column that names a model or agent, if the log has one.
- :func:`comparison_words`: group b against group a from :func:`tpsviz.diagnostics.groups.group_difference`.
- :func:`summary_line`: the whole line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core import formatting as Fm
from tpsviz.core.data import TrajectoryData
from tpsviz.core.schema import clean_text
from tpsviz.core.tps import ScoreSettings, settings_words
from tpsviz.diagnostics.claims import is_clear
from tpsviz.diagnostics.groups import group_columns
from tpsviz.forecasts.references import is_reference as is_reference_forecaster
from tpsviz.report.figures.style import is_reference as is_truth

__all__ = ["MODEL_COLUMNS", "model_column", "success_words", "settings_line", "verdict_words",
           "comparison_words", "constant_predictors", "summary_line", "is_yardstick"]

#: run-level columns that name the model or agent of a run (case-insensitive), in order of preference;
#: ``model`` is also what the tau2-bench, tau-bench and Inspect AI readers name the agent's model
MODEL_COLUMNS = ("model", "agent", "agent_model", "model_name", "agent_name", "llm", "model_version")

#: the schedules in plain words (core/schedules.py SCHEDULE_NAMES)
_SCHEDULE_WORDS = {"uniform": "every step weighs the same", "linear": "later steps weigh more",
                   "front": "early steps weigh more", "back": "steps near the budget weigh more",
                   "endpoint": "only the last forecast counts", "per-length": "each run weighs the same",
                   "column": "step weights from the log's weight column"}


def is_yardstick(name: str) -> bool:
    """Whether a predictor is a yardstick rather than the agent's signal: the truthful/oracle
    forecast of synthetic data or a reference forecaster fitted on the log (``ref:…``)."""
    return is_truth(name) or is_reference_forecaster(name)


def model_column(data: TrajectoryData) -> str | None:
    """The run-level metadata column that names a model or agent (:data:`MODEL_COLUMNS`, any
    case) and splits the runs into 2 to 50 groups, or None.

    Parameters
    ----------
    data : TrajectoryData

    Returns
    -------
    str or None
    """
    usable = {str(c).lower(): c for c in group_columns(data)}
    return next((usable[c] for c in MODEL_COLUMNS if c in usable), None)


# --------------------------------------------------------------------------- the success rate
def success_words(data: TrajectoryData, settings: ScoreSettings, rate: float) -> str:
    """The success rate of the log in words, defined by the censoring mode: the one rate the
    Overview names "success rate" (any other rate is named by how it differs).

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings
        Its censoring mode says what counts as success.
    rate : float
        The rate under that mode (:func:`tpsviz.diagnostics.leaderboard.reference_rate`: the
        mean run label, censored runs counted as 0, 1 or q_Z, or left out).

    Returns
    -------
    str
        E.g. "221 of the 450 runs (49%) succeeded within the step budget (the 4 runs it cut off
        count as failures)".
    """
    n, c = int(data.n_trajectories), int(data.n_censored)
    mode = settings.censoring if c else "complete"
    scored = n - c if mode == "complete" else n
    k = rate * scored
    count = f"{int(round(k)):,} of the {scored:,} runs ({Fm.pct(k, scored)})"
    cut = f"the {c:,} run{'s' if c != 1 else ''} the step budget cut off"
    if not c:
        return f"{count} succeeded"
    if mode == "complete":
        return f"{count} that finished succeeded ({cut} are left out)"
    it = f"the {c:,} run{'s' if c != 1 else ''} it cut off"
    if mode == "simple":
        return f"{count} succeeded within the step budget ({it} count as failures)"
    if mode == "upper":
        return f"{count} succeeded or were cut off by the step budget ({it} count as successes: an upper bound)"
    return (f"{Fm.pct(k, scored)} of the {scored:,} runs succeeded, counting each of {cut} at its "
            "estimated chance of success")


def settings_line(settings: ScoreSettings, n_censored: int = 1, qz_constant: float | None = None) -> str:
    """The score's settings in one line of plain words: "log (α=0, β=0) score, every step weighs
    the same, runs cut off by the step budget count as failures".

    Parameters
    ----------
    settings : ScoreSettings
    n_censored : int
        Runs the budget cut off; with none, the censoring mode changes nothing and is not said.
    qz_constant : float, optional
        In exact mode, the one chance of success every cut-off run is given (else each run's own).

    Returns
    -------
    str
    """
    # the family's name first, its parameters after (a link or a test finds "α=0, β=0" in the line)
    parts = [f"{settings_words(settings)['score']} score",
             _SCHEDULE_WORDS.get(settings.schedule.name, settings.schedule.spec)]
    if n_censored:
        parts.append({"simple": "runs cut off by the step budget count as failures",
                      "upper": "runs cut off by the step budget count as successes",
                      "exact": (f"runs cut off by the step budget count as {qz_constant:g} of a success"
                                if qz_constant is not None else
                                "runs cut off by the step budget count at their estimated chance of success"),
                      "complete": "runs cut off by the step budget are left out"}[settings.censoring])
    return ", ".join(parts)


# --------------------------------------------------------------------------- the verdicts
def _names(names: list[str]) -> str:
    shown = [clean_text(n, 40) for n in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


#: labels that say how a signal is wrong (the others: too little data, uninformative, or a label added later)
_WRONG = ("optimistic", "pessimistic", "overconfident", "underconfident")


def _most_off(signals: list[str], verdicts: dict) -> str:
    """The clause on the signal whose verdict is furthest off, or ""."""
    biased = [n for n in signals if verdicts[n].label in ("optimistic", "pessimistic")]
    if biased:
        v = verdicts[max(biased, key=lambda n: abs(verdicts[n].mean_forecast - verdicts[n].success_rate))]
        word = "over-optimistic" if v.label == "optimistic" else "too pessimistic"
        said = f"{clean_text(v.predictor, 40)} is {word} — it says {Fm.pct(v.mean_forecast, 1)} on average"
        step, run = Fm.pct(v.success_rate, 1), Fm.pct(v.run_rate, 1)
        if step == run:
            return f"{said}, against {step} success"
        longer = "long runs fail more often" if v.success_rate < v.run_rate else "long runs succeed more often"
        return f"{said}, against {step} success at the same steps (a rate per step, not per run: {longer})"
    shape = [n for n in signals if verdicts[n].label in ("overconfident", "underconfident")]
    if shape:
        v = verdicts[shape[0]]
        how = "too extreme both ways" if v.label == "overconfident" else "too timid, hugging the middle"
        return f"{clean_text(v.predictor, 40)} is {v.label} — its forecasts are {how}"
    other = [n for n in signals if verdicts[n].label != "trustworthy"]
    return f"{clean_text(other[0], 40)} is labelled {verdicts[other[0]].label}" if other else ""


def verdict_words(verdicts: dict, order: list[str] | None = None) -> str:
    """How many of the agent's signals are trustworthy, and the one most off, in words.

    Yardsticks (:func:`is_yardstick`) and constant forecasts (labelled ``constant``: a base rate)
    are not the agent's signals and are not counted.

    Parameters
    ----------
    verdicts : dict of str to tpsviz.diagnostics.verdict.Verdict
    order : list of str, optional
        The predictors in the order to name them (default: the dict's).

    Returns
    -------
    str
        "" when there is no verdict.
    """
    names = [n for n in (order or list(verdicts)) if n in verdicts]
    if not names:
        return ""
    # a constant forecast (a base rate) is a baseline, not a signal: labelled so in its own sentence
    signals = [n for n in names if not is_yardstick(n) and verdicts[n].label != "constant"]
    if not signals:
        return ("this log has no signal of the agent's own: the verdicts below judge yardsticks "
                "fitted on its runs, the bar a real signal has to clear")
    good = [n for n in signals if verdicts[n].label == "trustworthy"]
    if len(signals) == 1:
        v = verdicts[signals[0]]
        if good:
            return f"the agent's one signal, {clean_text(v.predictor, 40)}, is trustworthy"
        if v.label in _WRONG:
            return f"the agent's one signal is not trustworthy: {_most_off(signals, verdicts)}"
        return f"the agent's one signal, {clean_text(v.predictor, 40)}, is labelled {v.label}"
    elif good:
        head = (f"{len(good)} of {len(signals)} signals {'is' if len(good) == 1 else 'are'} trustworthy "
                f"({_names(good)})")
    else:
        head = f"none of the {len(signals)} signals is trustworthy"
    off = _most_off(signals, verdicts)
    return f"{head}; {off}" if off else head


# --------------------------------------------------------------------------- model X vs model Y
def _difference(row: pd.Series, unit: str) -> str:
    return f"{abs(row['tps_delta']):.2f} ± {row['tps_se']:.2f} {unit} a run"


def _se_note(diff: pd.DataFrame) -> str:
    """"; SE clustered by task, 50 tasks" when the SE of an unpaired difference is clustered, else ""."""
    se = diff.attrs.get("se") or {}
    if se.get("unit") != "task" or diff.attrs.get("paired"):
        return ""
    k = int(se.get("clusters", 0)) - int(se.get("runs_without_task", 0))
    return f"; SE clustered by task, {k:,} task{'s' if k != 1 else ''}"


def _one_group(diff: pd.DataFrame, a: str, b: str, unit: str, skip=()) -> str:
    """Group b against group a in words, from one group_difference frame."""
    rows = diff[np.isfinite(diff["tps_z"].to_numpy(dtype=float))]
    signals = [p for p in rows.index if not is_yardstick(p) and p not in skip] or list(rows.index)
    rows = rows.loc[signals]
    if rows.empty:
        return f"{b} and {a} cannot be compared (too few runs for a standard error)"
    top = rows.loc[rows["tps_z"].abs().idxmax()]
    p = clean_text(top.name, 40)
    on = f" on {p}" if len(rows) > 1 or len(diff) > 1 else ""
    note = _se_note(diff)
    if not is_clear(top["tps_z"]):
        if len(rows) == 1:
            return (f"{b} and {a} are not clearly different{on} ({top['tps_delta']:+.2f} ± {top['tps_se']:.2f} "
                    f"{unit} a run{note})")
        return (f"{b} and {a} are not clearly different on any of {len(rows)} signals (largest gap: {p}, "
                f"{top['tps_delta']:+.2f} ± {top['tps_se']:.2f} {unit} a run{note})")
    verb = "better" if top["tps_z"] > 0 else "worse"
    said = f"{b} scores {verb} than {a}{on} (by {_difference(top, unit)}{note}"
    if len(rows) > 1:
        z = rows["tps_z"].to_numpy(dtype=float)
        better, worse = int(sum(is_clear(v) and v > 0 for v in z)), int(sum(is_clear(v) and v < 0 for v in z))
        said += f"; clearly better on {better} of {len(rows)} signals, clearly worse on {worse}"
    said += ")"
    return said


def comparison_words(diffs: dict, base: str, unit: str, by: str | None = None,
                     names: dict | None = None, limit: int = 3, skip=()) -> str:
    """Each group against the base group in words: "by model: B scores better than A on verbal (by 0.12 ±
    0.03 nats a run)", conditioned on Δ/SE (a win only where |Δ/SE| ≥ 2; otherwise "not clearly
    different", with the difference and its SE).

    Parameters
    ----------
    diffs : dict of str to DataFrame
        ``{group: group_difference(data, by, base, group, …)}``: TPS of group − base per predictor.
    base : str
        The base group.
    unit : str
        The score's unit ("nats").
    by : str, optional
        The column the runs were split by (said first); None for two logs.
    names : dict, optional
        How to call a group in the sentence (``{"candidate": "the candidate log"}``).
    limit : int
        At most this many groups are named; the others are counted.
    skip : collection of str
        Predictors left out of the answer besides the yardsticks: constant forecasts
        (:func:`constant_predictors`), whose difference is only the groups' success rates.

    Returns
    -------
    str
    """
    names = names or {}
    call = lambda g: names.get(g, clean_text(g, 40))  # noqa: E731
    parts = [_one_group(d, call(base), call(g), unit, skip) for g, d in list(diffs.items())[:limit]]
    if len(diffs) > limit:
        parts.append(f"{len(diffs) - limit} more group(s) in the comparison below")
    head = f"by {clean_text(by, 40)}: " if by else ""
    return head + "; ".join(parts) if parts else ""


def constant_predictors(verdicts: dict) -> set:
    """The predictors whose forecast is one value over every labelled step (a base rate): not a
    signal of the agent, so the summary does not compare models on them.

    Parameters
    ----------
    verdicts : dict of str to tpsviz.diagnostics.verdict.Verdict

    Returns
    -------
    set of str
    """
    return {n for n, v in verdicts.items() if np.isfinite(v.forecast_min) and v.forecast_min == v.forecast_max}


# --------------------------------------------------------------------------- the line
def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "." if text else ""


def summary_line(ev, comparison: str = "") -> str:
    """The summary above the verdicts: the success rate (defined), the verdicts in one clause and
    the comparison of models or logs, as up to three sentences.

    Parameters
    ----------
    ev : Evaluation
        Its verdicts must be decided.
    comparison : str
        :func:`comparison_words` of a model column or of two logs, or "".

    Returns
    -------
    str
    """
    rate = ev.reference_rate
    parts = [success_words(ev.data, ev.settings, rate) if np.isfinite(rate) else "",
             verdict_words(ev.verdicts, list(ev.summary.index)), comparison]
    return " ".join(_sentence(p) for p in parts if p)

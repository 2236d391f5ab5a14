"""What a predictor is, before how well it forecasts: a yardstick, a constant, or a conversion of a
signal that ranks runs worse than the signal could (docs/theory.md §8, "What is judged").

The rules of :mod:`tpsviz.diagnostics.verdict` judge a forecast. Three kinds of predictor would be
misread by them alone:

- a **reference forecaster** (``ref:step``, ``ref:task``, ``ref:task+step``,
  :func:`tpsviz.core.schema.is_reference`) is fitted on other runs' outcomes: a yardstick, not the
  agent's confidence, however well calibrated;
- a **constant** forecast (the same value on every labelled step row, e.g. the demo's ``base_rate``)
  cannot tell runs apart: uninformative by construction, whatever its value;
- a **conversion** ``<src>@<method>`` (:mod:`tpsviz.diagnostics.calibrate`: a ``raw_``/``unc_``
  signal or a predictor mapped to probabilities, cross-fitted by run) judges the conversion as much as
  the signal. When it ranks runs worse than chance, or clearly worse than its source ranks them by
  itself, or when neither is shown to rank them better than chance, a calibration label would blame
  the agent's signal for what the conversion did (measured on a weak ``unc_`` signal of 101 runs,
  HotpotQA-like: "optimistic", from a map fitted on complete runs and scored where cut-off runs
  count as failures, while the conversion ranked runs worse than chance).

:func:`conversion_statistics` measures the conversion's ranking against its source's (AUROC on the
complete runs' step rows, as the leaderboard's AUROC, with a paired bootstrap by run);
:func:`predictor_kind` decides which kind, if any, names the predictor.
"""

from __future__ import annotations

import numpy as np

from tpsviz.core.data import TrajectoryData
from tpsviz.core.schema import is_reference
from tpsviz.diagnostics.calibrate import conversion_words, recalibration_source, source_values
from tpsviz.diagnostics.leaderboard import labelled_rows
from tpsviz.diagnostics.metric_bootstrap import metric_replicates, replicate_summary
from tpsviz.diagnostics.metrics import auroc
from tpsviz.diagnostics.verdict.checks import z_value

__all__ = ["CONVERSION_BOOT", "CONVERSION_KEYS", "MIN_KEPT", "conversion_statistics", "is_constant", "lost_ranking",
           "conversion_fault", "predictor_kind"]

#: bootstrap replicates (by run) of the conversion's and its source's AUROC
CONVERSION_BOOT = 500
#: a conversion that keeps less than this share of its source's AUROC above 0.5 (and significantly less
#: than the source's AUROC) lost the signal's ranking
MIN_KEPT = 0.5
#: the statistics :func:`conversion_statistics` adds (NaN or "" for a predictor that is no conversion)
CONVERSION_KEYS = ("source", "conversion", "conversion_auroc", "conversion_auroc_ci_low",
                   "conversion_auroc_ci_high", "source_auroc", "source_auroc_ci_low", "source_auroc_ci_high",
                   "conversion_delta_z")


def _none() -> dict:
    return {k: ("" if k in ("source", "conversion") else np.nan) for k in CONVERSION_KEYS}


def conversion_statistics(data: TrajectoryData, name: str, level: float, seed: int,
                          n_boot: int = CONVERSION_BOOT) -> dict:
    """How a conversion ranks runs against its source, on the step rows of complete runs.

    Parameters
    ----------
    data : TrajectoryData
    name : str
        A predictor; a recalibration ``<src>@<method>`` whose source is in ``data`` is measured,
        any other gets NaN.
    level : float
        Level of the percentile intervals.
    seed : int
        Seed of the bootstrap (the same runs drawn for the conversion and its source: paired).
    n_boot : int
        Bootstrap replicates.

    Returns
    -------
    dict
        ``source`` (the signal or predictor converted), ``conversion`` (how, in words:
        :func:`tpsviz.diagnostics.calibrate.conversion_words`), ``conversion_auroc`` with
        ``_ci_low``/``_ci_high``, ``source_auroc`` with its interval, and ``conversion_delta_z``
        (AUROC(conversion) − AUROC(source) over the SE of its paired replicates).
    """
    out = _none()
    src = recalibration_source(data, name)
    if src is None:
        return out
    out.update(source=src, conversion=conversion_words(data, name) or "")
    labelled, y = labelled_rows(data)
    p, s = data.forecasts(name), source_values(data, src)
    rows = np.flatnonzero(labelled & np.isfinite(p) & np.isfinite(s))
    yv = y[rows]
    if rows.size < 2 or yv.min() == yv.max():
        return out
    p, s = p[rows], s[rows]
    runs = data.steps["traj"].to_numpy()[rows]
    reps = metric_replicates("auroc", [p, s], yv, runs, n_boot, seed)
    a_c, a_s = auroc(p, yv), auroc(s, yv)
    _, lo_c, hi_c = replicate_summary(reps[0], level)
    _, lo_s, hi_s = replicate_summary(reps[1], level)
    se = replicate_summary(reps[0] - reps[1], level)[0]
    out.update(conversion_auroc=a_c, conversion_auroc_ci_low=lo_c, conversion_auroc_ci_high=hi_c,
               source_auroc=a_s, source_auroc_ci_low=lo_s, source_auroc_ci_high=hi_s,
               conversion_delta_z=(a_c - a_s) / se if np.isfinite(se) and se > 0 else np.nan)
    return out


def is_constant(s: dict) -> bool:
    """Whether the forecasts on the labelled step rows are one value (``forecast_min`` = ``forecast_max``).

    Parameters
    ----------
    s : dict
        The statistics of a verdict (:func:`tpsviz.diagnostics.verdict.verdict_statistics`).

    Returns
    -------
    bool
    """
    lo, hi = s.get("forecast_min", np.nan), s.get("forecast_max", np.nan)
    return bool(np.isfinite(lo) and np.isfinite(hi) and hi - lo <= 1e-12)


def lost_ranking(s: dict, level: float) -> bool:
    """Whether a conversion lost most of its source's ranking: it keeps less than :data:`MIN_KEPT` of
    the source's AUROC above 0.5, and the paired Δ/SE is below −z at ``level``.

    Parameters
    ----------
    s : dict
        As :func:`conversion_fault` reads it.
    level : float
        The level of the paired test.

    Returns
    -------
    bool
    """
    dz, a_c, a_s = (s.get(k, np.nan) for k in ("conversion_delta_z", "conversion_auroc", "source_auroc"))
    return bool(np.isfinite(dz) and dz < -z_value(level) and a_c - 0.5 < MIN_KEPT * (a_s - 0.5))


def conversion_fault(s: dict, level: float) -> str | None:
    """Whether a conversion ranks runs worse than its signal allows, and why, decided on intervals.

    The conversion is at fault when it lost most of its source's ranking (it keeps less than half of
    the source's AUROC above 0.5, :data:`MIN_KEPT`, and the paired Δ/SE is below −z at ``level``: a
    significant but small loss, 0.664 → 0.657 on the tau2-like demo's raw_logprob, is no fault); or,
    unless the verdict's discrimination test shows it informative on the runs the score scores (its
    DSC test passes and its AUROC there is above 0.5: ``dsc_p``, ``auroc``), when its AUROC's interval
    on the complete runs lies below 0.5 (it ranks runs worse than chance) or neither its interval nor
    its source's lies above 0.5 (nothing shown to convert). The AUROCs are on the complete runs' rows
    (the leaderboard's); a step budget makes that population a selection, where a signal truthful to
    the score's target may rank weakly: docs/validation.md measured a quarter of exact monotone maps of
    the target called too weak to convert before the scored population was consulted.

    Parameters
    ----------
    s : dict
        A verdict's statistics with :func:`conversion_statistics`'s keys.
    level : float

    Returns
    -------
    str or None
        ``"too weak to convert"`` when the source's own AUROC interval reaches 0.5 (the signal by
        itself is not shown to rank runs better than chance), ``"conversion failed"`` when it lies
        above 0.5, None when the conversion is not at fault (or is no conversion, or was not measured).
    """
    a_c = s.get("conversion_auroc", np.nan)
    lo_c, hi_c = s.get("conversion_auroc_ci_low", np.nan), s.get("conversion_auroc_ci_high", np.nan)
    lo_s = s.get("source_auroc_ci_low", np.nan)
    if not np.isfinite(a_c):
        return None
    weak_source = not lo_s > 0.5  # (a NaN interval shows nothing either)
    informative = s.get("dsc_p", np.nan) < 1 - level and s.get("auroc", np.nan) > 0.5  # on the scored runs
    fault = lost_ranking(s, level) or (not informative and ((hi_c < 0.5) or (weak_source and not lo_c > 0.5)))
    if not fault:
        return None
    return "too weak to convert" if weak_source else "conversion failed"


def predictor_kind(name: str, s: dict, rules_label: str, level: float) -> tuple[str, str] | None:
    """The label that names what a predictor is, when that comes before how well it forecasts.

    In this order: a reference forecaster is a ``yardstick``; then, with enough data (``rules_label``
    is not "too little data"), a constant forecast is ``constant`` and a conversion at fault
    (:func:`conversion_fault`) is ``too weak to convert`` or ``conversion failed``.

    Parameters
    ----------
    name : str
    s : dict
        The verdict's statistics (with :func:`conversion_statistics`'s keys).
    rules_label : str
        The label the calibration and discrimination rules gave.
    level : float

    Returns
    -------
    (label, rule) or None
        ``rule`` is ``"reference"``, ``"constant"`` or ``"conversion"``; None: the rules' label stands.
    """
    if is_reference(name):
        return "yardstick", "reference"
    if rules_label == "too little data":  # a label needs evidence, even one known by construction
        return None
    if is_constant(s):
        return "constant", "constant"
    fault = conversion_fault(s, level)
    return None if fault is None else (fault, "conversion")

"""Recalibrated predictors on a trajectory log (docs/theory.md §6), usable everywhere else.

:func:`add_recalibrated` wraps :func:`tpsviz.diagnostics.recalibration.recalibrate` at the level of a
:class:`~tpsviz.core.data.TrajectoryData`: it takes a predictor (``conf_<name>``) or a raw signal
(``raw_<name>``: higher = more confident; ``unc_<name>``: higher = less confident), fits the
map cross-fitted with folds grouped by trajectory so that no run is recalibrated by a map fitted on
its own outcome, and adds the result as a new predictor ``<name>@<method>``.

The map is fitted on the population the score then scores (docs/theory.md §6): with the labels of
the censoring mode (:func:`tpsviz.core.censoring.mode_labels`): ``simple`` all runs, a cut-off run
labelled 0; ``upper`` all runs, labelled 1; ``exact`` all runs, a cut-off run entering with its q_Z
as a soft label; ``complete`` the complete runs only. A map fitted on complete runs and scored under
``simple`` would convert a signal into P(success | the run completes) and be called optimistic for
the app's own fit (measured: a bias of +0.17 to +0.19 with 40% of runs cut off). Every row, cut-off
runs included, gets the map of its own fold. The mode is recorded on the log
(:func:`recalibration_mode`), so a conversion is said with its population and questioned when
scored under another mode.
"""

from __future__ import annotations

import numpy as np

from dataclasses import replace

from tpsviz.core.censoring import MissingQz, default_censoring, mode_labels, population_words
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.core.data import TrajectoryData
from tpsviz.diagnostics.recalibration import METHODS, recalibrate

__all__ = ["add_recalibrated", "add_all_recalibrated", "recalibrated_name", "sources", "recalibration_source",
           "source_values", "conversion_words", "recalibration_mode", "METHOD_WORDS", "METHODS"]

#: the key of ``TrajectoryData.reading`` that records each conversion's fitting population
FITS_KEY = "recalibrations"

#: each recalibration method in words (the verdict's sentence says how a predictor was made)
METHOD_WORDS = {"platt": "Platt scaling", "isotonic": "isotonic regression", "beta": "beta calibration"}


def sources(data: TrajectoryData) -> list[str]:
    """Everything that can be recalibrated: predictor names, then ``raw_*``/``unc_*`` columns
    (predictors that are themselves recalibrated, ``…@method``, are left out)."""
    return [p for p in data.predictors if "@" not in p] + list(data.signals)


def recalibrated_name(data: TrajectoryData, source: str, method: str) -> str:
    """Name of the recalibrated predictor: ``<name>@<method>``.

    For a predictor ``<name>`` it is ``<name>@<method>``. For a signal ``raw_<name>`` or
    ``unc_<name>`` the prefix is dropped (``raw_logprob`` → ``logprob@platt``) unless a
    predictor of that name exists or both ``raw_<name>`` and ``unc_<name>`` exist; then the
    full column name is kept (``raw_logprob@platt``).
    """
    if source in data.signals:
        short = source.split("_", 1)[1]
        clash = short in data.predictors or sum(
            s.split("_", 1)[1] == short for s in data.signals) > 1
        return f"{source if clash else short}@{method}"
    return f"{source}@{method}"


def recalibration_source(data: TrajectoryData, name: str) -> str | None:
    """The predictor or ``raw_``/``unc_`` signal a recalibrated predictor ``<src>@<method>`` was
    fitted from.

    Parameters
    ----------
    data : TrajectoryData
    name : str
        A predictor's name.

    Returns
    -------
    str or None
        None when ``name`` is not a recalibration or its source is not in the log.
    """
    if "@" not in name:
        return None
    src = name.rsplit("@", 1)[0]
    if src in data.predictors or src in data.signals:
        return src
    found = [s for s in data.signals if s.split("_", 1)[1] == src]
    return found[0] if len(found) == 1 else None


def source_values(data: TrajectoryData, src: str) -> np.ndarray:
    """A recalibration's source as a score in [0, 1] with the same ranking of rows (AUROC is
    rank-invariant): a predictor's forecasts, or a signal's ranks, reversed for ``unc_``.

    Parameters
    ----------
    data : TrajectoryData
    src : str
        A predictor or a signal column of ``data`` (:func:`recalibration_source`).

    Returns
    -------
    ndarray
        One value per step row (NaN where the source is missing).
    """
    if src in data.predictors:
        return data.forecasts(src)
    x = data.steps[src].to_numpy(dtype=float) * data.signals[src]  # unc_: higher = less confident
    ok = np.isfinite(x)
    out = np.full(x.shape, np.nan)
    if ok.any():
        ranks = np.unique(x[ok], return_inverse=True)[1]
        out[ok] = ranks / max(int(ranks.max()), 1)
    return out


def conversion_words(data: TrajectoryData, name: str) -> str | None:
    """How a recalibrated predictor was made, in words: "unc_uala converted to a probability by
    Platt scaling, each run's map fitted on other runs (cross-fitted)".

    Parameters
    ----------
    data : TrajectoryData
    name : str
        A predictor's name, ``<src>@<method>`` (``-step``: one map per step, as the dashboard names it).

    Returns
    -------
    str or None
        None when ``name`` is not a recalibration of a source in ``data``.
    """
    src = recalibration_source(data, name)
    if src is None:
        return None
    tag = name.rsplit("@", 1)[1]
    method, per_step = (tag[:-len("-step")], True) if tag.endswith("-step") else (tag, False)
    how = METHOD_WORDS.get(method, method)
    made = "converted to a probability" if src in data.signals else "recalibrated"
    fit = recalibration_mode(data, name)
    on = f" on {fit['population']}" if fit else ""
    return (f"{src} {made} by {how}" + (", one map per step" if per_step else "")
            + f", fitted{on}, each run's map on other runs (cross-fitted)")


def recalibration_mode(data: TrajectoryData, name: str) -> dict | None:
    """How the conversion ``name`` was fitted: ``{"censoring": mode, "population": words}``, or None
    when ``data`` does not record it (a predictor that is no conversion made here)."""
    fits = data.reading.get(FITS_KEY) if isinstance(data.reading, dict) else None
    return (fits or {}).get(name)


def _resolve_source(data: TrajectoryData, source: str):
    """(x per row, signal kind, direction) of a predictor name or signal column."""
    if source in data.predictors:
        return data.forecasts(source), "probability", 1
    if source in data.signals:
        return data.steps[source].to_numpy(dtype=float), "raw", int(data.signals[source])
    for prefix in ("conf_",):
        if source.startswith(prefix) and source[len(prefix):] in data.predictors:
            return data.forecasts(source[len(prefix):]), "probability", 1
    options = ", ".join(sources(data)) or "none"
    raise ValueError(f"nothing to recalibrate called {source!r}; choose a predictor or a "
                     f"raw_/unc_ signal of the log: {options}")


def add_recalibrated(data: TrajectoryData, source: str, method: str = "platt", folds: int = 5,
                     per_step: bool = False, seed: int = DEFAULT_SEED,
                     name: str | None = None, censoring: str | None = None,
                     q_z=None) -> tuple[TrajectoryData, dict]:
    """Add a cross-fitted recalibration of a predictor or raw signal as a new predictor.

    Parameters
    ----------
    data : TrajectoryData
    source : str
        A predictor name (``verbal``), or a signal column (``raw_logprob``,
        ``unc_hesitation``). Signals are mapped to probabilities with their direction.
    method : {"platt", "isotonic", "beta"}
        Platt (logistic on logit F, or on the standardised signal), isotonic, or beta
        calibration (logistic on ln F and −ln(1−F); probabilities only).
    folds : int
        Cross-fitting folds k >= 2; trajectories are assigned to folds at random (seeded).
    per_step : bool
        Fit one map per step position t (and fold); steps with < 10 labelled training rows or
        one class use the fold's pooled map (reported).
    seed : int
        Seed of the fold assignment.
    name : str, optional
        Name of the new predictor (default :func:`recalibrated_name`).
    censoring : {"simple", "upper", "exact", "complete"}, optional
        The censoring mode the new predictor will be scored under: its labels are the fitting
        population (module docstring). Default :func:`tpsviz.core.censoring.default_censoring`,
        the mode :func:`tpsviz.compute_tps` scores by default.
    q_z : array_like or Series, optional
        q_Z of the censored runs in ``exact`` mode (default: the log's ``q_z`` column).

    Returns
    -------
    data : TrajectoryData
        A copy with the predictor ``<name>@<method>`` added (NaN where the source is
        missing) and its fitting population recorded (:func:`recalibration_mode`). The input is
        not modified.
    report : dict
        The recalibration report (``method``, ``folds``, ``n_labelled`` …, see
        :class:`tpsviz.diagnostics.recalibration.RecalibrationResult`) plus ``source``, ``name``,
        ``n_missing`` (rows without a source value, left missing), ``censoring`` and
        ``fitted_on`` (which runs the maps were fitted on, in words).

    Raises
    ------
    ValueError
        Nothing to recalibrate, a constant signal, too few labelled runs for the folds, or
        (:class:`tpsviz.core.censoring.MissingQz`) exact mode with a censored run without q_Z.
    """
    x, kind, direction = _resolve_source(data, source)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if kind == "raw" and method == "beta":
        raise ValueError(f"beta calibration needs probabilities; {source!r} is a raw signal "
                         "(use platt or isotonic)")
    new = name or recalibrated_name(data, source, method)
    mode = censoring or default_censoring(data)
    codes = data.steps["traj"].to_numpy()
    y = mode_labels(data, mode, q_z)[codes]  # the labels the score of this mode rewards
    ok = np.isfinite(x)
    if not ok.any():
        raise ValueError(f"{source!r} has no value on any row")
    if np.ptp(x[ok]) == 0:  # a map of one value is the base rate of each fold: rankings across folds only
        raise ValueError(f"{source!r} has the same value on every row: there is nothing to recalibrate "
                         "(the constant forecast (base rate) is its recalibration)")
    steps = data.steps["t"].to_numpy()[ok] if per_step else None
    res = recalibrate(x[ok], y[ok], codes[ok], method=method, folds=folds, per_step=steps,
                      seed=seed, direction=direction, signal=kind)
    values = np.full(data.n_steps, np.nan)
    values[ok] = res.probabilities
    population = population_words(data, mode)
    report = dict(res.report)
    report.update(source=source, name=new, n_missing=int((~ok).sum()), censoring=mode,
                  fitted_on=f"{population}; every row gets the map fitted on the other folds")
    note = (f"{new}: cross-fitted {method} recalibration of {source} ({folds} folds by "
            f"trajectory{', per step' if per_step else ''}, fitted on {population})")
    out = data.with_predictor(new, values, note=note)
    fits = dict((out.reading or {}).get(FITS_KEY) or {})
    fits[new] = {"censoring": mode, "population": population}
    return replace(out, reading={**(out.reading or {}), FITS_KEY: fits}), report


def add_all_recalibrated(data: TrajectoryData, method: str = "platt", folds: int = 5,
                         per_step: bool = False, seed: int = DEFAULT_SEED, censoring: str | None = None,
                         q_z=None) -> tuple[TrajectoryData, dict]:
    """Recalibrate every predictor and every raw/unc signal (see :func:`sources`), each fitted on the
    population of the censoring mode (:func:`add_recalibrated`).

    Beta calibration skips raw signals (it needs probabilities); a source that cannot be
    fitted (e.g. one outcome class in a fold) is skipped and reported. Exact mode with a censored
    run without q_Z is refused (:class:`tpsviz.core.censoring.MissingQz`), not skipped.

    Returns
    -------
    data : TrajectoryData
    reports : dict
        ``{source: report}`` for every fitted source, and ``{source: "skipped: …"}`` otherwise.
    """
    reports: dict = {}
    for src in sources(data):
        if method == "beta" and src in data.signals:
            reports[src] = "skipped: beta calibration needs probabilities"
            continue
        try:
            data, rep = add_recalibrated(data, src, method, folds, per_step, seed, censoring=censoring, q_z=q_z)
        except MissingQz:
            raise
        except ValueError as exc:
            reports[src] = f"skipped: {exc}"
            continue
        reports[src] = rep
    return data, reports

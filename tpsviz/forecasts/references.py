"""Reference forecasters computed from the log alone: ``ref:step``, ``ref:task``, ``ref:task+step``
(docs/forecasts.md §1).

They are yardsticks, not the agent's signal: what anyone could forecast from the outcomes of the
*other* runs, before any confidence is elicited. A run's own outcome never enters its own
forecast, shrinkage included:

- runs are split into folds (by run, seeded: :func:`run_folds`); every quantity used for the runs
  of fold f is estimated from the runs of the other folds only, except ``ref:task``'s count of the
  task's other runs, which leaves out the run itself (exclusive sums, so that changing one run's
  outcome leaves its own forecasts bit-identical);
- ``ref:step`` at step t: P(success | the run is still going at step t) among the other folds'
  runs, (s_t + c·r) / (n_t + c) with n_t runs of length ≥ t, s_t their labels' sum, r their base
  rate and c = :data:`PSEUDO_RUNS`; past the longest of them, its last value. Under simple
  censoring this is the paper's budget-aware m_t averaged over the runs alive at t;
- ``ref:task``: the task's other runs' success rate shrunk toward the base rate by a Beta prior
  fitted by marginal likelihood on the other folds (:mod:`tpsviz.forecasts.betabinomial`):
  (s_-i + μκ) / (n_-i + κ); a run without a task gets μ;
- ``ref:task+step``: a logistic regression of the label on logit(task) and logit(step), both
  computed inside the other folds (the task feature of a training run leaves that run out), fitted
  on the other folds' step rows and applied to fold f's.

Censored runs enter by the censoring mode: with q_Z as a soft label (simple 0, upper 1, exact the
log's or the given q_Z; every censored run needs one), or not at all (complete-case).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from tpsviz.core.wording import setting, text
from tpsviz.core._fast.blas import one_blas_thread
from tpsviz.core.censoring import default_censoring, mode_labels
from tpsviz.core.clusters import TASK_COLUMNS, task_column, text_values  # (one detection: the SEs cluster by it too)
from tpsviz.core.data import TrajectoryData
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.core.schema import REFERENCE_PREFIX, is_reference  # (named below every layer: the verdicts use it)
from tpsviz.core.tps import ScoreSettings
from tpsviz.forecasts.betabinomial import fit_beta_binomial, shrunk_rate

__all__ = ["REFERENCES", "REF_STEP", "REF_TASK", "REF_TASK_STEP", "REFERENCE_PREFIX", "TASK_COLUMNS",
           "PSEUDO_RUNS", "DEFAULT_FOLDS", "is_reference", "real_predictors", "task_column", "run_labels",
           "run_folds", "exclusive_group_sums", "step_curve", "reference_forecasts", "add_references",
           "without_references", "reference_notes", "how_to_add_forecast"]

REF_STEP, REF_TASK, REF_TASK_STEP = "ref:step", "ref:task", "ref:task+step"
REFERENCES = (REF_STEP, REF_TASK, REF_TASK_STEP)
#: pseudo-runs at the base rate added to every step of ``ref:step`` (a step few runs reach is not
#: forecast 0 or 1 from one or two of them)
PSEUDO_RUNS = 1.0
DEFAULT_FOLDS = 5
#: features of ``ref:task+step`` are clipped to [FEATURE_CLIP, 1 − FEATURE_CLIP] before the logit
FEATURE_CLIP = 1e-4


def real_predictors(names) -> list[str]:
    """The predictors that are not references, in order."""
    return [n for n in names if not is_reference(n)]


def run_labels(data: TrajectoryData, censoring: str, q_z=None) -> np.ndarray:
    """Each run's label for the references: :func:`tpsviz.core.censoring.mode_labels` (Y of a
    finished run; a censored run's 0, 1 or q_Z by the censoring mode, NaN in complete-case mode).

    Parameters
    ----------
    data : TrajectoryData
    censoring : str
        One of ``CENSORING_MODES``.
    q_z : array_like or Series, optional
        q_Z estimates in exact mode (as in :func:`tpsviz.compute_tps`; default the ``q_z`` column).

    Returns
    -------
    ndarray of float
        One label in [0, 1] per run (NaN: not used).
    """
    return mode_labels(data, censoring, q_z)


def run_folds(n_runs: int, folds: int = DEFAULT_FOLDS, seed: int | None = None) -> np.ndarray:
    """The fold of every run: a seeded permutation of the runs dealt into ``min(folds, n_runs)``
    folds (depends on the number of runs and the seed, never on an outcome)."""
    k = max(1, min(int(folds), int(n_runs)))
    rng = np.random.default_rng(DEFAULT_SEED if seed is None else seed)
    out = np.empty(int(n_runs), dtype=np.int64)
    out[rng.permutation(int(n_runs))] = np.arange(int(n_runs)) % k
    return out


def exclusive_group_sums(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """For every element, the sum of the *other* elements of its group: the sum of those before it
    plus the sum of those after it, neither of which reads the element itself (so the result for
    an element does not change, to the last bit, when its own value does)."""
    s = pd.Series(np.asarray(values, dtype=float))
    g = np.asarray(groups)
    before = s.groupby(g).shift(1, fill_value=0.0).groupby(g).cumsum().to_numpy()
    r = s.iloc[::-1].reset_index(drop=True)
    after = r.groupby(g[::-1]).shift(1, fill_value=0.0).groupby(g[::-1]).cumsum().to_numpy()[::-1]
    return before + after


def step_curve(lengths: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``ref:step``'s value at t = 1 … max length from runs of these lengths and labels:
    (s_t + c·r) / (n_t + c) (module docstring); index t − 1."""
    lengths = np.asarray(lengths, dtype=np.int64)
    labels = np.asarray(labels, dtype=float)
    T = int(lengths.max())
    n_at = np.bincount(lengths, minlength=T + 1)[::-1].cumsum()[::-1][1:].astype(float)
    s_at = np.bincount(lengths, weights=labels, minlength=T + 1)[::-1].cumsum()[::-1][1:]
    rate = float(labels.sum() / labels.size)
    return (s_at + PSEUDO_RUNS * rate) / (n_at + PSEUDO_RUNS)


def _task_codes(data: TrajectoryData, column: str) -> np.ndarray:
    """Task code of every run (-1: no task named)."""
    codes, _ = pd.factorize(pd.Series(text_values(data.trajectories[column]), dtype=object))
    return codes.astype(np.int64)


def _task_offer(codes: np.ndarray, labels: np.ndarray) -> str | None:
    """Why ``ref:task`` is not offered with these task codes (None: it is)."""
    ok = (codes >= 0) & ~np.isnan(labels)
    if not ok.any():
        return "no run with an outcome names a task"
    counts = np.bincount(codes[ok])
    if (counts > 0).sum() < 2:
        return "every run with an outcome has the same task"
    if counts.max() < 2:
        return "no task has two runs with an outcome (repeated trials or epochs)"
    return None


def _fold_prior(codes: np.ndarray, labels: np.ndarray, train: np.ndarray):
    """The Beta prior of task success rates fitted on the training runs (those with a task)."""
    m = train & (codes >= 0)
    k = int(codes.max()) + 1
    s = np.bincount(codes[m], weights=labels[m], minlength=k)
    n = np.bincount(codes[m], minlength=k).astype(float)
    return fit_beta_binomial(s, n)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, FEATURE_CLIP, 1 - FEATURE_CLIP)
    return np.log(p) - np.log1p(-p)


def _combined_fold(x_train: np.ndarray, lab_train: np.ndarray, x_test: np.ndarray):
    """``ref:task+step`` on one fold: a logistic fit of the soft labels on the training rows'
    features (identical rows pooled, a label ℓ as weight ℓ on 1 and 1 − ℓ on 0), applied to the
    test rows; None when the training labels are all 0 or all 1."""
    from sklearn.linear_model import LogisticRegression  # (scikit-learn is slow to import: only here)

    uniq, inv = np.unique(x_train, axis=0, return_inverse=True)
    inv = inv.ravel()
    pos = np.bincount(inv, weights=lab_train, minlength=len(uniq))
    neg = np.bincount(inv, weights=1.0 - lab_train, minlength=len(uniq))
    if pos.sum() <= 0 or neg.sum() <= 0:
        return None
    X = np.vstack([uniq, uniq])
    y = np.r_[np.ones(len(uniq)), np.zeros(len(uniq))]
    w = np.r_[pos, neg]
    keep = w > 0
    model = LogisticRegression(C=1.0, max_iter=1000).fit(X[keep], y[keep], sample_weight=w[keep])
    return model.predict_proba(x_test)[:, 1]


def _step_values(curves: list, row_fold: np.ndarray, t_rows: np.ndarray) -> np.ndarray:
    """``ref:step`` on every step row: the curve of the row's fold at its step t."""
    out = np.empty(t_rows.size)
    for f, c in enumerate(curves):
        rows = row_fold == f
        out[rows] = c[np.minimum(t_rows[rows], c.size) - 1]
    return out


def _combined_for_fold(f: int, train: np.ndarray, codes: np.ndarray, labels: np.ndarray, prior, curve,
                       traj: np.ndarray, t_rows: np.ndarray, row_fold: np.ndarray) -> np.ndarray:
    """``ref:task+step`` on fold f's rows, from the other folds only: their task feature leaves
    each training run out (fold f's runs are masked before any sum), their step curve."""
    valid = train & (codes >= 0)
    s = exclusive_group_sums(np.where(valid, labels, 0.0), codes)
    n = exclusive_group_sums(valid.astype(float), codes)
    task_feat = shrunk_rate(s, n, prior)[traj]
    step_feat = curve[np.minimum(t_rows, curve.size) - 1]
    X = np.column_stack([_logit(task_feat), _logit(step_feat)])
    train_rows, test_rows = train[traj], row_fold == f
    p = _combined_fold(X[train_rows], labels[traj][train_rows], X[test_rows])
    return step_feat[test_rows] if p is None else p


def _task_values(codes: np.ndarray, labels: np.ndarray, fold: np.ndarray, trains: list, curves: list,
                 traj: np.ndarray, t_rows: np.ndarray):
    """(``ref:task`` per run, ``ref:task+step`` per row, the fold priors)."""
    valid = (codes >= 0) & ~np.isnan(labels)
    s_other = exclusive_group_sums(np.where(valid, labels, 0.0), codes)
    n_other = exclusive_group_sums(valid.astype(float), codes)
    task_run = np.empty(codes.size)
    combined = np.empty(traj.size)
    row_fold = fold[traj]
    priors = []
    for f, train in enumerate(trains):
        prior = _fold_prior(codes, labels, train)
        priors.append(prior)
        held = fold == f
        task_run[held] = shrunk_rate(s_other[held], n_other[held], prior)
        combined[row_fold == f] = _combined_for_fold(f, train, codes, labels, prior, curves[f], traj, t_rows,
                                                     row_fold)
    return task_run, combined, priors


def reference_forecasts(data: TrajectoryData, censoring: str, q_z=None, folds: int = DEFAULT_FOLDS,
                        seed: int | None = None) -> tuple[dict, dict]:
    """The reference forecasts of every step row (module docstring) and how they were made.

    Parameters
    ----------
    data : TrajectoryData
    censoring : str
        The censoring mode: how censored runs enter (:func:`run_labels`).
    q_z : array_like or Series, optional
        q_Z estimates in exact mode.
    folds : int
        Folds of runs (at most one per run).
    seed : int, optional
        Seed of the folds (default ``DEFAULT_SEED``).

    Returns
    -------
    values : dict of str to ndarray
        ``{name: F_t per step row}`` for the references offered, in :data:`REFERENCES` order.
    info : dict
        ``names``, ``censoring``, ``folds``, ``seed``, ``task_column``, ``n_tasks``, ``priors``
        (μ, κ, bound per fold), ``not_offered`` (name → why), ``pseudo_runs``, ``runs_without_task``.
    """
    seed = DEFAULT_SEED if seed is None else int(seed)
    labels = run_labels(data, censoring, q_z)
    n = data.n_trajectories
    fold = run_folds(n, folds, seed) if n else np.zeros(0, dtype=np.int64)
    info = {"names": [], "censoring": censoring, "folds": int(fold.max()) + 1 if n else 0, "seed": seed,
            "task_column": None, "n_tasks": 0, "priors": [], "not_offered": {}, "pseudo_runs": PSEUDO_RUNS,
            "runs_without_task": 0}
    labelled = ~np.isnan(labels)
    trains = [labelled & (fold != f) for f in range(info["folds"])]
    if labelled.sum() < 2 or not all(t.any() for t in trains):
        why = (f"fewer than 2 runs have an outcome under {censoring} censoring" if labelled.sum() < 2 else
               "some fold of runs has no other run with an outcome to learn from")
        info["not_offered"] = {name: why for name in REFERENCES}
        return {}, info
    traj = data.steps["traj"].to_numpy()
    t_rows = data.steps["t"].to_numpy().astype(np.int64)
    lengths = np.bincount(traj, minlength=n)
    curves = [step_curve(lengths[tr], labels[tr]) for tr in trains]
    values = {REF_STEP: _step_values(curves, fold[traj], t_rows)}
    col = task_column(data)
    info["task_column"] = col
    codes = _task_codes(data, col) if col is not None else None
    why = ("the log names no task (a tau-bench or tau2-bench task_id, an Inspect AI sample id across epochs, "
           f"or a metadata column {', '.join(TASK_COLUMNS)})" if codes is None else _task_offer(codes, labels))
    if not why and not all((tr & (codes >= 0)).any() for tr in trains):  # (each fold's prior needs a task)
        why = "some fold of runs has no other run with a task and an outcome to fit the task prior on"
    if why:
        info["not_offered"] = {REF_TASK: why, REF_TASK_STEP: why}
    else:
        task_run, combined, priors = _task_values(codes, labels, fold, trains, curves, traj, t_rows)
        values[REF_TASK], values[REF_TASK_STEP] = task_run[traj], combined
        info.update(n_tasks=int(codes.max()) + 1, runs_without_task=int((codes < 0).sum()),
                    priors=[{"mu": p.mu, "kappa": p.kappa, "at_bound": p.at_bound} for p in priors])
    info["names"] = list(values)
    return values, info


def how_to_add_forecast(log: str = "LOG") -> str:
    """The line a log without forecasts gets: the three ways to a real signal (docs/forecasts.md).

    Parameters
    ----------
    log : str
        The log's path as the user typed it (already quoted for a shell where needed).

    Returns
    -------
    str
    """
    return text("to add a real signal, elicit one while the agent runs (docs/forecasts.md section 2) or replay "
                f"the log to a model: {setting('replay', log)}, then score the log with "
                f"{setting('forecasts', 'FORECASTS.parquet')}")


def without_references(data: TrajectoryData) -> TrajectoryData:
    """A copy without its ``ref:*`` predictors (the log itself if it has none)."""
    refs = [p for p in data.predictors if is_reference(p)]
    if not refs:
        return data
    steps = data.steps.drop(columns=[f"conf_{p}" for p in refs])
    return replace(data, steps=steps, predictors=real_predictors(data.predictors))


def reference_notes(info: dict) -> list[str]:
    """What :func:`add_references` did, in words (the notes of the log)."""
    names = info["names"]
    words = {"simple": "failures (q_Z = 0)", "upper": "successes (q_Z = 1)",
             "exact": "their q_Z as a fractional outcome", "complete": "left out"}
    out = []
    if names:
        out.append(f"references {', '.join(names)}: yardsticks from the other runs' outcomes, not the agent's "
                   f"forecasts (docs/forecasts.md section 1); {info['folds']} folds of runs (seed {info['seed']}), "
                   f"censored runs entered as {words[info['censoring']]}")
    if info["priors"]:
        mus = [p["mu"] for p in info["priors"]]
        kap = [p["kappa"] for p in info["priors"]]
        same = all(p["at_bound"] == "kappa_max" for p in info["priors"])
        out.append(f"ref:task: task = column {info['task_column']!r} ({info['n_tasks']} tasks); Beta prior by "
                   f"marginal likelihood on each fold's other runs: mu {min(mus):.3f}-{max(mus):.3f}, kappa "
                   f"{min(kap):.3g}-{max(kap):.3g} pseudo-runs"
                   + ("; the tasks do not differ beyond chance here, so ref:task is the base rate" if same else ""))
    if info["runs_without_task"]:
        out.append(f"ref:task: {info['runs_without_task']} runs name no task and get the base rate")
    seen = {}
    for name, why in info["not_offered"].items():
        seen.setdefault(why, []).append(name)
    out += [f"{', '.join(ns[:-1]) + ' and ' if len(ns) > 1 else ''}{ns[-1]} not offered: {why}"
            for why, ns in seen.items()]
    return out


def add_references(data: TrajectoryData, settings: ScoreSettings | None = None, q_z=None,
                   folds: int = DEFAULT_FOLDS, seed: int | None = None, automatic: bool = False) -> TrajectoryData:
    """The log with its reference forecasters added as predictors ``ref:step``, ``ref:task``,
    ``ref:task+step`` (those the log allows), the notes saying how they were made and
    ``reading["references"]`` holding the same as values.

    Parameters
    ----------
    data : TrajectoryData
        A log (references it already has are replaced).
    settings : ScoreSettings, optional
        Its censoring mode says how censored runs enter; its seed seeds the folds (default: the
        log's default censoring, ``DEFAULT_SEED``).
    q_z : array_like or Series, optional
        q_Z estimates in exact mode (as in :func:`tpsviz.compute_tps`).
    folds : int
        Folds of runs (default 5).
    seed : int, optional
        Seed of the folds (default ``settings.seed``).
    automatic : bool
        Recorded in ``reading["references"]``: the log has no forecast of its own.

    Returns
    -------
    TrajectoryData

    Examples
    --------
    >>> from tpsviz.synthetic.agent import simulate
    >>> data = add_references(simulate("tau2-like", n_trajectories=300, seed=1).to_data())
    >>> [p for p in data.predictors if is_reference(p)]
    ['ref:step', 'ref:task', 'ref:task+step']
    """
    settings = settings or ScoreSettings(censoring=default_censoring(data))
    base = without_references(data)
    # one BLAS thread: L-BFGS-B's small products on OpenBLAS's spinning threads took 0.97 s against
    # 0.21 s for a 450-run log on 2 cores (docs/forecasts.md, "Cost")
    with one_blas_thread():
        values, info = reference_forecasts(base, settings.censoring, q_z, folds,
                                           settings.seed if seed is None else seed)
    info["automatic"] = bool(automatic)
    out = base
    for name, v in values.items():
        out = out.with_predictor(name, v)
    return replace(out, notes=list(base.notes) + reference_notes(info),
                   reading={**base.reading, "references": info})

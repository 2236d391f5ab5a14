"""``score`` and ``compare`` on a log whose outcome is one of k labels or a number.

``score`` prints such a log's :class:`~tpsviz.evaluation.base.Evaluation` (what ``tpsviz.evaluate``
returns for it: :mod:`tpsviz.evaluation.outcome_kinds`); ``compare --baseline NAME`` gives the paired difference of every predictor's TPS-k or
TPS-CRPS per run against the baseline's, as for a binary log (SE = sd/sqrt(n) of the per-run
differences, :func:`tpsviz.engines.runsums.paired_tps`). An option that has no meaning for the
log's kind is refused by name, never ignored.
"""

from __future__ import annotations

import json

import numpy as np

from tpsviz.cli import continuous, multiclass
from tpsviz.cli.common import Fail, num, safe
from tpsviz.cli.wording import CLI, say
from tpsviz.cli.logs import settings_of
from tpsviz.cli.output import print_paired_tps
from tpsviz.core.errors import LogFormatError
from tpsviz.core.formatting import json_number
from tpsviz.engines.runsums import paired_tps
from tpsviz.evaluation.front_door import open_log
from tpsviz.evaluation.outcome_kinds import evaluate_continuous, evaluate_multiclass
from tpsviz.io.dataset import is_dataset_spec

__all__ = ["KIND_WORDS", "KIND_OPTIONS", "check_options_for", "score_other", "compare_other"]

KIND_WORDS = {"binary": "binary (success/failure)", "multiclass": "multi-class", "continuous": "continuous-outcome"}
_BINARY = ("binary",)

#: (option, attribute, the kinds of log it applies to); every other option applies to every kind
KIND_OPTIONS = (
    ("--alpha", "alpha", _BINARY), ("--beta", "beta", _BINARY), ("--rollouts", "rollouts", _BINARY),
    ("--recalibrate", "recalibrate", _BINARY), ("--folds", "folds", _BINARY),
    ("--per-trajectory", "per_trajectory", _BINARY), ("--format", "format", _BINARY),
    ("--success-threshold", "success_threshold", _BINARY), ("--treat", "treat", _BINARY),
    ("--scorer", "scorer", _BINARY), ("--conf", "conf", _BINARY), ("--forecasts", "forecasts", _BINARY),
    ("--map", "map", _BINARY), ("--percent", "percent", _BINARY), ("--scheduler", "scheduler", _BINARY),
    ("--verdict-sample", "verdict_sample", _BINARY), ("--cluster-by", "cluster_by", _BINARY),
    ("--interval", "interval", _BINARY), ("--q-z", "q_z", _BINARY),
    ("--censoring", "censoring", ("binary", "multiclass")), ("--eps", "eps", ("binary", "multiclass")),
    ("--rule", "rule", ("multiclass",)), ("--censored-label", "censored_label", ("multiclass",)),
    ("--bins", "bins", ("multiclass", "continuous")),
)


def _given(args, dest: str) -> bool:
    """Whether an option was set to something other than its default (``args.command_parser``
    is the command's parser, set by :func:`tpsviz.cli.main.build_parser`)."""
    if not hasattr(args, dest):
        return False
    return getattr(args, dest) != args.command_parser.get_default(dest)


def check_options_for(args, kind: str) -> None:
    """Refuse the options given that have no meaning for a log of this kind, naming them.

    Parameters
    ----------
    args : Namespace
        The command's options.
    kind : str
        ``"binary"``, ``"multiclass"`` or ``"continuous"`` (:func:`tpsviz.cli.logs.log_kind`).

    Raises
    ------
    Fail
    """
    bad = [flag for flag, dest, kinds in KIND_OPTIONS if kind not in kinds and _given(args, dest)]
    if kind != "binary" and getattr(args, "engine", "auto") in ("duckdb", "dask"):
        bad.append(f"--engine {args.engine}")
    if not bad:
        return
    one = len(bad) == 1
    hint = ("they are options of multi-class and continuous-outcome logs, docs/multiclass.md and docs/continuous.md"
            if kind == "binary" else f"docs/{'multiclass' if kind == 'multiclass' else 'continuous'}.md")
    raise Fail(f"{', '.join(bad)} {'does' if one else 'do'} not apply to a {KIND_WORDS[kind]} log "
               f"({safe(args.path)}): drop {'it' if one else 'them'} ({hint})")


def _check_one_file(args, kind: str) -> None:
    """A multi-class or continuous-outcome log is read from one file, in memory."""
    check_options_for(args, kind)
    if is_dataset_spec(args.path):
        raise Fail(f"{safe(args.path)}: the folder's files hold a {KIND_WORDS[kind]} log; such a log is read "
                   "from one file: give the path of one file")


def evaluation_of(args, kind: str):
    """The Evaluation of a multi-class (``kind="multiclass"``) or continuous-outcome log
    (``"continuous"``) under the command's options: what ``tpsviz.evaluate`` returns for it.

    Raises
    ------
    Fail
        For a setting the evaluation refuses (its message, in the command line's words).
    """
    _check_one_file(args, kind)
    settings, read = settings_of(args)
    try:
        _, log = open_log(args.path, read)
        return evaluate_multiclass(log, settings) if kind == "multiclass" else evaluate_continuous(log, settings)
    except LogFormatError:
        raise
    except ValueError as exc:
        raise Fail(f"{safe(args.path)}: {say(exc).replace('censored_label', '--censored-label')}") from None


def score_other(args, kind: str) -> int:
    """``score`` on a multi-class or continuous-outcome log: its Evaluation as text or JSON; returns the
    exit code."""
    ev = evaluation_of(args, kind)
    if args.json:
        print(json.dumps(ev.to_json(CLI), indent=2, allow_nan=False))
    elif kind == "multiclass":
        multiclass.print_text(ev)
    else:
        continuous.print_text(ev)
    return 0


def _per_run(per_run, names) -> dict:
    """Per predictor, TPS of every run (one order for all; NaN where the run was not scored)."""
    wide = per_run.pivot(index="trajectory_id", columns="predictor", values="tps")
    return {n: (wide[n].to_numpy(dtype=float) if n in wide else np.full(len(wide), np.nan)) for n in names}


def compare_other(args, kind: str) -> int:
    """``compare --baseline NAME`` on a multi-class (``kind="multiclass"``) or continuous-outcome log
    (``"continuous"``): Δ of the TPS per run against the baseline's; returns the exit code."""
    _check_one_file(args, kind)
    if args.by is not None or args.candidate is not None:
        raise Fail(f"compare --by and compare of two logs read binary logs; a {KIND_WORDS[kind]} log is compared "
                   "predictor by predictor: compare PATH --baseline NAME")
    if args.baseline is None:
        raise Fail("compare needs --baseline NAME (a predictor of the log)")
    args.n_boot = 0  # (the paired SE is sd/sqrt(n) of the differences: no bootstrap, and the JSON says so)
    ev = evaluation_of(args, kind)
    log, res = ev.log, ev.result
    names = list(res.summary.index)
    if args.baseline not in names:
        raise Fail(f"unknown baseline {safe(args.baseline)!r}: the log's predictors are "
                   f"{', '.join(safe(p, 40) for p in names)}")
    table = paired_tps(_per_run(res.per_run, names), args.baseline, args.level)
    what = "TPS-k" if kind == "multiclass" else "TPS-CRPS"
    if args.json:
        settings = {k: (json_number(v) if isinstance(v, float) else v) for k, v in res.settings.items()}
        settings.update(file=safe(log.source), n_runs=log.n_runs, n_censored=log.n_censored,
                        definition=f"delta = predictor - baseline on the same runs; {what}: mean of per-run "
                                   "differences, SE = sd/sqrt(n); z = delta/SE")
        print(json.dumps({"baseline": args.baseline, "kind": kind, "settings": settings,
                          "predictors": {safe(n): {k: num(r[k]) for k in ("tps_delta", "tps_se", "tps_z")}
                                         | {"n_runs": int(r["n_runs"])} for n, r in table.iterrows()}},
                         indent=2, allow_nan=False))
        return 0
    if kind == "multiclass":
        multiclass.print_header(ev)
    else:
        continuous.print_header(log, res)
    print()
    print(f"paired comparison with baseline {safe(args.baseline)!r}: delta = predictor - baseline ({what} per run: "
          "higher is better; SE = sd/sqrt(n) of the per-run differences)")
    print_paired_tps(table)
    return 0

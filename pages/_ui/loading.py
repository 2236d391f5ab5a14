"""Loading a source into a validated log, cached in the shared result cache (docs/architecture.md).

- :func:`load_base`: the log of a :class:`state.Source` as read (or a :class:`LoadFailure`).
- :func:`prepared`: that log after the metadata filters and the recalibrations, with the reference
  forecasters when the settings ask for them (``references.py``).
- :func:`get_rollouts`: the source's rollouts table, if any.

A log is keyed on ``Source.key`` alone (the bytes or file stamp and the reading options); what
is computed from it is keyed on :func:`result_key`, which adds the rollouts. Failures that the
bytes decide are cached as ``LoadFailure``; failures that may pass (a missing file, memory) are
reported and never cached.
"""

from __future__ import annotations

import threading
from pathlib import Path

import streamlit as st

import tpsviz
from tpsviz.core.cancel import Cancelled
from tpsviz.core.censoring import MissingQz, mode_labels
from tpsviz.core.wording import named
from tpsviz.diagnostics.audit import load_rollouts
from tpsviz.diagnostics.calibrate import add_recalibrated
from tpsviz.diagnostics.selection import filter_mask
from tpsviz.io.files import CANNOT_OPEN, PathRefused
from tpsviz.diagnostics.audit import qz_for_source
from tpsviz.forecasts.references import add_references

from .memo import give_back, memo
from .references import refs_key, refs_settings
from .sample import sample_size
from .state import SEED, Config, Source, current, current_source, data_roots, parse_recal
from .text import md
from .wording import say

__all__ = ["LoadFailure", "is_failure", "load_base", "prepared", "get_data", "cfg_refs", "cfg_fit", "fit_key",
           "result_key", "qz_choice", "exact_refusal",
           "get_rollouts", "LARGE_ROWS", "is_large"]


class LoadFailure:
    """A file that cannot be used, with the problems found (cached: the bytes decide it).

    ``problems`` are in the dashboard's words (:func:`wording.say`); ``named`` holds the settings
    they name (e.g. ``"multiclass"``: a log the Other outcomes page scores); ``forecasts``: the
    problems are the forecasts table's (it cannot be joined), not the log's."""

    def __init__(self, source: str, problems: list[str], forecasts: bool = False):
        self.source = say(source)  # (a dataset is named by its path: by its data root's name here)
        self.named = set().union(*(named(p) for p in problems))
        self.problems = [say(p) for p in problems]
        self.forecasts = forecasts  # the forecasts table joined to the log is at fault, not the log


def is_failure(obj) -> bool:
    return isinstance(obj, LoadFailure)


_LOADS = threading.BoundedSemaphore(2)   # logs parsed at once (each can take GBs at the row cap)


@memo(max_entries=6, spinner="Reading and validating the log…")
def _load(key: str, _src: Source):
    """The validated log, or a LoadFailure for a file that cannot be used (cached: the key
    pins the bytes). Failures that may pass (a missing file, memory) raise instead: they are
    never cached."""
    if _src.kind == "refused":
        raise PathRefused()
    with _LOADS:
        try:
            forecasts = _src.forecasts_raw or _src.forecasts_path
            outcomes = _src.outcomes_raw or _src.outcomes_path  # a trace file's (docs/traces.md)
            if _src.parts:
                return tpsviz.load(list(_src.parts), options=_src.options, forecasts=forecasts)
            if _src.raw is not None:
                return tpsviz.load(_src.raw, name=_src.name, options=_src.options, forecasts=forecasts,
                                   outcomes=outcomes)
            if _src.kind == "path":  # every file read stays under the data roots
                # a dataset larger than memory opens on a stated sample of its runs (sample.py)
                return tpsviz.load(Path(_src.path), name=_src.name, options=_src.options, forecasts=forecasts,
                                   read=_rooted_read, roots=data_roots(), sample=(sample_size(), SEED),
                                   outcomes=outcomes)
            return tpsviz.load(_src.path, name=_src.name)
        except tpsviz.LogFormatError as e:
            give_back()  # a refused file may have been parsed half-way: return that memory
            return LoadFailure(e.source, e.problems, forecasts=e.source in _forecasts_names(_src))


def _forecasts_names(src: Source) -> set:
    """The names the reader may give the source's forecasts table in its messages (its file name or path)."""
    if src.forecasts_raw:
        return {src.forecasts_raw[1]}
    return {src.forecasts_path, Path(src.forecasts_path).name} if src.forecasts_path else set()


def _rooted_read(path, max_bytes: int, label: str) -> bytes:
    """Read one file for a server-path load, refusing anything outside the data roots."""
    return data_roots().read(str(path), max_bytes=max_bytes, label=label)


def load_base(src: Source):
    """TrajectoryData or LoadFailure for the source (cached by its key, except failures that
    may pass: those are reported every time and never cached)."""
    try:
        return _load(src.key, src)
    except PathRefused:  # the log's, the forecasts table's or the outcomes table's path (Source.name)
        return LoadFailure(src.name if src.kind == "refused" else "server path", [CANNOT_OPEN])
    except MemoryError:
        give_back()
        return LoadFailure(src.name, ["the server ran out of memory reading this log; try a "
                                      "smaller file, or ask the administrator to lower "
                                      "TPSVIZ_MAX_ROWS"])
    except OSError as e:  # FileRefused and friends: the message names no content
        return LoadFailure(src.name, [str(e)])
    except Cancelled:
        raise
    except Exception as e:  # never a traceback in the page
        return LoadFailure(src.name, [f"the file could not be read ({type(e).__name__})"])


@memo(max_entries=6, spinner="Applying filters and recalibration…")
def _prepared(key: str, filters: tuple, recal: tuple, fit: tuple, _src: Source):
    base = load_base(_src)
    if isinstance(base, LoadFailure):
        return base, []
    data = base.subset(filter_mask(base, filters))
    problems = []
    censoring, q_z = _fit_population(data, fit, _src) if recal else (None, None)
    for spec in recal:
        r = parse_recal(spec)
        if r is None:
            problems.append(f"a recalibration in the settings ({md(spec, 60)}) is malformed and was ignored")
            continue
        try:
            data, _ = add_recalibrated(data, r["source"], r["method"], folds=r["folds"],
                                       per_step=r["per_step"], seed=SEED, name=r["name"],
                                       censoring=censoring, q_z=q_z)
        except Cancelled:  # nobody waits: not a failed recalibration, and nothing is kept
            raise
        except Exception as e:
            problems.append(f"recalibration of {md(r['source'], 60)} by {r['method']} failed: {md(say(e), 300)}")
    return data, problems


def _fit_population(data, fit: tuple, src: Source) -> tuple:
    """(censoring mode, q_z) the recalibrations are fitted for (:func:`fit_key`): the sidebar's mode, so
    that a map is fitted on the population the score scores (docs/theory.md §6)."""
    if not fit:
        return None, None
    if fit[0] != "exact":
        return fit[0], None
    return "exact", qz_choice(data, src, fit[1:])[0]


def fit_key(recal: tuple, settings, qz: tuple) -> tuple:
    """The part of an analysis the recalibrations' maps depend on: () without any, else the censoring
    mode they are fitted for and, in exact mode, the q_Z source and constant (``results.Analysis.qz``).
    A change of censoring mode refits them; α, β, the schedule and ε never do."""
    if not recal:
        return ()
    return (settings.censoring,) + (tuple(qz) if settings.censoring == "exact" else ())


def prepared(src: Source, filters: tuple, recal: tuple, refs: tuple = (), fit: tuple = ()):
    """(TrajectoryData | LoadFailure, problems): the source's log, filtered and recalibrated (maps
    fitted for the censoring mode of ``fit``: :func:`fit_key`), with the reference forecasters
    ``refs`` describes (``references.refs_key``; () = none)."""
    if refs:
        return _referenced(result_key(src), filters, recal, refs, fit, src)
    return _prepared(result_key(src) if fit else src.key, filters, recal, fit, src)


@memo(max_entries=6, spinner="Fitting the reference forecasters…")
def _referenced(key: str, filters: tuple, recal: tuple, refs: tuple, fit: tuple, _src: Source):
    """The prepared log with ``ref:step``, ``ref:task``, ``ref:task+step`` fitted on its runs under the
    censoring mode, seed and (exact mode) q_Z source of ``refs``. Keyed on the log with its rollouts
    (``result_key``): q_Z may come from them."""
    data, problems = _prepared(result_key(_src) if fit else _src.key, filters, recal, fit, _src)
    if isinstance(data, LoadFailure) or data.n_trajectories == 0:
        return data, problems
    settings, (source, const) = refs_settings(refs)
    q_z = None
    if settings.censoring == "exact":
        ro = get_rollouts(_src) if source == "rollouts" else None
        q_z, _ = qz_for_source(data, source, const, None if ro is None or is_failure(ro) else ro)
    return add_references(data, settings, q_z=q_z, automatic=not data.predictors and not data.signals), problems


def qz_choice(data, src: Source, qz: tuple):
    """(q_z, note) of tpsviz.diagnostics.audit.qz_for_source with the source's rollouts."""
    source, const = qz
    ro = get_rollouts(src) if source == "rollouts" else None
    return qz_for_source(data, source, const, None if ro is None or is_failure(ro) else ro)


def exact_refusal(data, src: Source, qz: tuple):
    """Why exact censoring cannot score ``data`` with the q_Z source ``qz`` (a MissingQz: some censored
    run has no q_Z), or None when it can (docs/theory.md §4: exact mode is exact)."""
    q, _ = qz_choice(data, src, qz)
    try:
        mode_labels(data, "exact", q)
    except MissingQz as e:
        return e
    return None


def result_key(src: Source) -> str:
    """Cache key of results computed on a source: the log's key and its rollouts file (q_Z from rollouts
    changes the scores; adversarial pass 4 found two rollouts files sharing cached results). A loaded or
    filtered log itself is keyed on ``src.key`` alone (_load, _prepared): it does not depend on rollouts."""
    return f"{src.key}|rollouts={src.rollouts_key or ''}"


def get_data(cfg: Config | None = None, src: Source | None = None):
    """(TrajectoryData | LoadFailure, problems) for the current settings."""
    cfg = cfg or current()
    src = src or current_source()
    seen = st.session_state.get("_base")  # what the sidebar loaded in this run
    if seen is not None and seen[0] == src.key and is_failure(seen[1]):
        return seen[1], []  # one answer per run, also for a failure that is not cached
    return prepared(src, cfg.filters, cfg.recal, cfg_refs(cfg), cfg_fit(cfg))


def cfg_refs(cfg: Config) -> tuple:
    """The references' part of the analysis of these settings (``references.refs_key``)."""
    return refs_key(cfg.references, cfg.score_settings(), (cfg.qz_source, float(cfg.qz_const)))


def cfg_fit(cfg: Config) -> tuple:
    """The recalibrations' part of the analysis of these settings (:func:`fit_key`)."""
    return fit_key(cfg.recal, cfg.score_settings(), (cfg.qz_source, float(cfg.qz_const)))


LARGE_ROWS = 200_000          # above this many step rows, the Overview shows point estimates before CIs


def is_large(data) -> bool:
    return getattr(data, "n_steps", 0) > LARGE_ROWS


# ----------------------------------------------------------------------------- rollouts
@memo(max_entries=6)
def _rollouts(key: str, _src: Source):
    """The validated rollouts table (tpsviz.diagnostics.audit.load_rollouts), or a LoadFailure."""
    name = _src.rollouts_name or "rollouts"
    if _src.rollouts_raw is None and _src.rollouts_path is None:
        return LoadFailure(name, [CANNOT_OPEN])  # a refused server path
    try:
        if _src.rollouts_raw is not None:
            return load_rollouts(_src.rollouts_raw, name=name)
        if _src.kind == "demo":  # the app's own file (demo_source builds it from a fixed name list)
            return load_rollouts(Path(_src.rollouts_path).read_bytes(), name=name)
        return load_rollouts(data_roots().read(_src.rollouts_path, label="rollouts path"), name=name)
    except tpsviz.LogFormatError as e:
        return LoadFailure(e.source, e.problems)
    except PathRefused:
        return LoadFailure("rollouts path", [CANNOT_OPEN])
    except OSError as e:  # too large: the message names the limit, no content
        return LoadFailure(name, [str(e)])
    except Cancelled:
        raise
    except Exception as e:  # never a traceback in the page
        return LoadFailure(name, [f"the rollouts file could not be read ({type(e).__name__})"])


def get_rollouts(src: Source | None = None):
    """Validated rollouts table, a LoadFailure, or None when the source has no rollouts."""
    src = src or current_source()
    if src is None or src.rollouts_key is None:
        return None
    return _rollouts(src.rollouts_key, src)

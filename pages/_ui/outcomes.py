"""Reading the sidebar's log as a multi-class or continuous-outcome log (the Other outcomes page;
docs/multiclass.md, docs/continuous.md). The binary pages read it with tpsviz.load; this module reads
the same source with the readers of the other outcome types, under the same data roots and limits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tpsviz
from tpsviz.core.cancel import Cancelled
from tpsviz.io.kinds.continuous import read_continuous
from tpsviz.io.dataset import is_dataset_spec, open_dataset
from tpsviz.io.files import CANNOT_OPEN, PathRefused, limits_from_env
from tpsviz.io.kinds import outcome_kind
from tpsviz.io.kinds.multiclass import read_multiclass
from tpsviz.io.tables import FORMATS, table_columns

from .loading import LoadFailure
from .memo import memo
from .state import Source, data_roots
from .wording import say

__all__ = ["OtherLog", "read_other", "labelled_censored_runs"]


@dataclass(frozen=True)
class OtherLog:
    """The sidebar's log as the Other outcomes page sees it.

    Attributes
    ----------
    kind : str
        "multiclass", "continuous" or "binary" (the other pages score it; ``log`` is None).
    log : MulticlassLog, ContinuousLog or None
    """

    kind: str
    log: object = None


def _raw(src: Source) -> tuple[bytes, str]:
    """The bytes of the source: an upload as given, a demo file of the app, a server path inside the data roots."""
    if src.parts:
        raise ValueError("several files were uploaded together; the Other outcomes page reads one log file")
    if src.raw is not None:
        return src.raw, src.name
    if src.kind == "demo":  # the app's own file (demo_source builds it from a fixed name list)
        return Path(src.path).read_bytes(), src.name
    return data_roots().read(src.path, max_bytes=limits_from_env().max_bytes, label="server path"), src.name


@memo(max_entries=6, spinner="Reading the log…")
def _read(key: str, _src: Source):
    """OtherLog of the source, or a LoadFailure (what is wrong and where; never the file's content)."""
    def other_kind(columns) -> str | None:
        kind = outcome_kind(columns)
        return None if kind == "binary" else kind

    try:
        if _src.kind == "path" and not _src.parts and is_dataset_spec(_src.path):
            # a folder of files (a dataset): its columns decide; the readers of this page read one file
            kind = other_kind(list(open_dataset(Path(_src.path), data_roots()).columns))
            if kind:
                return LoadFailure(_src.name, [f"the folder's files hold a {kind} log; this page reads such a log "
                                               "from one file: give the path of one file"])
            return OtherLog("binary")
        if _src.kind == "path" and Path(_src.path).is_dir():  # a tau2-bench results folder: success or failure
            return OtherLog("binary")
        raw, name = _raw(_src)
        fmt = FORMATS.get(Path(name).suffix.lower())
        kind = other_kind(table_columns(raw, name, fmt) if fmt else [])
        if kind == "multiclass":
            return OtherLog("multiclass", read_multiclass((raw, name), name=name))
        if kind == "continuous":
            return OtherLog("continuous", read_continuous((raw, name), name=name))
        return OtherLog("binary")
    except tpsviz.LogFormatError as e:
        return LoadFailure(e.source, e.problems)
    except PathRefused:
        return LoadFailure("server path", [CANNOT_OPEN])
    except (OSError, ValueError) as e:  # too large (the message names the limit) or several files
        return LoadFailure(_src.name, [say(e)])
    except Cancelled:
        raise
    except Exception as e:  # never a traceback in the page: what failed, not the file's content
        return LoadFailure(_src.name, [f"the log could not be read ({type(e).__name__})"])


def read_other(src: Source):
    """:class:`OtherLog` of the sidebar's source (cached per source), or a LoadFailure."""
    return _read(src.file_key, _src=src)


def labelled_censored_runs(log, censoring: str) -> int:
    """How many censored runs of a multi-class log the page's "…as the label" choice scores.

    Parameters
    ----------
    log : MulticlassLog
    censoring : {"complete", "simple", "exact"}
        The page's censoring mode (:func:`tpsviz.outcomes.multiclass.tps_k`).

    Returns
    -------
    int
        0 in complete-case mode (censored runs are left out); every censored run in simple mode;
        in exact mode only the censored runs without a q vector (``q_z__<label>`` columns): the
        others are scored with their q vector, as :func:`tpsviz.outcomes.multiclass.tps_k` does.
    """
    if censoring == "complete":
        return 0
    if censoring == "simple":
        return log.n_censored
    return int(log.censored_without_q().sum())

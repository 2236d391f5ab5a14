"""A dataset opened on a sample of its runs (too large for memory): how many runs the dashboard
draws, and the sentence that says which runs every number on a page covers (docs/deployment.md).

The all-runs table that scores every run out of core is ``allruns.py``; the loader that draws
the sample is ``loading.py``. Both, and the pages, take the sample's words from here.
"""

from __future__ import annotations

import os

#: runs drawn when a dataset is larger than the rows read into memory (at 100M rows the first
#: view took 10 s with 5,000, 38 s with 20,000: the verdict's tests dominate; docs/deployment.md)
DEFAULT_SAMPLE_RUNS = 5_000


def sample_size() -> int:
    """Runs the dashboard draws from a dataset too large to read (``TPSVIZ_SAMPLE_RUNS``)."""
    try:
        n = int(os.environ.get("TPSVIZ_SAMPLE_RUNS", "") or DEFAULT_SAMPLE_RUNS)
    except ValueError:
        return DEFAULT_SAMPLE_RUNS
    return n if n > 0 else DEFAULT_SAMPLE_RUNS


def sample_info(data) -> dict | None:
    """The sample a log was read as (None: every run of the file was read)."""
    return (getattr(data, "reading", None) or {}).get("sample")


def sample_words(info: dict, all_runs_below: bool = False) -> str:
    """One sentence: what the numbers on the page cover. ``all_runs_below``: the page holds the
    all-runs section (``allruns.all_runs_section``), whose numbers cover every run."""
    cut = (" (the draw stopped at the rows read into memory, TPSVIZ_MAX_ROWS)" if info.get("stopped_by_rows")
           else "")
    where = (f"on this page, except in the section **All {info['runs_total']:,} runs (out of core)**,"
             if all_runs_below else "on this page")
    return (f"**Sample:** every number {where} describes a random sample of "
            f"**{info['runs_sampled']:,} of {info['runs_total']:,} runs** ({info['rows_sampled']:,} of "
            f"{info['rows_total']:,} step rows; seed {info['seed']}){cut}. The dataset is larger than the rows "
            f"this server reads into memory; "
            + ("that section scores all runs out of core." if all_runs_below
               else "the Overview can score all runs out of core."))

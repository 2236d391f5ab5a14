"""tpsviz dashboard: is my agent's confidence honest?

Run with ``streamlit run app.py``. This file registers the pages explicitly with st.navigation
and owns the shared sidebar; the pages in ``pages/`` are thin (read state, call the core, render).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import streamlit as st  # noqa: E402

from pages._ui import sidebar, sources_in_use, theme, warmup  # noqa: E402
from tpsviz.report.figures.style import use_template_by_default

use_template_by_default()  # figures get their template at creation, not by a 10 ms copy each
warmup.skip_repl_check()  # before the first element: Streamlit's REPL check costs 0.9 s (warmup.py)

st.set_page_config(page_title="tpsviz — is my agent's confidence honest?", page_icon="🎯", layout="wide")
theme.apply()  # a phone's sizes and spacing (pages/_ui/theme.py); takes no place on the page

PAGES = [
    # the default page is served at the root URL only (Streamlit ignores its url_path): /overview, the
    # Overview's own path, is a hidden page running the same script, so a link to it opens no "Page not found"
    st.Page(str(HERE / "pages" / "views" / "overview.py"), title="Overview / Compare", icon=":material/leaderboard:", url_path="home", default=True),
    st.Page(str(HERE / "pages" / "views" / "overview.py"), title="Overview / Compare", icon=":material/leaderboard:", url_path="overview", visibility="hidden"),
    st.Page(str(HERE / "pages" / "views" / "reliability.py"), title="Reliability", icon=":material/show_chart:", url_path="reliability"),
    st.Page(str(HERE / "pages" / "views" / "steps.py"), title="Step contributions", icon=":material/grid_on:", url_path="steps"),
    st.Page(str(HERE / "pages" / "views" / "runs.py"), title="Runs", icon=":material/list_alt:", url_path="runs"),
    st.Page(str(HERE / "pages" / "views" / "censoring.py"), title="Censoring", icon=":material/content_cut:", url_path="censoring"),
    st.Page(str(HERE / "pages" / "views" / "lab.py"), title="Scoring rule lab", icon=":material/science:", url_path="lab"),
    st.Page(str(HERE / "pages" / "views" / "monitoring.py"), title="Monitoring", icon=":material/monitor_heart:", url_path="monitoring"),
    st.Page(str(HERE / "pages" / "views" / "outcomes.py"), title="Other outcomes", icon=":material/category:", url_path="outcomes"),
    st.Page(str(HERE / "pages" / "views" / "recalibration.py"), title="Recalibration", icon=":material/tune:", url_path="recalibration"),
    st.Page(str(HERE / "pages" / "views" / "export.py"), title="Export", icon=":material/download:", url_path="export"),
]

warmup.start()  # the first view's heavy imports load in the background while its log is read
nav = st.navigation(PAGES)
sidebar.S.count_run()  # (a section drawn only while open tells whether it was drawn in the run before)
try:
    sidebar.render()
except Exception as e:  # the sidebar must never leave the user with a traceback
    from pages._ui.text import md
    from pages._ui.wording import say

    st.sidebar.error(f"A setting could not be applied: {md(say(e), 300)}")
st.session_state["_shell"] = True


def _fragment_run() -> bool:
    """Whether this run is a rerun of fragments alone (not of the whole app)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return bool(ctx is not None and getattr(ctx, "fragment_ids_this_run", None))


@st.fragment(key=sidebar.MAIN)
def main_area():
    """The page: a fragment, so that an α or β nudge reruns it alone and the sidebar's widgets are not
    drawn again (``sidebar.rerun_main_only``). Any other interaction with a widget of the page runs the
    whole app, as before: the sidebar may depend on it (a reading option, a recalibration)."""
    main_only = st.session_state.pop("_main_only", False)
    if _fragment_run():
        if not main_only or not hasattr(nav, "_can_be_called"):
            st.rerun()  # a widget of the page changed (or Streamlit changed): the whole app runs
        nav._can_be_called = True  # (st.Page runs once per run of the app; this fragment's rerun runs it again)
    st.session_state["_figures"] = {}
    try:
        # a computation nobody waits for (the session ended, a slider moved) stops at its next checkpoint
        # (tpsviz.core.cancel), so a bootstrap never holds up the next run
        with sidebar.S.cancel_when_unneeded():
            nav.run()
    except sidebar.S.Cancelled:  # nobody is waiting for this page any more
        pass
    except Exception as e:  # a setting the core rejects: say what and what to do, in the page (never a redacted box)
        from pages._ui.common import show_page_error

        show_page_error(e)


main_area()
sources_in_use.after_run()  # a log this run released: its memory given back once the page is replaced

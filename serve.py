"""Start the dashboard: ``streamlit run app.py`` with any further Streamlit options, e.g.

    .venv/bin/python serve.py --server.address 127.0.0.1 --server.port 8501

Why not ``streamlit run app.py`` itself: the project keeps its page code in a folder named
``pages/``, and Streamlit treats the first browser session after a start as an old-style app
whose pages are the scripts in that folder, until app.py's ``st.navigation`` has run once. A
teammate whose first visit is a link to another page (``/censoring?…``) then sees a
"Page not found" box over the right page. This launcher tells Streamlit, before the first
session, that ``st.navigation`` owns the pages (docs/deployment.md, "Deep links").
``streamlit run app.py`` still works; only that first deep link differs.

It also imports the app's modules before the server opens (``pages/_ui/warmup.py``, ``preload``):
Streamlit would import them in the first session's first view, about 1 s later for that user.
"""

from __future__ import annotations

import sys
from pathlib import Path

APP = Path(__file__).resolve().with_name("app.py")


def main(argv: list[str]) -> None:
    """Run the Streamlit server on app.py with the options ``argv`` (never returns)."""
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web import cli

    from pages._ui import warmup

    warmup.preload()  # the first view's imports, now rather than in the first user's first view
    warmup.tune_gc()  # the modules' objects out of every collection, fewer young ones (docs/deployment.md)

    # (read once, by the first session's PagesManager, and set to False by st.navigation
    # itself afterwards; set here it is never read as True)
    PagesManager.uses_pages_directory = False
    cli.main(["run", str(APP), *argv], prog_name="streamlit")


if __name__ == "__main__":
    main(sys.argv[1:])

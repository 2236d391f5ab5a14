"""Shared constants and helpers of the AppTest tests."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
DEMO = ROOT / "demo_data"


def texts(at) -> str:
    """All markdown, captions, alerts of the current page as one string."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    for kind in ("error", "warning", "info", "success"):
        parts += [e.value for e in getattr(at, kind)]
    return "\n".join(parts)


def fresh(qp=None, timeout: int = 180):
    """A new app session (optionally opened from a link's query parameters), run once, without
    an exception."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=timeout)
    if qp:
        at.query_params.update(qp)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def upload(at, files, forecasts=None):
    """Switch the data source to Upload and upload ``files`` ((name, bytes, type) tuples), with an
    optional forecasts table in the reading options; the app runs without an exception."""
    at.radio(key="src").set_value("Upload").run()
    if forecasts is not None:
        at.file_uploader(key="upload_forecasts").set_value(forecasts)
    at.file_uploader(key="upload").set_value(files).run()
    assert not at.exception, [e.value for e in at.exception]

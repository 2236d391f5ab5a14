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

"""Issue 47 point 3 in the dashboard (AppTest): a forecasts table that `tpsviz forecast --method`
writes (columns ``conf_<name>:<method>`` and ``sd_<name>:consistency``) joins a harness log on upload,
every method a predictor named ``<name>:<method>``, the spread column not one, every page drawn."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from apptest_helpers import fresh, upload
from tpsviz.io.harness.transcripts import read_transcripts

ROOT = Path(__file__).resolve().parents[2]
TAU1 = ROOT / "tests" / "fixtures" / "taubench" / "tau1_gpt-4o-airline_trimmed.json"
PAGES = ["pages/views/overview.py", "pages/views/reliability.py", "pages/views/steps.py",
         "pages/views/censoring.py", "pages/views/lab.py", "pages/views/recalibration.py",
         "pages/views/export.py"]


def test_method_columns_with_a_colon_are_predictors_in_the_dashboard():
    rows = [(t.trajectory_id, s) for t in read_transcripts(TAU1)[0] for s in range(1, t.steps + 1)]
    table = pd.DataFrame(rows, columns=["trajectory_id", "step"])
    rng = np.random.default_rng(4)
    for col in ("conf_m:verbal", "conf_m:ptrue", "sd_m:consistency"):
        table[col] = rng.uniform(size=len(table)).round(4)
    at = fresh()
    upload(at, [(TAU1.name, TAU1.read_bytes(), "application/json")],
           forecasts=("f.csv", table.to_csv(index=False).encode(), "text/csv"))
    options = at.sidebar.multiselect(key="pred").options
    assert "m:verbal" in options and "m:ptrue" in options, options
    assert not [o for o in options if "consistency" in o]
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not [e.value for e in at.error if "Something went wrong" in e.value], page

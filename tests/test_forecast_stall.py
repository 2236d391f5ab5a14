"""Issue 47, Done when: "A stalled provider ends `forecast --timeout 5` with exit 2 within 2 minutes,
saying it timed out", as written: the demo tau-bench log's first 3 runs (31 prompts), both forms a
local server is reached with, against a socket on 127.0.0.1 that accepts every connection and never
reads it (bench/bench_stall.py's server: no HTTP at all, unlike tests/test_forecast_servers.py's
stalled server, which reads the request first). The keys are dummies in this process only.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tpsviz.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_stall import DUMMY, LIMIT, LOG, StalledServer  # noqa: E402

PROMPTS = 31  # agent messages of the demo log's first 3 runs (15 + 5 + 11)


@pytest.mark.parametrize("model", ["openai-api/llama/SmolLM2-135M-Instruct", "openai/SmolLM2-135M-Instruct"])
def test_a_stalled_provider_ends_forecast_timeout_5_with_exit_2_within_2_minutes(model, monkeypatch, tmp_path,
                                                                                 capsys):
    for var in ("OPENAI_BASE_URL", "LLAMA_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", DUMMY)
    monkeypatch.setenv("LLAMA_API_KEY", DUMMY)
    server = StalledServer()
    out = tmp_path / "f.parquet"
    try:
        start = time.monotonic()
        code = cli.main(["forecast", str(LOG), "--model", model, "--model-base-url",
                         f"http://127.0.0.1:{server.port}/v1", "--out", str(out), "--max-runs", "3",
                         "--timeout", "5"])
        took = time.monotonic() - start
        connections = server.accepted
    finally:
        server.close()
    err = capsys.readouterr().err
    assert code == 2, err
    assert took < LIMIT, took
    assert f"error: timed out: the model answered none of the {PROMPTS} prompts within --timeout 5 s; no table " \
           "was written" in err
    assert "after 8 timeouts in a row the provider was taken as not answering" in err
    assert "prompts were not asked; they stay missing" in err
    assert not out.exists() and not any(tmp_path.rglob("*.json"))
    # 4 requests in flight, the stall called after 8 timeouts: at most 8 tries (and inspect_ai's one probe of
    # the Responses API for openai/...) ever reached the socket, never one per prompt
    assert 1 <= connections <= 9 < PROMPTS, connections
    print(f"{model}: exit 2 after {took:.1f} s, {connections} connections")

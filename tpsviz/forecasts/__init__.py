"""Forecasts for a log that has none: the three ways of docs/forecasts.md, each ending in the same
per-step table ``trajectory_id, step, conf_<name>``.

- references computed from the log alone (``ref:step``, ``ref:task``, ``ref:task+step``);
- a probability of success elicited while the agent runs (an Inspect AI solver);
- a forecaster that replays a finished log's transcripts to a model (``python -m tpsviz forecast``).

``prompts`` holds the editable prompt text (``prompts.toml``) and ``replies`` reads a probability
out of a model's reply; both are shared by the elicitation and the replay. inspect_ai is imported
only by the modules that call a model, never by ``import tpsviz``.
"""

"""Real Inspect AI logs written during the tests by inspect_ai itself (offline, mock model).

One small agent task, 9 samples × 2 epochs (some answered right, some wrong):
- every assistant message gets ``metadata.confidence`` from the solver;
- the mock model returns token log-probabilities (with top log-probabilities) and explicit token
  usage (so nothing is downloaded to count tokens);
- "long" needs more turns than the task's message limit allows: stopped by the limit (censored);
- "err" raises in epoch 2: an errored sample (dropped);
- "tool" calls a tool, so its run has an assistant message without a confidence;
- two scorers: ``includes`` (C/I) and a numeric one.
Written as ``.eval`` (zstd members), ``.json``, and ``.eval`` with chunked per-sample folders.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("INSPECT_LOG_LEVEL", "warning")
os.environ.setdefault("INSPECT_DISPLAY", "none")


# the mock model's answers (by a word of the question): some right, some wrong
ANSWERS = {"2+2": "The answer is 4.", "France": "Paris.", "Italy": "Milan.", "3 times 3": "It is 6.",
           "planet": "Saturn, I think.", "sky": "The sky is blue.", "add 3 and 5": "3 + 5 = 8"}


def write_logs(out: Path) -> dict[str, Path]:
    """Write the logs under ``out``; returns {"eval": …, "json": …, "chunked": …}."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import (ChatCompletionChoice, ChatMessageAssistant, ChatMessageUser,
                                  GenerateConfig, Logprob, Logprobs, ModelOutput, ModelUsage,
                                  TopLogprob, get_model)
    from inspect_ai.scorer import Score, Target, includes, mean, scorer
    from inspect_ai.solver import Generate, TaskState, solver, use_tools
    from inspect_ai.tool import tool

    @tool
    def add():
        async def execute(x: int, y: int):
            """Add two numbers.

            Args:
                x: The first number.
                y: The second number.
            """
            return x + y

        return execute

    def reply(input, tools, tool_choice, config) -> ModelOutput:
        turn = sum(1 for m in input if m.role == "assistant")
        question = next((m.text for m in input if m.role == "user"), "")
        if "add 3 and 5" in question and not any(m.role == "tool" for m in input):
            out = ModelOutput.for_tool_call(model="mock", tool_name="add", tool_arguments={"x": 3, "y": 5})
            out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
            return out
        text = next((v for k, v in ANSWERS.items() if k in question), f"Still working, turn {turn + 1}.")
        tokens = text.split(" ")
        lp = Logprobs(content=[
            Logprob(token=t, logprob=-0.05 * (i + 1 + turn),
                    top_logprobs=[TopLogprob(token=t, logprob=-0.05 * (i + 1 + turn)),
                                  TopLogprob(token="~", logprob=-3.0 + 0.1 * i)])
            for i, t in enumerate(tokens)])
        msg = ChatMessageAssistant(content=text, model="mock", source="generate")
        return ModelOutput(model="mock", choices=[ChatCompletionChoice(message=msg, stop_reason="stop",
                                                                      logprobs=lp)],
                           usage=ModelUsage(input_tokens=10, output_tokens=len(tokens),
                                            total_tokens=10 + len(tokens)))

    @solver
    def answer_with_confidence():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if state.metadata.get("fail_epoch") == state.epoch:
                raise RuntimeError("simulated crash")
            turns = state.metadata["turns"]
            for i in range(turns):
                state = await generate(state)
                last = state.messages[-1]
                last.metadata = {**(last.metadata or {}), "confidence": round(0.9 - 0.2 * i, 2)}
                if i < turns - 1:
                    state.messages.append(ChatMessageUser(content="Go on."))
            return state

        return solve

    @scorer(metrics=[mean()])
    def assistant_turns():
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value=float(sum(m.role == "assistant" for m in state.messages)))

        return score

    samples = [
        Sample(id="q1", input="What is 2+2?", target="4", metadata={"turns": 1}),
        Sample(id="q2", input="What is the capital of France?", target="Paris", metadata={"turns": 2}),
        Sample(id="q3", input="What is the capital of Italy?", target="Rome", metadata={"turns": 2}),
        Sample(id="q4", input="What is 3 times 3?", target="9", metadata={"turns": 1}),
        Sample(id="q5", input="Which planet is largest?", target="Jupiter", metadata={"turns": 3}),
        Sample(id="q6", input="What colour is the sky?", target="blue", metadata={"turns": 1}),
        Sample(id="long", input="Tell me everything.", target="42", metadata={"turns": 4}),
        Sample(id="tool", input="Please add 3 and 5.", target="8", metadata={"turns": 1}),
        Sample(id="err", input="What is 2+2, again?", target="4", metadata={"turns": 1, "fail_epoch": 2}),
    ]
    task = Task(dataset=samples, solver=[use_tools([add()]), answer_with_confidence()],
                scorer=[includes(), assistant_turns()], epochs=2, message_limit=6, fail_on_error=False,
                name="tiny_agent")
    model = get_model("mockllm/model", custom_outputs=reply,
                      config=GenerateConfig(logprobs=True, top_logprobs=2))
    paths = {}
    for fmt in ("eval", "json"):
        logs = eval(task, model=model, log_dir=str(out / fmt), log_format=fmt, display="none")
        paths[fmt] = Path(logs[0].location)
    from inspect_ai.log._recorders.chunked.convert import convert_eval_logs_to_chunked

    convert_eval_logs_to_chunked(str(paths["eval"]), str(out / "chunked"))
    paths["chunked"] = next((out / "chunked").glob("*.eval"))
    return paths


def write_logs_in_subprocess(out: Path) -> dict[str, Path]:
    """:func:`write_logs` in a fresh process (inspect_ai runs its own event loop, which cannot
    start inside another one, e.g. Playwright's)."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, __file__, str(out)], capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise RuntimeError(f"writing the Inspect logs failed:\n{done.stderr[-2000:]}")
    return {k: Path(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps({k: str(v) for k, v in write_logs(Path(sys.argv[1])).items()}))

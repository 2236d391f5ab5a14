"""Confidence elicited while an Inspect AI agent runs (docs/forecasts.md §2).

After each assistant turn of the agent, P(eventual success) is asked of

- the acting model itself (``judge=None``): the self-report prompt as one more user turn, on a copy
  of the conversation, so neither the question nor the answer is left in the agent's conversation;
- or a separate judge model (``judge="provider/model"`` or a ``Model``): the judge prompt with the
  transcript so far, H_t, rendered as text (:func:`tpsviz.io.harness.transcripts.render_messages`, the replay's renderer).

The number goes into that assistant message's metadata under
:data:`tpsviz.core.schema.ELICITED_KEY` (None when the reply held no usable probability, the
problem then under ``ELICITED_PROBLEM_KEY``), which the Inspect reader finds without options (the
predictor ``conf_elicited``). The sample's store keeps the counts under :data:`COUNTS_KEY`.

Two entry points, for the two ways Inspect agents call their model:

- :func:`confidence_model`, for ``react(model=confidence_model())``: react's documented hook, an
  agent that makes each of its model calls;
- :func:`elicit_confidence`, a solver wrapper for solvers that call ``generate`` (``generate()``,
  ``use_tools`` + ``generate()``, a custom loop): each ``generate`` call becomes generate → ask →
  run the tools, the loop of ``generate(tool_calls="loop")`` with the question inside.

This module imports inspect_ai at its top: it is imported only by a user's Inspect task, never by
``import tpsviz``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.model import (ChatMessage, ChatMessageAssistant, ChatMessageTool, ChatMessageUser, Model,
                              execute_tools, get_model)
from inspect_ai.solver import Generate, Solver, TaskState, chain, solver
from inspect_ai.tool import Tool, ToolFunction
from inspect_ai.log import transcript
from inspect_ai.util import LimitExceededError, store

from tpsviz.core.schema import ELICITED_KEY, ELICITED_PROBLEM_KEY
from tpsviz.forecasts.prompts import Prompts, load_prompts
from tpsviz.forecasts.replies import Reply, parse_probability
from tpsviz.io.harness.transcripts import render_messages

__all__ = ["COUNTS_KEY", "PROVIDER_ERROR", "Elicitor", "confidence_model", "elicit_confidence"]

#: the sample-store key of the counts: ``{"mode", "judge", "asked", "missing", "problems"}``
COUNTS_KEY = "tpsviz_confidence_counts"
#: the problem recorded when the question itself failed (the provider's error, after inspect_ai's
#: retries): the step's value is missing and the agent's run goes on
PROVIDER_ERROR = "provider error"


class Elicitor:
    """Asks for P(eventual success) after an assistant turn and records the answer.

    Parameters
    ----------
    judge : str or Model, optional
        A separate judge model; None asks the acting model (self-report).
    prompts : Prompts, str or Path, optional
        The prompt text, or the TOML file to read it from (default ``prompts.toml``).
    """

    def __init__(self, judge: str | Model | None = None, prompts: Prompts | str | Path | None = None):
        self.judge = judge
        self.prompts = prompts if isinstance(prompts, Prompts) else load_prompts(prompts)

    @property
    def mode(self) -> str:
        """``self_report`` or ``judge``."""
        return "self_report" if self.judge is None else "judge"

    def self_report_input(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """The acting model's question: the conversation, a result for each tool call of the last
        turn that has not run yet (:attr:`Prompts.pending_tool`), and the self-report prompt."""
        out = list(messages)
        last = out[-1]
        if isinstance(last, ChatMessageAssistant):
            for call in last.tool_calls or ():
                out.append(ChatMessageTool(content=self.prompts.pending_tool, tool_call_id=call.id,
                                           function=call.function))
        out.append(ChatMessageUser(content=self.prompts.self_report))
        return out

    def judge_input(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """The judge's question: the judge prompt with H_t rendered as text."""
        transcript, _ = render_messages([m.model_dump(exclude_none=True) for m in messages])
        return [ChatMessageUser(content=self.prompts.judge_prompt(transcript))]

    async def ask(self, messages: list[ChatMessage], tools: list, model: str | Model | None = None) -> Reply:
        """Ask about the last message of ``messages`` (an assistant turn) and record the answer.

        Parameters
        ----------
        messages : list of ChatMessage
            The transcript prefix H_t, ending with the agent's t-th assistant message; it is read,
            never changed, apart from that message's metadata.
        tools : list
            The agent's tools (the acting model is given them with ``tool_choice="none"``: a
            provider refuses tool calls in a conversation without the tools' definitions).
        model : str or Model, optional
            The acting model (default: the model being evaluated).

        Returns
        -------
        Reply
        """
        message = messages[-1]
        try:
            if self.judge is None:
                output = await get_model(model).generate(self.self_report_input(messages), tools=tools,
                                                         tool_choice="none")
            else:
                output = await get_model(self.judge).generate(self.judge_input(messages))
            reply = parse_probability(output.completion)
        except LimitExceededError:
            raise  # the sample's own limits stop the run, as they would without the question
        except Exception as exc:  # noqa: BLE001 - a failed question must not fail the agent's run
            # after inspect_ai's own retries: the step's value is missing, with the error's type
            # only (its text may quote the conversation)
            transcript().info(f"tpsviz: the confidence question failed ({type(exc).__name__}); "
                              "the step's value is missing")
            reply = Reply(None, PROVIDER_ERROR)
        meta = dict(message.metadata or {})
        meta[ELICITED_KEY] = reply.value
        if reply.problem:
            meta[ELICITED_PROBLEM_KEY] = reply.problem
        else:
            meta.pop(ELICITED_PROBLEM_KEY, None)
        message.metadata = meta
        self.count(reply)
        return reply

    def count(self, reply: Reply) -> dict:
        """Add one answer to the sample's counts (:data:`COUNTS_KEY` in its store); returns them."""
        s = store()
        old = s.get(COUNTS_KEY) or {}
        problems = dict(old.get("problems") or {})
        if reply.problem:
            problems[reply.problem] = problems.get(reply.problem, 0) + 1
        judge = self.judge if isinstance(self.judge, str) or self.judge is None else str(self.judge)
        counts = {"mode": self.mode, "judge": judge, "asked": int(old.get("asked", 0)) + 1,
                  "missing": int(old.get("missing", 0)) + (reply.value is None), "problems": problems}
        s.set(COUNTS_KEY, counts)
        return counts


def _elicitor(judge, prompts) -> Elicitor:
    return judge if isinstance(judge, Elicitor) else Elicitor(judge, prompts)


@agent
def confidence_model(model: str | Model | None = None, *, judge: str | Model | None = None,
                     prompts: Prompts | str | Path | None = None) -> Agent:
    """The model of a ``react`` agent, asked for P(eventual success) after each of its turns.

    Use it as ``react(tools=[…], model=confidence_model())``: react calls it for every turn; it
    generates the turn with ``model`` (default: the model being evaluated), appends it, then asks
    (:class:`Elicitor`). React's ``retry_refusals`` and ``compaction`` apply only to its own
    model calls, not to an agent given as its model.

    Parameters
    ----------
    model : str or Model, optional
        The acting model.
    judge : str or Model, optional
        A separate judge model; None asks the acting model.
    prompts : Prompts, str or Path, optional
        The prompt text or its TOML file (default ``tpsviz/forecasts/prompts.toml``).

    Returns
    -------
    Agent
    """
    elicitor = _elicitor(judge, prompts)

    async def execute(state: AgentState, tools: list[Tool]) -> AgentState:
        """Generate the agent's next turn and ask for its probability of success.

        Args:
            state: The agent's state.
            tools: The agent's tools.
        """
        output = await get_model(model).generate(state.messages, tools)
        state.output = output
        state.messages.append(output.message)
        await elicitor.ask(state.messages, tools, model)
        return state

    return execute


async def generate_and_ask(state: TaskState, generate: Generate, elicitor: Elicitor,
                           tool_calls: Literal["loop", "single", "none"] = "loop", **config) -> TaskState:
    """``generate(state, tool_calls, **config)`` with a question after every assistant turn.

    The loop of Inspect's own ``generate``: the model's turn (``generate(tool_calls="none")``),
    the question, then the turn's tool calls (``execute_tools``), until a turn calls no tool, the
    sample is completed, or after one round when ``tool_calls="single"``. A forced ``tool_choice``
    applies to the first turn only, as in Inspect's loop.

    Returns
    -------
    TaskState
    """
    forced = state.tool_choice
    try:
        while True:
            before = len(state.messages)
            state = await generate(state, tool_calls="none", **config)
            message = state.messages[-1] if len(state.messages) > before else None
            if isinstance(message, ChatMessageAssistant):
                await elicitor.ask(state.messages, state.tools)
            if state.completed or tool_calls == "none" or message is None or not message.tool_calls:
                return state
            results, output = await execute_tools(state.messages, state.tools, config.get("max_tool_output"))
            state.messages.extend(results)
            if output is not None:
                state.output = output
            if state.completed or tool_calls == "single":
                return state
            if isinstance(state.tool_choice, ToolFunction):
                state.tool_choice = "auto"
    finally:
        state.tool_choice = forced


@solver
def elicit_confidence(inner: Solver | list[Solver], *, judge: str | Model | None = None,
                      prompts: Prompts | str | Path | None = None) -> Solver:
    """Wrap a solver so that every assistant turn its ``generate`` calls produce is followed by a
    question for P(eventual success) (:class:`Elicitor`).

    For solvers that call the ``generate`` they are given (``generate()``, ``use_tools(…)`` then
    ``generate()``, a custom loop). An agent that calls its model itself (``react``) takes
    :func:`confidence_model` as its model instead; ``basic_agent`` calls ``get_model()`` directly
    and is not covered.

    Parameters
    ----------
    inner : Solver or list of Solver
        The solver(s) to run (a list is chained).
    judge, prompts
        As for :func:`confidence_model`: the judge model (None: the acting model is asked) and
        the prompt text or its file.

    Returns
    -------
    Solver
    """
    run = chain(*inner) if isinstance(inner, list) else inner
    elicitor = _elicitor(judge, prompts)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        async def asking(state: TaskState, tool_calls: Literal["loop", "single", "none"] = "loop",
                         **config) -> TaskState:
            return await generate_and_ask(state, generate, elicitor, tool_calls, **config)

        return await run(state, asking)

    return solve

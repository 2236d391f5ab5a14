"""An Inspect AI task whose agent is asked P(eventual success) after each of its turns (tpsviz
issue 34, docs/forecasts.md §2).

Run it with any model Inspect reaches, then score the log::

    inspect eval examples/inspect_elicit.py --model openai/gpt-4o-mini
    inspect eval examples/inspect_elicit.py --model openai/gpt-4o-mini -T judge=anthropic/claude-3-5-haiku-latest
    inspect eval examples/inspect_elicit.py --model openai/gpt-4o-mini -T agent=generate
    python -m tpsviz score logs/<the new log>.eval

Task options (``-T name=value``):

- ``agent``: ``react`` (default; the question is asked by :func:`confidence_model`, react's model
  hook) or ``generate`` (``use_tools`` + ``generate()`` wrapped by :func:`elicit_confidence`);
- ``judge``: a separate judge model (default: the acting model reports on itself);
- ``prompts``: a TOML file with your own prompt text (a copy of tpsviz/forecasts/prompts.toml);
- ``epochs``: trials per question (more runs per task for the ``ref:task`` reference).
"""

from __future__ import annotations

import ast
import operator

from inspect_ai import Task, task
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, system_message, use_tools
from inspect_ai.tool import tool

from tpsviz.forecasts.elicit import confidence_model, elicit_confidence

#: questions that need a few tool calls; some are easy to get wrong
QUESTIONS = [
    ("What is 37 * 43 + 12?", "1603"),
    ("What is (1234 - 567) * 8?", "5336"),
    ("What is 2 ** 20 - 1000?", "1047576"),
    ("What is 98765 // 123 + 4567 % 89?", "830"),
    ("A train covers 287 km in 3.5 hours. At that speed, how many km does it cover in 6 hours? "
     "Answer with a number.", "492"),
    ("What is the sum of the squares of 17, 23 and 31?", "1779"),
]

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
        ast.USub: operator.neg, ast.UAdd: operator.pos}


def _evaluate(node):
    """An arithmetic expression's value (numbers and + - * / // % ** only)."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 100:
            raise ValueError("exponent too large")
        return _OPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.operand))
    raise ValueError("only numbers and + - * / // % ** are allowed")


@tool
def calculator():
    async def execute(expression: str) -> str:
        """Evaluate an arithmetic expression.

        Args:
            expression: Numbers with + - * / // % ** and parentheses, e.g. "(3 + 4) * 2".
        """
        try:
            return str(_evaluate(ast.parse(expression, mode="eval")))
        except (SyntaxError, ValueError, ZeroDivisionError, OverflowError) as e:
            return f"error: {e}"

    return execute


@task
def inspect_elicit(agent: str = "react", judge: str | None = None, prompts: str | None = None,
                   epochs: int = 1) -> Task:
    """Arithmetic with a calculator tool; P(eventual success) elicited after every turn."""
    dataset = [Sample(id=f"q{i}", input=q, target=a) for i, (q, a) in enumerate(QUESTIONS, start=1)]
    if agent == "react":
        solver = react(tools=[calculator()], model=confidence_model(judge=judge, prompts=prompts))
    elif agent == "generate":
        solver = elicit_confidence([system_message("Use the calculator for every step, then give the "
                                                   "final number."),
                                    use_tools([calculator()]), generate()], judge=judge, prompts=prompts)
    else:
        raise ValueError(f"agent must be react or generate, not {agent!r}")
    return Task(dataset=dataset, solver=solver, scorer=includes(), epochs=epochs, message_limit=30)

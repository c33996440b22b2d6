"""A question a tool puts to the user before it can finish (confirm a clash, name a city).

A tool returns it in its result under `ask`; the run engine asks the user (buttons in the page,
as `ask_user` does), waits, and calls the tool once more with the answer, so the model never has
to tell the user to say a magic word (docs/tools.md, "Asking the user").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ASK = "ask"  # the key of a tool result that carries a question for the user


@dataclass(frozen=True)
class UserQuestion:
    """What to ask and how the answer goes back into the call: choosing `accept` runs it again
    with `confirm: true`; else (`answer_into`) the answer becomes that argument, or, with
    `values`, the value of the option chosen (another answer runs nothing)."""

    question: str
    options: list[str] = field(default_factory=list)
    accept: str = ""  # the option that confirms ("Save it anyway")
    answer_into: str = ""  # the argument the user's answer fills ("city", "task_id")
    values: list[Any] = field(default_factory=list)  # per option, what fills it (a task's id)

    def as_data(self) -> dict[str, Any]:
        """The question as a tool result carries it under `ask`."""
        return {
            "question": self.question,
            "options": list(self.options),
            "accept": self.accept,
            "answer_into": self.answer_into,
            "values": list(self.values),
        }


def question_of(result: Any) -> UserQuestion | None:
    """The question a tool's result asks the user, or None."""
    asked = result.get(ASK) if isinstance(result, dict) else None
    if not isinstance(asked, dict) or not isinstance(asked.get("question"), str):
        return None
    options = [str(o)[:200] for o in asked.get("options") or [] if str(o)][:10]
    accept, into = str(asked.get("accept") or ""), str(asked.get("answer_into") or "")
    values = list(asked.get("values") or [])
    if not asked["question"] or (accept not in options if accept else not into):
        return None  # neither a confirming option nor an argument to fill: nothing to ask
    if values and len(values) != len(options):
        return None
    return UserQuestion(asked["question"][:2000], options, accept, into, values)


def arguments_answered(
    question: UserQuestion, arguments: dict[str, Any], answer: str
) -> dict[str, Any] | None:
    """The call's arguments with the user's answer in them; None when the user declined."""
    if question.accept:
        return {**arguments, "confirm": True} if answer.strip() == question.accept else None
    answer = answer.strip()
    if question.values:
        if answer not in question.options:
            return None
        return {**arguments, question.answer_into: question.values[question.options.index(answer)]}
    return {**arguments, question.answer_into: answer} if answer else None

"""The judge model: grades an answer against a rubric through the official openai client
(any OpenAI-compatible server), configured apart from the agents (EVALS_JUDGE_*)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.translation import gettext

from delegation.evals.checks import ERROR, FAIL, PASS, UNAVAILABLE

# The first line names the grader (the test fake tells agents apart by it).
SYSTEM_PROMPT = (
    "You are eval-judge.\n"
    "You grade one answer of an AI assistant against a rubric written by the assistant's "
    "admins. Judge only what the rubric asks. Reply with JSON only, no prose around it: "
    '{"pass": true or false, "score": a number from 0 to 1, "reason": "one sentence"}'
)
_JSON = re.compile(r"\{.*\}", re.S)


@dataclass(frozen=True)
class JudgeSettings:
    """Where the judge is and which model it is (api_key may be a placeholder for local
    servers that need none)."""

    model: str
    base_url: str
    api_key: str


def judge_settings(model: str = "") -> JudgeSettings | None:
    """The judge's settings, or None when no OpenAI-compatible server is configured."""
    base_url = settings.EVALS_JUDGE_BASE_URL or settings.OPENAI_BASE_URL
    api_key = settings.EVALS_JUDGE_API_KEY or settings.OPENAI_API_KEY
    if not (base_url or api_key):
        return None
    name = model or settings.EVALS_JUDGE_MODEL or settings.OPENAI_MODEL
    return JudgeSettings(model=name, base_url=base_url, api_key=api_key or "not-needed")


def rubric_grade(
    *, rubric: str, evidence: dict[str, Any], message: str, model: str = ""
) -> tuple[str, str]:
    """(status, detail) of one rubric: pass/fail with the judge's reason; `unavailable` when
    no judge is configured; `error` when the judge failed or answered garbage."""
    import openai  # here, not at the top: see agents/providers/openai_provider.py

    found = judge_settings(model)
    if found is None:
        return UNAVAILABLE, gettext(
            "No judge model is configured: set EVALS_JUDGE_API_KEY or EVALS_JUDGE_BASE_URL (or "
            "OPENAI_API_KEY / OPENAI_BASE_URL) to grade rubrics."
        )
    try:
        text = _ask(found, _prompt(rubric=rubric, evidence=evidence, message=message))
    except (openai.APIError, json.JSONDecodeError) as exc:  # a non-JSON chunk escapes the SDK
        return ERROR, f"The judge ({found.model}) failed: {type(exc).__name__}: {exc}"[:500]
    return _verdict(text, found.model)


def _prompt(*, rubric: str, evidence: dict[str, Any], message: str) -> str:
    tools = [
        f"{c['agent']}: {c['name']}({json.dumps(c['arguments'], ensure_ascii=False)})"
        for c in evidence.get("tool_calls", [])
    ]
    return (
        f"Rubric:\n{rubric}\n\n"
        f"User message:\n{message}\n\n"
        f"Experts asked: {', '.join(evidence.get('experts', [])) or 'none'}\n"
        f"Tools called: {'; '.join(tools) or 'none'}\n\n"
        f"Answer:\n{evidence.get('answer') or '(no answer)'}"
    )


def _ask(found: JudgeSettings, prompt: str) -> str:
    """The judge's reply text (streamed: some OpenAI-compatible servers only stream)."""
    import openai

    client = openai.OpenAI(
        base_url=found.base_url or None,
        api_key=found.api_key,
        timeout=settings.EVALS_JUDGE_TIMEOUT,
        max_retries=settings.OPENAI_MAX_RETRIES,
    )
    stream = client.chat.completions.create(
        model=found.model,
        messages=[
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": prompt},
        ],
        temperature=0,
        stream=True,
    )
    parts = []
    with stream:
        for chunk in stream:
            for choice in chunk.choices:
                if choice.delta and choice.delta.content:
                    parts.append(choice.delta.content)
    return "".join(parts)


def _verdict(text: str, model: str) -> tuple[str, str]:
    found = _JSON.search(text)
    try:
        body = json.loads(found.group(0)) if found else None
    except json.JSONDecodeError:
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("pass"), bool):
        return ERROR, f"The judge ({model}) did not answer with a verdict: {text[:200]!r}"
    reason = str(body.get("reason") or "").strip()[:500]
    score = body.get("score")
    scored = f" (score {score})" if isinstance(score, int | float) else ""
    return (PASS if body["pass"] else FAIL), f"{model}{scored}: {reason or 'no reason given'}"

"""Checking an agent's answer before its caller gets it: rules, then (optionally) a validator
model. A validator that fails means "trust", and that is recorded."""

from __future__ import annotations

import json
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db.models import F

from agents.providers import provider_for
from agents.providers.base import ModelRequest, whole_answer
from delegation.humans.activity import activity_record
from delegation.humans.models import ActivityKind, Verdict
from delegation.models import Run
from delegation.routing.stats import verdict_counted
from delegation.steps.citations import retrieved_passages
from delegation.steps.strict import run_is_strict
from delegation.tree.budget import budget_reserve_model_call, budget_state
from delegation.usage.services import usage_charge, usage_hold

logger = logging.getLogger(__name__)

EMPTY_MARK = "(The model returned an empty answer.)"  # what the runner writes for no answer
REFUSAL = re.compile(
    r"\b(?:I (?:can(?:no|')t|am (?:not able|unable) to|do(?:n't| not) (?:know|have))|"
    r"unable to (?:answer|help|find)|no (?:relevant )?information|sorry)\b"
    r"|无法|無法|不知道|抱歉|没有相关|沒有相關|不能回答",
    re.IGNORECASE,
)
VALIDATOR_PROMPT = (
    "You are the answer validator.\nYou check an expert's answer before it is used. Judge "
    "only whether the answer addresses the task (relevant, complete enough, not evasive); "
    'do not add facts. Reply with JSON only: {"valid": true or false, "issue": "<what is '
    'wrong; empty if valid>", "confidence": <0 to 1, how sure you are the answer is right>}'
)
_JSON = re.compile(r"\{.*\}", re.S)
_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="validator")


@dataclass
class Check:
    """One verdict: `valid`, the `issue` found, `confidence` (0-1), whether the validator
    failed (then the answer is trusted), and the fallback `outcome` applied later."""

    mode: str
    valid: bool
    issue: str = ""
    confidence: float | None = None
    validator_failed: bool = False
    outcome: str = ""
    verdict_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """What the run stores in `validation`."""
        return asdict(self)


def answers_checked(run: Run) -> bool:
    """Whether the run's agent has its answers checked (by rules, or rules and a model)."""
    return run.agent_config.get("validate_answers", "off") in ("rules", "model")


def answer_check(*, run: Run, answer: str) -> Check | None:
    """Judge the run's answer as its agent asks (None: validation is off); recorded as a
    Verdict and an activity row."""
    if not answers_checked(run):
        return None
    mode = run.agent_config["validate_answers"]
    issue = rules_issue(run=run, answer=answer)
    if issue:
        check = Check(mode=mode, valid=False, issue=issue, confidence=0.0)
    elif mode == "model":
        check = model_check(run=run, answer=answer)
    else:
        check = Check(mode="rules", valid=True, confidence=1.0)
    verdict = Verdict.objects.create(
        run=run,
        root_id=run.root_id_or_self,
        agent_name=run.agent_config["name"],
        mode=check.mode,
        valid=check.valid,
        issue=check.issue[:2000],
        confidence=check.confidence,
        validator_failed=check.validator_failed,
    )
    check.verdict_id = verdict.pk
    verdict_counted(run=run, valid=check.valid)  # (routing's statistics: once per verdict)
    # Counted on the turn's root, so the turn's rating reads the checks only when it has some.
    Run.objects.filter(pk=run.root_id_or_self).update(tree_checks=F("tree_checks") + 1)
    words = "valid" if check.valid else f"invalid: {check.issue}"
    if check.validator_failed:
        words = f"trusted (validator failed: {check.issue})"
    activity_record(
        kind=ActivityKind.VALIDATION,
        run=run,
        summary=f"{run.agent_config['display_name']}'s answer judged {words}",
        data=check.as_dict(),
    )
    return check


def rules_issue(*, run: Run, answer: str) -> str:
    """The first rule the answer breaks, as a sentence; "" when it passes them all."""
    config = run.agent_config
    text = answer.strip()
    if not text or text == EMPTY_MARK:
        return "The answer is empty."
    found_knowledge = retrieved_passages(run)
    if found_knowledge and REFUSAL.search(text[:300]):
        return "The answer refuses or says it does not know, although knowledge was found."
    if found_knowledge and run_is_strict(run) and not run.citations:
        return "In STRICT mode an answer must cite its knowledge, and this one cites none."
    low, high = config.get("answer_min_chars") or 0, config.get("answer_max_chars") or 0
    if low and len(text) < low:
        return f"The answer is {len(text)} characters; at least {low} are expected."
    if high and len(text) > high:
        return f"The answer is {len(text)} characters; at most {high} are allowed."
    return ""


def model_check(*, run: Run, answer: str) -> Check:
    """Ask the validator model; any failure (no budget, timeout, garbage) means trust."""
    config = run.agent_config
    try:
        provider = provider_for(config["provider"])
    except Exception as exc:  # a misconfigured provider: the validator cannot run
        return _trusted(f"validator unavailable: {exc}")
    if provider.name == "offline":  # no model to ask: the rules (passed) decide
        return Check(mode="rules", valid=True, confidence=1.0, issue="")
    root_id = run.root_id_or_self
    if not budget_reserve_model_call(
        root_id=root_id, limit=budget_state(root_id=root_id).max_model_calls
    ):
        return _trusted("the turn has no model call left for the validator")
    request = ModelRequest(
        model=config.get("validator_model") or config["model"] or settings.OPENAI_MODEL,
        messages=[
            {"role": "system", "content": VALIDATOR_PROMPT},
            {"role": "user", "content": f"Task:\n{run.task[:6000]}\n\nAnswer:\n{answer[:8000]}"},
        ],
        temperature=0,
        max_tokens=200,
        base_url=config.get("base_url", ""),
        api_key_env=config.get("api_key_env", ""),
    )
    try:
        hold = usage_hold(run=run, provider=provider.name, request=request)
        text, usage = _pool.submit(whole_answer, provider, request).result(
            timeout=settings.HUMANS_VALIDATOR_TIMEOUT
        )
    except FutureTimeout:
        return _trusted("the validator did not answer in time")
    except Exception as exc:
        return _trusted(f"{type(exc).__name__}: {exc}"[:300])
    usage_charge(run=run, hold=hold, usage=usage, text=text)
    try:
        return parse_verdict(text)
    except ValueError as exc:
        return _trusted(str(exc))


def parse_verdict(text: str) -> Check:
    """The validator's `{valid, issue, confidence}`; ValueError when it is not that."""
    found = _JSON.search(text)
    if not found:
        raise ValueError("the validator's answer is not JSON")
    try:
        body = json.loads(found.group(0))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the validator's answer is not JSON: {exc.msg}") from None
    if not isinstance(body, dict) or not isinstance(body.get("valid"), bool):
        raise ValueError("the validator's answer has no boolean 'valid'")
    issue = body.get("issue") if isinstance(body.get("issue"), str) else ""
    confidence = body.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        confidence = 1.0 if body["valid"] else 0.0
    confidence = min(1.0, max(0.0, float(confidence)))
    if not body["valid"] and not issue.strip():
        issue = "The validator judged the answer invalid without saying why."
    return Check(
        mode="model", valid=body["valid"], issue=issue.strip()[:1000], confidence=confidence
    )


def _trusted(reason: str) -> Check:
    logger.warning("validator failed (%s): the answer is trusted", reason)
    return Check(mode="model", valid=True, issue=reason, confidence=None, validator_failed=True)


def is_low(check: dict[str, Any] | None) -> bool:
    """Whether a stored verdict makes its answer low confidence (it needs a review)."""
    if not check:
        return False
    if check.get("outcome") in ("low_confidence", "unanswered"):
        return True
    confidence = check.get("confidence")
    return (
        check.get("valid") is True
        and confidence is not None
        and confidence < settings.HUMANS_LOW_CONFIDENCE
    )

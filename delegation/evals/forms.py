"""Admin forms of evals: a case with one field per expectation, the run-a-suite form, and the
publish-anyway form. Rules come from the services' own checks, so admin and API agree."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.text import format_lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.models import AgentRevision
from delegation.evals.expectations import EXPERT_MATCHES, FLAGS
from delegation.evals.models import EvalCase
from delegation.evals.services import case_clean
from delegation.routing.models import Mode

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise  # dev only: the stubs' name for str or lazy str

NONE_WORD = "none"  # in "experts asked": no expert at all


def _words(text: str) -> list[str]:
    """Comma- or newline-separated words."""
    return [w.strip() for w in text.replace("\n", ",").split(",") if w.strip()]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _json_field(label: StrOrPromise, help_text: StrOrPromise) -> forms.CharField:
    return forms.CharField(
        label=label,
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80, "class": "vLargeTextField"}),
        help_text=help_text,
    )


class EvalCaseForm(forms.ModelForm):
    """A case: the input, who sends it, and each expectation as its own optional field."""

    prior_turns_text = _json_field(
        _("earlier turns"), _('JSON: [{"user": "…", "assistant": "…"}, …] (blank: none).')
    )
    flags_choice = forms.MultipleChoiceField(
        label=_("routing flags"),
        required=False,
        choices=[(f, f) for f in FLAGS],
        widget=forms.CheckboxSelectMultiple,
    )
    permissions_text = forms.CharField(
        label=_("user permissions"),
        required=False,
        help_text=_("Comma-separated app_label.codename, e.g. reminders.view_task."),
    )
    mode = forms.ChoiceField(
        label=_("routed mode"), required=False, choices=[("", "—"), *Mode.choices]
    )
    experts = forms.CharField(
        label=_("experts asked"),
        required=False,
        help_text=format_lazy(
            _("Agent names, comma-separated; “{none}” for no expert."), none=NONE_WORD
        ),
    )
    experts_match = forms.ChoiceField(
        label=_("experts match"),
        choices=[(m, m) for m in EXPERT_MATCHES],
        initial="set",
        help_text=_(
            "set: exactly these, any order; ordered: exactly these, in this order; "
            "includes: at least these."
        ),
    )
    tools_called = forms.CharField(label=_("tools called"), required=False)
    tools_not_called = forms.CharField(label=_("tools not called"), required=False)
    no_tools = forms.BooleanField(
        label=_("no tool"),
        required=False,
        help_text=_("No tool call at all (delegations count)."),
    )
    tool_arguments = _json_field(
        _("tool arguments"),
        _(
            'JSON: [{"tool": "create_task", "arguments": {"date": "明天"}}]: some call of the tool '
            "has at least these arguments."
        ),
    )
    answer_contains = forms.CharField(
        label=_("answer contains"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("One per line; case and Traditional/Simplified Chinese do not matter."),
    )
    answer_not_contains = forms.CharField(
        label=_("answer does not contain"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("One per line."),
    )
    answer_regex = forms.CharField(label=_("answer matches"), required=False, max_length=500)
    cited_documents = forms.CharField(
        label=_("cites documents"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("Document titles, one per line: the answer must cite each."),
    )
    max_model_calls = forms.IntegerField(label=_("max model calls"), required=False)
    max_latency_seconds = forms.FloatField(label=_("max latency (s)"), required=False)
    max_cost = forms.DecimalField(label=_("max cost"), required=False, decimal_places=6)
    rubric = forms.CharField(
        label=_("rubric"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_(
            "Graded by the judge model, e.g. “answers politely and refuses off-topic requests”."
        ),
    )
    human_decision = forms.ChoiceField(
        label=_("waits for a person"),
        required=False,
        choices=[("", "—"), ("approve", _("approve")), ("reject", _("reject"))],
        help_text=_(
            "The turn must wait for a person at least once; each wait is decided so: approve "
            "(a question gets the answer below) or reject. Blank: waits are rejected, not "
            "expected."
        ),
    )
    human_answer = forms.CharField(
        label=_("answer to a person's question"),
        required=False,
        max_length=4000,
        help_text=_("What an approved question is answered (blank: “yes”)."),
    )

    class Meta:
        model = EvalCase
        fields = ["suite", "name", "order", "enabled", "message", "user_groups", "user_timezone"]

    EXPECT_FIELDS = [
        "mode",
        "experts",
        "experts_match",
        "tools_called",
        "tools_not_called",
        "no_tools",
        "tool_arguments",
        "answer_contains",
        "answer_not_contains",
        "answer_regex",
        "cited_documents",
        "max_model_calls",
        "max_latency_seconds",
        "max_cost",
        "rubric",
        "human_decision",
        "human_answer",
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        case = self.instance
        if case.pk:
            self.initial.update(_initial(case))

    def clean(self) -> dict[str, Any]:
        """Build the case's JSON fields from the form and check them with the service's rules."""
        data = super().clean() or {}
        try:
            prior = json.loads(data.get("prior_turns_text") or "[]")
            arguments = json.loads(data.get("tool_arguments") or "null")
        except json.JSONDecodeError as exc:
            raise ValidationError(gettext("Not JSON: %(error)s") % {"error": exc}) from exc
        raw = {
            "message": data.get("message") or "",
            "prior_turns": prior,
            "flags": {f: True for f in data.get("flags_choice") or []},
            "user_permissions": _words(data.get("permissions_text") or ""),
            "user_timezone": data.get("user_timezone") or "",
            "expect": _expect(data, arguments),
        }
        if (data.get("human_answer") or "").strip() and data.get("human_decision") != "approve":
            self.add_error("human_answer", gettext("An answer needs “approve” above."))
        try:
            self.case_data = case_clean(raw)
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                target = _FIELD_OF.get(field, field if field in self.fields else None)
                self.add_error(target, messages)
        return data


_FIELD_OF = {
    "prior_turns": "prior_turns_text",
    "flags": "flags_choice",
    "user_permissions": "permissions_text",
    "human": "human_decision",
    "expect": None,
}


def _expect(data: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """The expectations the form's fields describe (blank fields: not expected)."""
    expect: dict[str, Any] = {}
    if data.get("mode"):
        expect["mode"] = data["mode"]
    experts = _words(data.get("experts") or "")
    if experts:
        names = [] if experts == [NONE_WORD] else experts
        expect["experts"] = {"names": names, "match": data.get("experts_match") or "set"}
    for key in ("tools_called", "tools_not_called"):
        if _words(data.get(key) or ""):
            expect[key] = _words(data[key])
    if data.get("no_tools"):
        expect["no_tools"] = True
    if arguments is not None:
        expect["tool_arguments"] = arguments
    for key in ("answer_contains", "answer_not_contains", "cited_documents"):
        if _lines(data.get(key) or ""):
            expect[key] = _lines(data[key])
    for key in ("answer_regex", "rubric"):
        if (data.get(key) or "").strip():
            expect[key] = data[key].strip()
    for key in ("max_model_calls", "max_latency_seconds"):
        if data.get(key) is not None:
            expect[key] = data[key]
    if data.get("max_cost") is not None:
        expect["max_cost"] = str(data["max_cost"])
    if data.get("human_decision"):
        answer = (data.get("human_answer") or "").strip()
        expect["human"] = {
            "decision": data["human_decision"],
            **({"answer": answer} if answer else {}),
        }
    return expect


def _initial(case: EvalCase) -> dict[str, Any]:
    """The form's extra fields from a stored case."""
    expect = case.expect or {}
    experts = expect.get("experts")
    initial: dict[str, Any] = {
        "prior_turns_text": json.dumps(case.prior_turns, ensure_ascii=False)
        if case.prior_turns
        else "",
        "flags_choice": [f for f, on in (case.flags or {}).items() if on],
        "permissions_text": ", ".join(case.user_permissions or []),
        "mode": expect.get("mode", ""),
        "experts": (", ".join(experts["names"]) or NONE_WORD) if experts else "",
        "experts_match": (experts or {}).get("match", "set"),
        "tools_called": ", ".join(expect.get("tools_called", [])),
        "tools_not_called": ", ".join(expect.get("tools_not_called", [])),
        "no_tools": bool(expect.get("no_tools")),
        "tool_arguments": json.dumps(expect["tool_arguments"], ensure_ascii=False)
        if "tool_arguments" in expect
        else "",
        "answer_regex": expect.get("answer_regex", ""),
        "rubric": expect.get("rubric", ""),
        "max_model_calls": expect.get("max_model_calls"),
        "max_latency_seconds": expect.get("max_latency_seconds"),
        "max_cost": expect.get("max_cost"),
        "human_decision": (expect.get("human") or {}).get("decision", ""),
        "human_answer": (expect.get("human") or {}).get("answer", ""),
    }
    for key in ("answer_contains", "answer_not_contains", "cited_documents"):
        initial[key] = "\n".join(expect.get(key, []))
    return initial


class RunSuiteForm(forms.Form):
    """What to run a suite against."""

    revision = forms.ModelChoiceField(
        queryset=AgentRevision.objects.select_related("agent").order_by("agent__name", "-version"),
        required=False,
        empty_label=_("current versions of every agent"),
        label=_("agents"),
        help_text=_("Or one agent as it was at a stored revision (the others stay current)."),
    )
    model = forms.CharField(
        label=_("model"),
        required=False,
        max_length=200,
        help_text=_(
            "Blank: each agent's own model. “offline”: the built-in model. Or a model "
            "name every agent of the turn uses (through the OpenAI-compatible provider)."
        ),
    )


class PublishAnywayForm(forms.Form):
    """Publishing a held draft below the threshold: who and why are recorded."""

    reason = forms.CharField(
        label=_("reason"),
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
        help_text=_("Recorded with the revision, e.g. “case 3 is flaky, tracked in #123”."),
    )

"""Admin for evals: suites with their cases, cases with one field per expectation, eval runs
as reports with a progress bar (a meta refresh: no script). The gate's drafts: admin_gate."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from config.errors import AppError
from delegation.evals import admin_gate  # noqa: F401  (registers the gate's pages)
from delegation.evals.admin_pages import REFRESH_SECONDS, page_context
from delegation.evals.forms import EvalCaseForm, RunSuiteForm
from delegation.evals.models import (
    EvalCase,
    EvalRun,
    EvalRunStatus,
    EvalSuite,
    Trigger,
)
from delegation.evals.selectors import (
    previous_run,
    result_rows,
    run_diff,
    run_progress,
)
from delegation.evals.services import (
    SUITE_FIELDS,
    case_clean,
    case_save,
    eval_run_cancel,
    eval_run_kick,
    eval_run_start,
    suite_save,
)


def run_link(run: EvalRun | None) -> str:
    """A run as "5/6 (83%) passed" linking to its report."""
    if run is None:
        return "—"
    url = reverse("admin:evals_evalrun_change", args=[run.pk])
    if not run.is_final:
        status = run.get_status_display()
        return format_html('<a href="{}">{} ({}/{})</a>', url, status, run.done, run.total)
    if run.succeeded:
        verdict = gettext("passed")
    elif run.status == EvalRunStatus.CANCELLED:
        verdict = gettext("cancelled")
    else:
        verdict = gettext("failed")
    return format_html(
        '<a href="{}">{}/{} ({}%) {}</a>', url, run.passed, run.total, run.pass_rate, verdict
    )


class EvalCaseInlineForm(forms.ModelForm):
    """A case's row in its suite: the message is checked like everywhere else."""

    class Meta:
        model = EvalCase
        fields = ["order", "name", "message", "enabled"]
        widgets = {"message": forms.TextInput(attrs={"size": 60})}

    def clean_message(self) -> str:
        """The service's message rules."""
        message = self.cleaned_data["message"]
        try:
            case_clean({"message": message})
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["message"]) from exc
        return message


class EvalCaseInline(admin.TabularInline):
    """The suite's cases; expectations are edited on each case's own page."""

    model = EvalCase
    form = EvalCaseInlineForm
    fields = ["order", "name", "message", "enabled", "expectations"]
    readonly_fields = ["expectations"]
    extra = 0
    show_change_link = True

    @admin.display(description=_("expectations"))
    def expectations(self, obj: EvalCase) -> str:
        """Which expectations the case has."""
        return ", ".join(sorted(obj.expect or {})) or gettext("— (add them on the case's page)")


@admin.register(EvalSuite)
class EvalSuiteAdmin(admin.ModelAdmin):
    """Suites: their cases inline, a button to run them, their last result."""

    list_display = ["name", "agent", "case_count", "pass_threshold", "publish_gate", "last_run"]
    list_filter = ["publish_gate", "agent"]
    search_fields = ["name", "description"]
    filter_horizontal = ["gate_agents"]
    inlines = [EvalCaseInline]
    change_form_template = "admin/evals/evalsuite/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[EvalSuite]:
        """With the number of cases."""
        return super().get_queryset(request).select_related("agent").annotate(n=Count("cases"))

    @admin.display(description=_("cases"), ordering="n")
    def case_count(self, obj: EvalSuite) -> int:
        """How many cases the suite has."""
        return obj.n

    @admin.display(description=_("last run"))
    def last_run(self, obj: EvalSuite) -> str:
        """The latest run's result."""
        return run_link(obj.runs.order_by("-created_at").first())

    def save_model(self, request: HttpRequest, obj: EvalSuite, form: Any, change: bool) -> None:
        """Through suite_save (the gated agents with it)."""
        data = {f: form.cleaned_data[f] for f in SUITE_FIELDS if f in form.cleaned_data}
        suite_save(suite=obj, data=data)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """The gated agents were saved with the suite; only the cases are left."""
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def get_urls(self) -> list[Any]:
        """Adds the run-a-suite page."""
        extra = [
            path(
                "<int:suite_id>/run/",
                self.admin_site.admin_view(self.run_view),
                name="evals_evalsuite_run",
            )
        ]
        return extra + super().get_urls()

    def run_view(self, request: HttpRequest, suite_id: int) -> HttpResponse:
        """GET: what to run against; POST: start the run and show its report."""
        suite = get_object_or_404(EvalSuite, pk=suite_id)
        if not (
            self.has_view_permission(request, suite) and request.user.has_perm("evals.add_evalrun")
        ):
            raise PermissionDenied
        form = RunSuiteForm(request.POST if request.method == "POST" else None)
        if request.method == "POST" and form.is_valid():
            try:
                run = eval_run_start(
                    suite=suite,
                    user=request.user,
                    trigger=Trigger.ADMIN,
                    revision=form.cleaned_data["revision"],
                    model=form.cleaned_data["model"].strip(),
                )
            except AppError as exc:
                messages.error(request, exc.message)
            else:
                return HttpResponseRedirect(reverse("admin:evals_evalrun_change", args=[run.pk]))
        title = gettext("Run %(suite)s") % {"suite": suite.name}
        context = page_context(self, request, title, suite=suite, form=form)
        return TemplateResponse(request, "admin/evals/evalsuite/run_form.html", context)


@admin.register(EvalCase)
class EvalCaseAdmin(admin.ModelAdmin):
    """One case: input, user and flags, and each expectation as its own optional field."""

    form = EvalCaseForm
    list_display = ["name", "suite", "order", "enabled", "expectation_keys"]
    list_filter = ["suite", "enabled"]
    search_fields = ["name", "message"]
    filter_horizontal = ["user_groups"]
    fieldsets = [
        (None, {"fields": ["suite", "name", "order", "enabled", "message", "prior_turns_text"]}),
        (
            _("Who sends it"),
            {"fields": ["user_groups", "permissions_text", "user_timezone", "flags_choice"]},
        ),
        (_("Expectations (each optional)"), {"fields": EvalCaseForm.EXPECT_FIELDS}),
    ]

    @admin.display(description=_("expectations"))
    def expectation_keys(self, obj: EvalCase) -> str:
        """Which expectations the case has."""
        return ", ".join(sorted(obj.expect or {})) or "—"

    def save_model(self, request: HttpRequest, obj: EvalCase, form: Any, change: bool) -> None:
        """Through case_save, with the JSON fields the form built and checked."""
        fields = ["suite", "name", "order", "enabled", "user_groups", "user_timezone"]
        data = {f: form.cleaned_data[f] for f in fields if f in form.cleaned_data}
        case_save(case=obj, data={**data, **form.case_data})

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """The groups were saved by case_save."""
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)


@admin.register(EvalRun)
class EvalRunAdmin(admin.ModelAdmin):
    """Eval runs as reports: progress, pass rate, the diff against the previous run, and each
    case with its verdicts and evidence."""

    list_display = [
        "suite",
        "target_shown",
        "status",
        "score",
        "trigger",
        "created_by",
        "created_at",
    ]
    list_filter = ["suite", "status", "trigger", "succeeded"]
    search_fields = ["suite__name", "target"]

    @admin.display(description=_("target"), ordering="target")
    def target_shown(self, obj: EvalRun) -> str:
        """What ran, in the admin's language."""
        return obj.target_text

    @admin.display(description=_("result"))
    def score(self, obj: EvalRun) -> str:
        """Passed out of all, with the verdict."""
        return run_link(obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Runs start from a suite's page (or run_evals, or the publish gate)."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Records: never edited."""
        return False

    def get_urls(self) -> list[Any]:
        """Adds cancel and run-again."""
        view = self.admin_site.admin_view
        extra = [
            path("<uuid:run_id>/cancel/", view(self.cancel_view), name="evals_evalrun_cancel"),
            path("<uuid:run_id>/again/", view(self.again_view), name="evals_evalrun_again"),
        ]
        return extra + super().get_urls()

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The run's report; while it runs, the page refreshes itself (a stalled run is
        re-sent)."""
        run = self.get_object(request, object_id)
        if run is None or not self.has_view_permission(request, run):
            return HttpResponseRedirect(reverse("admin:evals_evalrun_changelist"))
        eval_run_kick(run=run)
        before = previous_run(run=run)
        context = page_context(
            self,
            request,
            f"{run.suite.name}: {run.target_text}",
            run=run,
            progress=run_progress(run=run),
            rows=result_rows(run=run),
            before=before,
            diff=run_diff(run=run, before=before),
            refresh=None if run.is_final else REFRESH_SECONDS,
            can_run=request.user.has_perm("evals.add_evalrun"),
        )
        return TemplateResponse(request, "admin/evals/evalrun/report.html", context)

    def cancel_view(self, request: HttpRequest, run_id: Any) -> HttpResponse:
        """POST: stop the run (its current turn too)."""
        run = get_object_or_404(EvalRun, pk=run_id)
        allowed = request.method == "POST" and request.user.has_perm("evals.add_evalrun")
        if allowed and eval_run_cancel(run=run):
            messages.success(request, gettext("The run was cancelled."))
        return HttpResponseRedirect(reverse("admin:evals_evalrun_change", args=[run.pk]))

    def again_view(self, request: HttpRequest, run_id: Any) -> HttpResponse:
        """POST: run the suite again against the same definitions and model."""
        run = get_object_or_404(EvalRun, pk=run_id)
        if request.method != "POST" or not request.user.has_perm("evals.add_evalrun"):
            return HttpResponseRedirect(reverse("admin:evals_evalrun_change", args=[run.pk]))
        try:
            again = eval_run_start(
                suite=run.suite,
                user=request.user,
                overrides=run.overrides,
                model=run.model,
                target=run.target.rsplit(", ", 1)[0],
            )
        except AppError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(reverse("admin:evals_evalrun_change", args=[run.pk]))
        return HttpResponseRedirect(reverse("admin:evals_evalrun_change", args=[again.pk]))

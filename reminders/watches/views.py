"""The watches page (/watches/): the watches that check for the user, with mute and unmute, and
their notification settings."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from agents.tools.builtin import user_timezone
from config.errors import AppError
from reminders.watches.selectors import access_watch, watches_of
from reminders.watches.services import (
    notification_settings_of,
    notification_settings_update,
    watch_mute,
)


class SettingsForm(forms.Form):
    """Quiet hours, daily cap, channels."""

    quiet_start = forms.TimeField(label=gettext_lazy("Quiet from"), required=False)
    quiet_end = forms.TimeField(label=gettext_lazy("Quiet until"), required=False)
    daily_cap = forms.IntegerField(label=gettext_lazy("Most a day"), min_value=1, max_value=1000)
    email = forms.BooleanField(label=gettext_lazy("Also by email"), required=False)
    linked_chats = forms.BooleanField(
        label=gettext_lazy("Also to linked chat apps"), required=False
    )


@login_required
def watches_page(request: HttpRequest) -> HttpResponse:
    """The list and the settings; the settings form saves here (POST)."""
    current = notification_settings_of(user=request.user)
    form = SettingsForm(
        request.POST or None,
        initial={
            "quiet_start": current.quiet_start,
            "quiet_end": current.quiet_end,
            "daily_cap": current.daily_cap,
            "email": current.email,
            "linked_chats": current.linked_chats,
        },
    )
    if request.method == "POST" and form.is_valid():
        try:
            notification_settings_update(user=request.user, **form.cleaned_data)
        except ValueError as exc:
            form.add_error("quiet_end", str(exc))
        else:
            messages.success(request, _("Notification settings saved."))
            return redirect("watches:page")
    context = {
        "watches": watches_of(user=request.user, now=timezone.now()),
        "form": form,
        "zone": str(user_timezone(request.user)),
    }
    return render(request, "watches/watches.html", context)


@login_required
@require_POST
def watch_mute_view(request: HttpRequest, watch_id: int) -> HttpResponse:
    """Mute or unmute one of the user's watches (the page's buttons)."""
    try:
        watch = access_watch(request.user, watch_id)
    except AppError as exc:  # another's watch is a missing one
        raise Http404(exc.message) from exc
    muted = request.POST.get("muted") == "true"
    watch_mute(watch=watch, user=request.user, muted=muted)
    if muted:
        messages.success(request, _("“%(name)s” is muted.") % {"name": watch.name})
    else:
        messages.success(request, _("“%(name)s” is no longer muted.") % {"name": watch.name})
    return redirect("watches:page")

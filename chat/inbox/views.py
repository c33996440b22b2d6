"""The staff inbox page: questions and tool approvals waiting for a person, live."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from delegation.humans.models import Audience, ItemStatus
from delegation.humans.selectors import inbox_items_for, item_as_data

FIRST_PAINT_ITEMS = 200  # the rest come from /api/v1/inbox/


@staff_member_required
def inbox_index(request: HttpRequest) -> HttpResponse:
    """Pending items the staff member may decide (their groups', or every one for superusers),
    oldest deadline first; the page then follows `inbox.*` events over /ws/chat/."""
    items = (
        inbox_items_for(user=request.user)
        .filter(status=ItemStatus.PENDING, audience=Audience.STAFF)
        .order_by("deadline")[:FIRST_PAINT_ITEMS]
    )
    return render(request, "inbox/index.html", {"items": [item_as_data(i) for i in items]})

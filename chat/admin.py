"""Admin for chat sessions, messages and preferences (read-mostly)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.translation import gettext, gettext_lazy, ngettext

from chat.models import ApiToken, ChatMessage, ChatPreference, ChatSession, MessageFeedback
from chat.tokens import token_create, token_revoke


class ChatMessageInline(admin.TabularInline):
    """A session's messages in order."""

    model = ChatMessage
    fields = ["created_at", "role", "agent", "content", "tool", "status"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
    """Sessions with their transcript."""

    list_display = ["id", "title", "user", "agent", "updated_at"]
    search_fields = ["id", "title", "user__username"]
    list_filter = ["agent"]
    raw_id_fields = ["user"]
    inlines = [ChatMessageInline]


class MessageFeedbackInline(admin.TabularInline):
    """Users' ratings of this answer."""

    model = MessageFeedback
    fields = ["user", "rating", "note", "updated_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(ChatMessage)
class ChatMessageAdmin(admin.ModelAdmin):
    """Every message, filterable by role and status; older branches (tried again or edited)
    are marked by `superseded_by`."""

    list_display = ["id", "session", "role", "status", "origin", "created_at"]
    list_filter = ["role", "status", "origin", ("superseded_by", admin.EmptyFieldListFilter)]
    search_fields = ["id", "content"]
    raw_id_fields = ["session", "run", "edited_from"]
    inlines = [MessageFeedbackInline]


@admin.register(MessageFeedback)
class MessageFeedbackAdmin(admin.ModelAdmin):
    """Thumbs up and down on answers, with the users' notes (read-only: they are the users')."""

    list_display = ["updated_at", "rating", "user", "answer", "note"]
    list_filter = ["rating", "updated_at"]
    search_fields = ["note", "user__username", "message__content"]
    list_select_related = ["user", "message"]
    readonly_fields = ["message", "user", "rating", "note", "created_at", "updated_at"]

    @admin.display(description=gettext_lazy("answer"))
    def answer(self, obj: MessageFeedback) -> str:
        """The start of the rated answer."""
        text = obj.message.content
        return text[:80] + ("…" if len(text) > 80 else "")

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Feedback comes from users only."""
        return False


admin.site.register(ChatPreference)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """API tokens: staff create them for a user (the secret is shown once) and revoke them."""

    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "user__username"]
    raw_id_fields = ["user"]
    actions = ["revoke"]

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        """New tokens need a user and a name; the rest is read-only."""
        if obj is None:
            return ["user", "name"]
        return ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        """A saved token cannot be edited, only revoked."""
        return (
            []
            if obj is None
            else ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
        )

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        """Create through the service and show the secret this once."""
        if change:
            return
        token, raw = token_create(user=obj.user, name=obj.name)
        obj.pk = token.pk
        messages.warning(
            request,
            gettext("Copy the token now, it is not shown again: %(token)s") % {"token": raw},
        )

    @admin.action(description=gettext_lazy("Revoke the selected tokens"))
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        """Revoke each selected token."""
        for token in queryset:
            token_revoke(token=token)
        count = queryset.count()
        messages.success(
            request,
            ngettext(
                "Revoked %(count)d token.",
                "Revoked %(count)d tokens.",
                count,
            )
            % {"count": count},
        )

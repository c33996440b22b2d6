"""Admin for chat sessions, messages and preferences (read-mostly)."""

from __future__ import annotations

from django.contrib import admin

from chat.models import ChatMessage, ChatPreference, ChatSession


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


@admin.register(ChatMessage)
class ChatMessageAdmin(admin.ModelAdmin):
    """Every message, filterable by role and status."""

    list_display = ["id", "session", "role", "status", "created_at"]
    list_filter = ["role", "status"]
    search_fields = ["id", "content"]
    raw_id_fields = ["session", "run"]


admin.site.register(ChatPreference)

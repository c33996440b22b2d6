"""The stored revision every versioned definition shares (agents, routing policies)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Revision(models.Model):
    """A snapshot of a definition as saved, numbered by its version, to diff and restore.

    A concrete revision adds the foreign key to what was saved and names it in `subject_field`.
    """

    subject_field: ClassVar[str]

    version = models.PositiveIntegerField(_("version"))
    snapshot = models.JSONField(_("snapshot"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("created by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"{getattr(self, self.subject_field).name} v{self.version}"

"""Knowledge bases, their documents (every version) and the chunks retrieval searches."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.names import NamedInLanguages, validate_descriptions, validate_display_names


class KnowledgeBase(NamedInLanguages, models.Model):
    """A set of documents some agents may search, readable by the users its access rule allows."""

    name = models.SlugField(
        _("name"), max_length=64, unique=True, help_text=_("Stable identifier, e.g. hr.")
    )
    display_name = models.CharField(
        _("display name"),
        max_length=120,
        help_text=_("The name people read where no name in their language is set."),
    )
    # Per language ("en", "zh-hant", "zh-hans"): the name and description people read there.
    display_names = models.JSONField(
        _("names per language"),
        default=dict,
        blank=True,
        validators=[validate_display_names],
        help_text=_(
            'The name in each language, e.g. {"zh-hant": "財務文件", "zh-hans": "财务文件", '
            '"en": "Finance documents"}.'
        ),
    )
    description = models.TextField(
        _("description"), blank=True, help_text=_("What the documents are about.")
    )
    descriptions = models.JSONField(
        _("descriptions per language"),
        default=dict,
        blank=True,
        validators=[validate_descriptions],
        help_text=_("What the documents are about, in each language (en, zh-hant, zh-hans)."),
    )
    # PROTECT: deleting the group must not silently open the knowledge base to everyone.
    access_group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        verbose_name=_("access group"),
        help_text=_("Only members of this group may read it (blank: every signed-in user)."),
    )
    access_permission = models.CharField(
        _("access permission"),
        max_length=200,
        blank=True,
        help_text=_("Permission the reader needs, as app_label.codename (blank: none)."),
    )
    agents = models.ManyToManyField(
        "agents.Agent",
        blank=True,
        related_name="knowledge_bases",
        verbose_name=_("agents"),
        help_text=_("Agents that may search it (they get the kb_search and kb_documents tools)."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("knowledge base")
        verbose_name_plural = _("knowledge bases")

    def __str__(self) -> str:
        return self.name_in()  # as people read it, in the active language


class DocumentStatus(models.TextChoices):
    """Where a document is in indexing."""

    QUEUED = "queued", _("Queued")
    INDEXING = "indexing", _("Indexing")
    INDEXED = "indexed", _("Indexed")
    FAILED = "failed", _("Failed")


class Document(models.Model):
    """One version of one document; a newer version supersedes it once indexed."""

    kb = models.ForeignKey(
        KnowledgeBase,
        on_delete=models.CASCADE,
        related_name="documents",
        verbose_name=_("knowledge base"),
    )
    title = models.CharField(_("title"), max_length=300)
    source = models.CharField(
        _("source"), max_length=1000, blank=True, help_text=_("Path or URL it came from.")
    )
    effective_date = models.DateField(_("effective date"), default=timezone.localdate)
    version = models.PositiveIntegerField(_("version"), default=1)
    filename = models.CharField(_("file name"), max_length=255)
    file_type = models.CharField(
        _("file type"), max_length=8, help_text=_("md, txt, html, pdf or docx.")
    )
    # The original bytes live in the row (bounded by KNOWLEDGE_MAX_FILE_BYTES), so any worker
    # can (re-)index without shared file storage and a rolled-back upload leaves no orphan file.
    original = models.BinaryField(_("original file"), editable=False)
    content_hash = models.CharField(
        _("content hash"), max_length=64, help_text=_("SHA-256 of the original bytes.")
    )
    text = models.TextField(
        _("text"), blank=True, editable=False, help_text=_("The extracted text.")
    )
    status = models.CharField(
        _("status"), max_length=8, choices=DocumentStatus.choices, default=DocumentStatus.QUEUED
    )
    status_detail = models.TextField(
        _("status detail"), blank=True, help_text=_("The chunk count, or why it failed.")
    )
    # Set with the status: when it was sent to the workers (queued) or a worker took it
    # (indexing); the sweeper finds lost ones by it, and a worker's claim is known by it.
    status_at = models.DateTimeField(_("status since"), null=True, blank=True, editable=False)
    attempts = models.PositiveSmallIntegerField(
        _("attempts"),
        default=0,
        editable=False,
        help_text=_("Times sent to be indexed since the upload or the last re-index."),
    )
    chunk_count = models.PositiveIntegerField(_("chunks"), default=0)
    token_count = models.PositiveIntegerField(
        _("index terms"), default=0, help_text=_("Index terms in its chunks.")
    )
    superseded = models.BooleanField(_("superseded"), default=False)
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="supersedes",
        verbose_name=_("superseded by"),
    )
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        verbose_name=_("uploaded by"),
    )
    indexed_at = models.DateTimeField(_("indexed at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["-effective_date", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["kb", "content_hash"], name="knowledge_unique_content")
        ]
        indexes = [models.Index(fields=["kb", "superseded", "status"])]
        verbose_name = _("document")
        verbose_name_plural = _("documents")

    def __str__(self) -> str:
        return f"{self.title} v{self.version}"

    @property
    def status_text(self) -> str:
        """What admins read: "indexed with N chunks", "failed: reason", "queued" or
        "indexing"."""
        if self.superseded:
            if self.superseded_by:
                return gettext("superseded by version %(version)s") % {
                    "version": self.superseded_by.version
                }
            return gettext("superseded")
        if self.status == DocumentStatus.INDEXED:
            return gettext("indexed with %(count)s chunks") % {"count": self.chunk_count}
        if self.status == DocumentStatus.FAILED:
            return gettext("failed: %(reason)s") % {"reason": self.status_detail}
        return str(DocumentStatus(self.status).label).lower()  # queued, indexing


class Chunk(models.Model):
    """A passage of an indexed, current document: what search returns and answers cite."""

    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="chunks", verbose_name=_("document")
    )
    kb = models.ForeignKey(
        KnowledgeBase,
        on_delete=models.CASCADE,
        related_name="chunks",
        verbose_name=_("knowledge base"),
    )
    position = models.PositiveIntegerField(_("position"))
    heading_path = models.JSONField(_("headings"), default=list, blank=True)
    text = models.TextField(_("text"))
    char_count = models.PositiveIntegerField(_("characters"))
    # Index terms made in Python (agents.knowledge.text) so SQLite and Postgres see one tokenizer.
    search_text = models.TextField(_("index terms"), editable=False)
    # Its document's title terms, indexed apart: a title weighs alike in each of its passages.
    search_title = models.TextField(_("title index terms"), blank=True, default="", editable=False)
    token_count = models.PositiveIntegerField(_("index term count"), default=0, editable=False)
    vector = models.BinaryField(  # float16, little-endian
        _("vector"), null=True, blank=True, editable=False
    )
    vector_dim = models.PositiveSmallIntegerField(
        _("vector dimensions"), null=True, blank=True, editable=False
    )
    vector_model = models.CharField(
        _("embedding model"), max_length=200, blank=True, editable=False
    )

    class Meta:
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="knowledge_chunk_pos")
        ]
        indexes = [models.Index(fields=["kb", "token_count"])]
        verbose_name = _("chunk")
        verbose_name_plural = _("chunks")

    def __str__(self) -> str:
        return f"{self.document} #{self.position}"

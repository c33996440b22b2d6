"""Knowledge bases, their documents (every version) and the chunks retrieval searches."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.utils import timezone


class KnowledgeBase(models.Model):
    """A set of documents some agents may search, readable by the users its access rule allows."""

    name = models.SlugField(max_length=64, unique=True, help_text="Stable identifier, e.g. hr.")
    display_name = models.CharField(max_length=120)
    description = models.TextField(blank=True, help_text="What the documents are about.")
    # PROTECT: deleting the group must not silently open the knowledge base to everyone.
    access_group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        help_text="Only members of this group may read it (blank: every signed-in user).",
    )
    access_permission = models.CharField(
        max_length=200,
        blank=True,
        help_text="Permission the reader needs, as app_label.codename (blank: none).",
    )
    agents = models.ManyToManyField(
        "agents.Agent",
        blank=True,
        related_name="knowledge_bases",
        help_text="Agents that may search it (they get the kb_search and kb_documents tools).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.display_name or self.name


class DocumentStatus(models.TextChoices):
    """Where a document is in indexing."""

    QUEUED = "queued", "Queued"
    INDEXING = "indexing", "Indexing"
    INDEXED = "indexed", "Indexed"
    FAILED = "failed", "Failed"


class Document(models.Model):
    """One version of one document; a newer version supersedes it once indexed."""

    kb = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=300)
    source = models.CharField(max_length=1000, blank=True, help_text="Path or URL it came from.")
    effective_date = models.DateField(default=timezone.localdate)
    version = models.PositiveIntegerField(default=1)
    filename = models.CharField(max_length=255)
    file_type = models.CharField(max_length=8, help_text="md, txt, html, pdf or docx.")
    # The original bytes live in the row (bounded by KNOWLEDGE_MAX_FILE_BYTES), so any worker
    # can (re-)index without shared file storage and a rolled-back upload leaves no orphan file.
    original = models.BinaryField(editable=False)
    content_hash = models.CharField(max_length=64, help_text="SHA-256 of the original bytes.")
    text = models.TextField(blank=True, editable=False, help_text="The extracted text.")
    status = models.CharField(
        max_length=8, choices=DocumentStatus.choices, default=DocumentStatus.QUEUED
    )
    status_detail = models.TextField(blank=True, help_text="The chunk count, or why it failed.")
    # Set with the status: when it was sent to the workers (queued) or a worker took it
    # (indexing); the sweeper finds lost ones by it, and a worker's claim is known by it.
    status_at = models.DateTimeField(null=True, blank=True, editable=False)
    attempts = models.PositiveSmallIntegerField(
        default=0,
        editable=False,
        help_text="Times sent to be indexed since the upload or the last re-index.",
    )
    chunk_count = models.PositiveIntegerField(default=0)
    token_count = models.PositiveIntegerField(default=0, help_text="Index terms in its chunks.")
    superseded = models.BooleanField(default=False)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    indexed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-effective_date", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["kb", "content_hash"], name="knowledge_unique_content")
        ]
        indexes = [models.Index(fields=["kb", "superseded", "status"])]

    def __str__(self) -> str:
        return f"{self.title} v{self.version}"

    @property
    def status_text(self) -> str:
        """What admins read: "indexed with N chunks", "failed: reason", "queued" or
        "indexing"."""
        if self.superseded:
            newer = f" by version {self.superseded_by.version}" if self.superseded_by else ""
            return f"superseded{newer}"
        if self.status == DocumentStatus.INDEXED:
            return f"indexed with {self.chunk_count} chunks"
        if self.status == DocumentStatus.FAILED:
            return f"failed: {self.status_detail}"
        return self.status  # queued, indexing


class Chunk(models.Model):
    """A passage of an indexed, current document: what search returns and answers cite."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    kb = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField()
    heading_path = models.JSONField(default=list, blank=True)
    text = models.TextField()
    char_count = models.PositiveIntegerField()
    # Index terms made in Python (agents.knowledge.text) so SQLite and Postgres see one tokenizer.
    search_text = models.TextField(editable=False)
    token_count = models.PositiveIntegerField(default=0, editable=False)
    vector = models.BinaryField(null=True, blank=True, editable=False)  # float16, little-endian
    vector_dim = models.PositiveSmallIntegerField(null=True, blank=True, editable=False)
    vector_model = models.CharField(max_length=200, blank=True, editable=False)

    class Meta:
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="knowledge_chunk_pos")
        ]
        indexes = [models.Index(fields=["kb", "token_count"])]

    def __str__(self) -> str:
        return f"{self.document} #{self.position}"

"""Import a folder of documents into a knowledge base (idempotent by content hash)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.knowledge.models import DocumentStatus, KnowledgeBase
from agents.knowledge.parsing import file_type_of
from agents.knowledge.selectors import document_with_hash
from agents.knowledge.services import content_hash_of, document_upload
from config.errors import AppError


class Command(BaseCommand):
    """manage.py kb_import PATH --kb NAME [--create]."""

    help = (
        "Import every supported file under PATH into a knowledge base, indexing each now. Files "
        "already there (same content) are skipped; a changed file with the same title becomes a "
        "new version."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """PATH, the knowledge base, and whether to create it."""
        parser.add_argument("path", help="A folder (searched recursively) or one file.")
        parser.add_argument("--kb", required=True, help="The knowledge base name.")
        parser.add_argument("--create", action="store_true", help="Create the knowledge base.")

    def handle(self, *args: Any, **options: Any) -> None:
        """Import, then print one line per file and a summary."""
        root = Path(options["path"])
        if not root.exists():
            raise CommandError(f"{root} does not exist.")
        kb = KnowledgeBase.objects.filter(name=options["kb"]).first()
        if kb is None and options["create"]:
            kb = KnowledgeBase.objects.create(name=options["kb"], display_name=options["kb"])
        if kb is None:
            raise CommandError(f"No knowledge base {options['kb']!r} (add --create to make it).")
        files = sorted(p for p in ([root] if root.is_file() else root.rglob("*")) if p.is_file())
        counts = {"indexed": 0, "failed": 0, "skipped": 0, "refused": 0}
        for path in files:
            outcome, detail = self._import(kb, root, path)
            counts[outcome] += 1
            self.stdout.write(
                f"{outcome:8} {path.relative_to(root) if root.is_dir() else path}: {detail}"
            )
        summary = ", ".join(f"{n} {what}" for what, n in counts.items())
        self.stdout.write(self.style.SUCCESS(f"{kb.name}: {len(files)} files: {summary}"))

    def _import(self, kb: KnowledgeBase, root: Path, path: Path) -> tuple[str, str]:
        if not file_type_of(path.name):
            return "skipped", "not a supported type"
        data = path.read_bytes()
        twin = document_with_hash(kb=kb, content_hash=content_hash_of(data)) if data else None
        if twin is not None:
            return "skipped", f"already imported as “{twin.title}” v{twin.version}"
        source = str(path.relative_to(root)) if root.is_dir() else path.name
        try:
            document = document_upload(
                kb=kb, filename=path.name, data=data, source=source, background=False
            )
        except AppError as exc:
            return "refused", exc.message
        if document.status == DocumentStatus.FAILED:
            return "failed", document.status_detail
        return "indexed", f"“{document.title}” v{document.version}, {document.status_detail}"

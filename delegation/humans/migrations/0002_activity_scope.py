"""The activity log is scoped like what it reports: each row's assignment group, audience and
the knowledge bases it may quote; rows written before are given theirs from their run, inbox
item or review."""

from typing import Any

from django.db import migrations, models

BATCH = 500


def scope_existing_rows(apps: Any, schema_editor: Any) -> None:
    """Give rows written before this migration their group, audience and knowledge."""
    Activity = apps.get_model("humans", "Activity")
    InboxItem = apps.get_model("humans", "InboxItem")
    Review = apps.get_model("humans", "Review")
    Document = apps.get_model("knowledge", "Document")
    Through = Activity.knowledge.through
    rows = (
        Activity.objects.filter(run__isnull=False)
        .select_related("run")
        .only("pk", "data", "group", "audience", "run__agent_config", "run__references")
        .order_by("pk")
    )  # (not the runs' transcripts: they can be large)
    changed, links = [], []
    for row in rows.iterator(chunk_size=BATCH):
        row.group = (row.run.agent_config or {}).get("human_group", "")
        data = row.data if isinstance(row.data, dict) else {}
        item = InboxItem.objects.filter(pk=data["item_id"]).first() if "item_id" in data else None
        if item is not None:
            row.group, row.audience = item.group, item.audience
        review = Review.objects.filter(pk=data["review_id"]).first() if "review_id" in data else None
        if review is not None:
            row.group = review.group
        changed.append(row)
        documents = {r.get("document_id") for r in row.run.references or []} - {None}
        kbs = Document.objects.filter(pk__in=documents).values_list("kb_id", flat=True)
        links += [Through(activity_id=row.pk, knowledgebase_id=kb) for kb in set(kbs)]
        if len(changed) >= BATCH:
            _save(Activity, Through, changed, links)
            changed, links = [], []
    _save(Activity, Through, changed, links)


def _save(Activity: Any, Through: Any, changed: list[Any], links: list[Any]) -> None:
    Activity.objects.bulk_update(changed, ["group", "audience"])
    Through.objects.bulk_create(links, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [
        ("humans", "0001_initial"),
        ("knowledge", "0003_document_token_count"),
    ]

    operations = [
        migrations.AddField(
            model_name="activity",
            name="audience",
            field=models.CharField(
                choices=[("staff", "Staff"), ("user", "User")], default="staff", max_length=8
            ),
        ),
        migrations.AddField(
            model_name="activity",
            name="group",
            field=models.CharField(blank=True, max_length=150),
        ),
        migrations.AddField(
            model_name="activity",
            name="knowledge",
            field=models.ManyToManyField(
                blank=True, related_name="+", to="knowledge.knowledgebase"
            ),
        ),
        migrations.RunPython(scope_existing_rows, migrations.RunPython.noop),
    ]

"""Outside tool calls are counted per turn on the root run (`tree_tool_calls`, with a database
default so the release before, which does not name it, inserts runs while a deploy rolls). The
old token counter's column, kept for one release by 0009, goes."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("delegation", "0009_tokens_from_the_ledger"),
    ]

    operations = [
        migrations.RunSQL(
            'ALTER TABLE "delegation_run" DROP COLUMN "tree_tokens"',
            reverse_sql=(
                'ALTER TABLE "delegation_run" ADD COLUMN "tree_tokens" integer DEFAULT 0 NOT NULL'
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="tree_tool_calls",
            field=models.PositiveIntegerField(default=0, db_default=0),
        ),
    ]

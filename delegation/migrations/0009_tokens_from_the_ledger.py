"""A turn's tokens are summed from its ledger rows (delegation.budget.turn_tokens): the root's
`tree_tokens` counter leaves the model. Its column stays in the table for one release, with a
default in the database, so workers of the release before (which write it) and of this one
(which never name it) can run side by side while a deploy rolls; the next release drops it."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("delegation", "0008_run_reserved_call_tree_checks"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AlterField(
                    model_name="run",
                    name="tree_tokens",
                    field=models.PositiveIntegerField(default=0, db_default=0),
                ),
            ],
            state_operations=[
                migrations.RemoveField(model_name="run", name="tree_tokens"),
            ],
        ),
    ]

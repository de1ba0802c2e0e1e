"""Plan now lives in ``tenants`` (tenants/migrations/0005_plan); forget it here, keep the table."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('quotas', '0003_invoices'),
        ('tenants', '0005_plan'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='Plan')],
            database_operations=[],
        ),
    ]

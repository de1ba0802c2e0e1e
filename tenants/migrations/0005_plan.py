"""Plan moves from ``quotas`` to ``tenants`` (so ``tenants`` never imports ``quotas``).

State only: the table stays ``quotas_plan`` (``Plan.Meta.db_table``) and the tenants' foreign
key keeps pointing at it, so an existing database changes nothing and loses nothing.
"""

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0004_reassignment'),
        ('quotas', '0003_invoices'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Plan',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('slug', models.SlugField(max_length=40, unique=True)),
                        ('name', models.CharField(max_length=100)),
                        ('producer_byte_rate', models.BigIntegerField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(1)])),
                        ('consumer_byte_rate', models.BigIntegerField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(1)])),
                        ('request_percentage', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0.01)])),
                        ('max_partitions', models.PositiveIntegerField(default=100)),
                        ('prices', models.JSONField(blank=True, default=dict, help_text='Price plan used by the billing job.')),
                    ],
                    options={'db_table': 'quotas_plan'},
                ),
                migrations.AlterField(
                    model_name='tenant',
                    name='plan',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='tenants', to='tenants.plan'),
                ),
            ],
            database_operations=[],
        ),
    ]

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0006_topic_deletion'),
    ]

    operations = [
        migrations.AddField(
            model_name='plan',
            name='replication_factor',
            field=models.PositiveSmallIntegerField(blank=True, help_text="the replication factor of every topic the plan's tenants create over Kafka (-1 gets it, any other factor is refused); empty: the cluster's default.replication.factor", null=True, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(7)]),
        ),
    ]

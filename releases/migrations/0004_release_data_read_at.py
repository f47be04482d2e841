from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("releases", "0003_release_failure_record"),
    ]

    operations = [
        migrations.AddField(
            model_name="release",
            name="data_read_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]

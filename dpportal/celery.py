"""The Celery application: `celery -A dpportal.celery worker`.

Configuration comes from Django settings (keys prefixed CELERY_). The database is
the record of every release; the broker is only the doorbell.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")

app = Celery("dpportal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

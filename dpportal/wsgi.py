"""WSGI entry point (gunicorn dpportal.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")

application = get_wsgi_application()

# Load the URLconf, and with it every view module and what they import (the privacy
# accountant's dp_accounting and scipy among them), while the worker boots. Left to
# Django, each gunicorn worker did it in its first request: a first visit landing on
# a fresh worker waited 3 to 9 s for imports (bench/page_weight.py).
get_resolver().url_patterns  # noqa: B018 (evaluated for its side effect)

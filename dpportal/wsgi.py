"""WSGI entry point (gunicorn dpportal.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")

application = get_wsgi_application()

"""Check what the deployment connects to: the dataset storage and (when set) Spark.

Prints one line per component; exits with status 1 when a configured one fails.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from datasets import storage
from releases.compute.spark_engine import spark_status


class Command(BaseCommand):
    help = "Check connectivity to the dataset storage (local disk or S3) and to Spark."

    def handle(self, *args, **options):
        failed = False
        try:
            self.stdout.write(f"ok: {storage.check()}")
        except storage.StorageError as exc:
            failed = True
            self.stdout.write(f"FAILED: {exc}")
        master = getattr(settings, "DPPORTAL_SPARK_MASTER", "")
        if not master:
            self.stdout.write("spark: not configured (DPPORTAL_SPARK_MASTER is not set)")
        else:
            try:
                self.stdout.write(f"spark: ok: {spark_status()}")
            except Exception as exc:  # any failure to reach the master is the finding
                failed = True
                self.stdout.write(f"spark: FAILED to reach {master} ({type(exc).__name__})")
        if failed:
            raise CommandError("a configured connection failed")

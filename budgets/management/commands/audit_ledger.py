"""`manage.py audit_ledger`: check every project's budget invariants.

Exits 0 when all hold; otherwise prints each violation and exits non-zero.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from budgets.models import Project
from budgets.selectors import ledger_audit


class Command(BaseCommand):
    help = "Check the privacy-budget ledger's invariants for every project."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", help="Only the project with this slug.")

    def handle(self, *args, **options) -> None:
        project = None
        if options.get("project"):
            project = Project.objects.filter(slug=options["project"]).first()
            if project is None:
                raise CommandError(f"No project with the slug {options['project']!r}.")
        problems = ledger_audit(project=project)
        if problems:
            for problem in problems:
                self.stderr.write(f"VIOLATION: {problem}")
            raise CommandError(f"{len(problems)} ledger invariant violation(s).")
        count = 1 if project else Project.objects.count()
        self.stdout.write(self.style.SUCCESS(f"Ledger OK: {count} project(s) checked."))

"""On PostgreSQL, a trigger rejects UPDATE and DELETE on the ledger table.

The ORM already refuses (see LedgerEntry and its QuerySet); this holds below it,
for raw SQL and other clients too. Other databases (the SQLite demo) skip it.
"""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION budgets_ledgerentry_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'budgets_ledgerentry is append-only: % refused', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER budgets_ledgerentry_append_only
    BEFORE UPDATE OR DELETE ON budgets_ledgerentry
    FOR EACH ROW EXECUTE FUNCTION budgets_ledgerentry_append_only();
"""

DROP = """
DROP TRIGGER IF EXISTS budgets_ledgerentry_append_only ON budgets_ledgerentry;
DROP FUNCTION IF EXISTS budgets_ledgerentry_append_only();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("budgets", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]

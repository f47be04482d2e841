"""Writes for datasets: upload, ingest (restartable), declaration of public domains, deletion.

The modules: `uploads` (dataset_create, dataset_delete, dataset_cleanup_failed,
dataset_cleanup_awaiting),
`ingesting` (dataset_ingest, its dispatch and the periodic re-dispatch), `reading`
(how the CSV is read: the preview and its confirmation before the ingest), `declaration`
(dataset_declare, dataset_confirm_unit, dataset_import_codebook; one column's
validation in `declaration_columns`), `person_rows` (the person-rows copy a
confirmed person-level unit asks for: dataset_person_rows_build, run by a worker),
`codebook` (the codebook CSV format), `common` (owner checks, file locations).
datasets/ingest/ holds the streaming conversion itself and says what the private
profile holds. No aggregate of the data (not even the row count) is stored in the
database or logged here; the person-rows copy's per-person row counts live only
in that private file beside the dataset's Parquet, as private as the data.
"""

from datasets.services.codebook import export_codebook
from datasets.services.common import (
    csv_safe_cell,
    dataset_folder,
    dataset_parquet_path,
)
from datasets.services.declaration import (
    dataset_confirm_unit,
    dataset_declare,
    dataset_import_codebook,
)
from datasets.services.external import (
    dataset_register_external,
    user_may_register_external,
)
from datasets.services.ingest_dispatch import dataset_dispatch_ingest, dataset_redispatch_stale
from datasets.services.ingesting import dataset_ingest, ingest_limits
from datasets.services.person_rows import (
    dataset_person_rows_build,
    dataset_person_rows_remove,
)
from datasets.services.reading import (
    dataset_confirm_reading,
    dataset_read_preview,
    parse_read_options,
)
from datasets.services.texts import dataset_texts_update
from datasets.services.uploads import (
    awaiting_upload_retention,
    dataset_cleanup_awaiting,
    dataset_cleanup_failed,
    dataset_create,
    dataset_delete,
    failed_upload_retention,
)

__all__ = [
    "csv_safe_cell",
    "dataset_cleanup_awaiting",
    "dataset_cleanup_failed",
    "dataset_confirm_reading",
    "dataset_confirm_unit",
    "dataset_create",
    "dataset_declare",
    "dataset_delete",
    "dataset_texts_update",
    "dataset_dispatch_ingest",
    "dataset_folder",
    "dataset_import_codebook",
    "dataset_ingest",
    "dataset_parquet_path",
    "dataset_person_rows_build",
    "dataset_person_rows_remove",
    "dataset_read_preview",
    "dataset_redispatch_stale",
    "dataset_register_external",
    "export_codebook",
    "awaiting_upload_retention",
    "failed_upload_retention",
    "ingest_limits",
    "parse_read_options",
    "user_may_register_external",
]

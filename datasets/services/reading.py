"""How an upload is read: detection at upload, the owner's preview and confirmation.

An upload that detection finds plain (UTF-8, comma-separated, double quotes, a
decimal point, a header line) is queued at once, as before. Any other upload
waits in `awaiting` until an owner has seen the detected encoding, delimiter,
decimal mark and header with the first rows decoded that way, changed what is
wrong, and confirmed; options given explicitly at upload (the API) count as
confirmed. The preview's cells are read from the private file for the owner who
asks and never stored or logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext

from datasets.ingest import CsvDialect, IngestRejected, Preview, detect, preview
from datasets.ingest.common import DELIMITERS, QUOTE_CHARS
from datasets.ingest.decoding import normalize_encoding
from datasets.ingest.numbers import THOUSANDS
from datasets.models import Dataset
from datasets.services.common import require_owner
from datasets.services.ingest_dispatch import dataset_dispatch_ingest
from datasets.services.ingesting import ingest_limits
from dpportal.errors import InvalidTransition, ValidationFailed

logger = logging.getLogger(__name__)

OPTION_NAMES = ("encoding", "delimiter", "quote_char", "decimal_comma", "header", "thousands")
DELIMITER_NAMES = {"comma": ",", "semicolon": ";", "tab": "\t", "pipe": "|"}
THOUSANDS_NAMES = {name: char for char, name in THOUSANDS.items()} | {"none": ""}
TRUE, FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


def _flag(name: str, value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise ValidationFailed(gettext("'%(name)s' must be true or false.") % {"name": name})


def parse_read_options(data: Mapping, *, base: CsvDialect, combined: bool = True) -> CsvDialect:
    """`base` with the options present in `data` applied; a clear message for a bad one.

    encoding: a name Python knows for one of the offered encodings; delimiter:
    ',', ';', tab, '|' or their names; quote_char: '"' or "'"; decimal_comma and
    header: true or false; thousands: ',', '.', ' ', "'", their names (comma, period,
    space, apostrophe) or 'none'. Absent or blank ('auto') options keep `base`'s value.
    With `combined` False only each option is checked, not how they combine (at
    upload, before detection has found the options not given).
    """
    values = base.to_dict()
    given = {k: data[k] for k in OPTION_NAMES if k in data and data[k] not in (None, "", "auto")}
    if "encoding" in given:
        encoding = normalize_encoding(str(given["encoding"]))
        if encoding is None:
            raise ValidationFailed(gettext("That encoding is not one of those offered."))
        values["encoding"] = encoding
    if "delimiter" in given:
        delimiter = str(given["delimiter"])
        delimiter = DELIMITER_NAMES.get(delimiter.strip().lower(), delimiter)
        if delimiter not in DELIMITERS:
            raise ValidationFailed(
                gettext("The delimiter must be a comma, semicolon, tab or pipe.")
            )
        values["delimiter"] = delimiter
    if "quote_char" in given:
        if given["quote_char"] not in QUOTE_CHARS:
            raise ValidationFailed(
                gettext("The quote character must be a double or a single quote.")
            )
        values["quote_char"] = given["quote_char"]
    for name in ("decimal_comma", "header"):
        if name in given:
            values[name] = _flag(name, given[name])
    if "thousands" in given:
        thousands = str(given["thousands"])
        thousands = THOUSANDS_NAMES.get(thousands.strip().lower(), thousands)
        if thousands not in THOUSANDS and thousands != "":
            raise ValidationFailed(
                gettext(
                    "The thousands separator must be a comma, period, space, apostrophe or none."
                )
            )
        values["thousands"] = thousands
    dialect = CsvDialect.from_dict(values)
    if not combined:
        return dialect
    if dialect.decimal_comma and dialect.delimiter == ",":
        raise ValidationFailed(gettext("A decimal comma needs another delimiter than the comma."))
    if dialect.thousands == ("," if dialect.decimal_comma else "."):
        raise ValidationFailed(
            gettext(
                "The thousands separator must differ from the decimal mark: with a decimal "
                "comma group by period, space or apostrophe; with a decimal point, by comma, "
                "space or apostrophe."
            )
        )
    return dialect


def _source(dataset: Dataset) -> Path:
    return Path(settings.MEDIA_ROOT) / dataset.source_file


def detect_read_options(*, path: Path, delimiter: str | None = None) -> CsvDialect | None:
    """The dialect detected on the file's sample (`delimiter` preset: a .tsv's tab);
    None when the sample is unreadable (the ingest then refuses the file with its reason)."""
    try:
        return detect(path, ingest_limits(), delimiter)
    except IngestRejected:
        return None


def dataset_read_preview(
    *, dataset: Dataset, actor: AbstractBaseUser, options: Mapping | None = None
) -> Preview:
    """The first rows as the stored options (with `options` applied) read them."""
    require_owner(project=dataset.project, user=actor)
    if not dataset.source_file:
        raise InvalidTransition(gettext("The uploaded file is no longer kept."))
    dialect = parse_read_options(options or {}, base=CsvDialect.from_dict(dataset.read_options))
    return preview(_source(dataset), ingest_limits(), dialect)


def dataset_confirm_reading(
    *, dataset: Dataset, actor: AbstractBaseUser, options: Mapping | None = None
) -> Dataset:
    """awaiting -> uploaded with the confirmed options, and the ingest queued."""
    require_owner(project=dataset.project, user=actor)
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        if locked is None or locked.status != Dataset.Status.AWAITING:
            raise InvalidTransition(
                gettext("This upload is not waiting for its reading to be confirmed.")
            )
        base = CsvDialect.from_dict(locked.read_options)
        locked.read_options = parse_read_options(options or {}, base=base).to_dict()
        locked.status = Dataset.Status.UPLOADED
        locked.save(update_fields=["read_options", "status"])
        dataset_id = locked.pk
        # robust: the confirmation is committed; a failed send is re-sent periodically
        transaction.on_commit(lambda: dataset_dispatch_ingest(dataset_id=dataset_id), robust=True)
    logger.info("dataset %s: reading confirmed, ingest queued", dataset_id)
    return locked

"""An upload handler that stops an upload once it is over the size limit.

The upload views refuse a request whose Content-Length is over the limit before
reading its body, but the header can lie or be missing (the declared length may
cover only part of what is sent, and an ASGI server accepts chunked bodies). This
handler counts the file bytes as they arrive and stops the upload as soon as more
than the limit has been received, so no more than the limit is ever spooled to disk.
The view asks `exceeded` after parsing and answers 413.

Installed per view (request.upload_handlers, before anything reads the body); the
page view runs its CSRF check after installing it, since the check reads the form.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.files.uploadhandler import StopUpload, TemporaryFileUploadHandler
from django.http import HttpRequest

from datasets.ingest import human_size

logger = logging.getLogger(__name__)

# Room for the multipart envelope and the name field around the file itself.
UPLOAD_ENVELOPE_BYTES = 64 * 1024


def upload_too_large_message(limit: int | None = None) -> str:
    limit = settings.DPPORTAL_MAX_UPLOAD_BYTES if limit is None else limit
    return f"The file is too large: the limit is {human_size(limit)}."


def declared_length_over_limit(request: HttpRequest) -> bool:
    """Whether the request's Content-Length already says the file is over the limit.

    Checked before anything reads the body; the handler below catches a header that lies.
    """
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    return length > settings.DPPORTAL_MAX_UPLOAD_BYTES + UPLOAD_ENVELOPE_BYTES


class LimitedUploadHandler(TemporaryFileUploadHandler):
    """Spools uploaded files to temporary files; stops after `limit` bytes in all."""

    def __init__(self, request: HttpRequest | None = None, *, limit: int) -> None:
        super().__init__(request)
        self.limit = limit
        self.received = 0  # file bytes accepted (and written) so far, all files together
        self.exceeded = False

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        if self.received + len(raw_data) > self.limit:
            self.exceeded = True
            logger.info("upload stopped: over the limit of %s bytes", self.limit)
            # Read (and drop) the rest of the declared body so the client gets the answer.
            raise StopUpload(connection_reset=False)
        self.received += len(raw_data)
        return super().receive_data_chunk(raw_data, start)

    def message(self) -> str:
        return upload_too_large_message(self.limit)


def limit_upload_size(request: HttpRequest) -> LimitedUploadHandler:
    """Make `request` spool its files through a LimitedUploadHandler (settings' limit)."""
    handler = LimitedUploadHandler(request, limit=settings.DPPORTAL_MAX_UPLOAD_BYTES)
    request.upload_handlers = [handler]
    return handler

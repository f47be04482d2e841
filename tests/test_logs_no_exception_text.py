"""An unexpected error in a view or an API view logs its type and place, never its message."""

from __future__ import annotations

import logging
import sys

import pytest
from django.conf import settings
from django.utils.module_loading import import_string
from rest_framework.test import APIClient

from dpportal.logsafe import exception_summary
from releases.public import selectors as public_selectors

MARKER = "canary-cell-value-314159"


def _explode(*args, **kwargs):
    raise RuntimeError(f"could not parse the cell {MARKER}")


def _assert_no_marker(caplog, response) -> None:
    assert MARKER not in response.content.decode(errors="replace")
    assert MARKER not in caplog.text  # caplog's formatter prints any traceback it gets
    for record in caplog.records:
        assert MARKER not in record.getMessage()
        assert record.exc_info is None or record.exc_info[1] is None, record.getMessage()


@pytest.mark.django_db
def test_html_view_error_is_a_500_page_logged_without_its_message(monkeypatch, caplog, client):
    monkeypatch.setattr(public_selectors, "project_list_published", _explode)
    with caplog.at_level(logging.INFO):
        response = client.get("/")
    assert response.status_code == 500
    assert "Something went wrong" in response.content.decode()
    _assert_no_marker(caplog, response)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "unexpected error in public:home: RuntimeError at" in logged
    assert "_explode" in logged  # where it was raised


@pytest.mark.django_db
def test_api_view_error_is_a_json_500_logged_without_its_message(monkeypatch, caplog):
    monkeypatch.setattr(public_selectors, "project_list_published", _explode)
    with caplog.at_level(logging.INFO):
        response = APIClient().get("/api/v1/public/projects/")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "server_error"
    _assert_no_marker(caplog, response)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "unexpected error in PublicProjectListApi: RuntimeError at" in logged


@pytest.mark.django_db
def test_not_found_and_forbidden_still_answer_404_and_403(client, owner):
    assert client.get("/p/no-such-project/").status_code == 404
    client.force_login(owner)
    assert client.get("/projects/no-such-project/").status_code == 404


def test_summary_names_type_place_and_cause_but_no_message():
    try:
        try:
            _explode()
        except RuntimeError as inner:
            raise ValueError(f"again {MARKER}") from inner
    except ValueError as exc:
        text = exception_summary(exc)
    assert text.startswith("ValueError at tests/test_logs_no_exception_text.py:")
    assert "(while handling RuntimeError)" in text
    assert MARKER not in text


def test_the_configured_formatter_writes_no_traceback_text():
    """A record logged with exc_info anywhere (Django's own 'Internal Server Error', a
    middleware's failure) goes through the settings' formatter without its message."""
    conf = settings.LOGGING["formatters"][settings.LOGGING["handlers"]["console"]["formatter"]]
    formatter = import_string(conf["class"])(conf["format"])
    try:
        _explode()
    except RuntimeError:
        exc_info = sys.exc_info()
    record = logging.getLogger("django.request").makeRecord(
        "django.request", logging.ERROR, __file__, 1, "Internal Server Error: %s", ("/",), exc_info
    )
    text = formatter.format(record)
    assert "Internal Server Error: /" in text and "RuntimeError at" in text
    assert MARKER not in text and "Traceback" not in text

"""Privacy audit: leaks of true values through retries, compute timings, admin, public URLs."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from billiard.einfo import ExceptionInfo
from celery.exceptions import Retry
from django.contrib.admin.sites import site
from django.test import RequestFactory
from django.urls import reverse

from budgets.models import LedgerEntry
from releases import tasks
from releases.admin import ReleaseAdmin
from releases.models import Release
from tests.public_builders import TRUE_COUNT, build_release

CANARY = str(TRUE_COUNT)


class _Request:
    retries = 0


class _FakeTask:
    """Celery's Task.retry contract: builds a Retry; raises it unless throw=False."""

    max_retries = 5

    def __init__(self) -> None:
        self.request = _Request()

    def retry(self, *, countdown=None, exc=None, throw=True, **_):
        signal = Retry(exc=exc, when=countdown)
        if throw:
            raise signal
        return signal


def _stored_traceback(retry_signal: BaseException) -> str:
    """What Celery's handle_retry stores in the result backend (billiard's ExceptionInfo)."""
    return ExceptionInfo((type(retry_signal), retry_signal, retry_signal.__traceback__)).traceback


def _retry_after_data_error(call) -> Retry:
    try:
        try:
            raise ValueError(f"could not convert the value {CANARY}")
        except ValueError as exc:
            call(exc)
    except Retry as signal:
        return signal
    raise AssertionError("a retry was expected")


def test_compute_task_retry_does_not_record_the_exception_text():
    signal = _retry_after_data_error(
        lambda exc: tasks._retry_or_fail(_FakeTask(), release_id=1, exc=exc)
    )
    text = _stored_traceback(signal)
    assert "AttemptFailed" in text and "ValueError" in text
    assert CANARY not in text


def test_compute_task_failure_recording_error_does_not_carry_the_exception_text(
    monkeypatch, caplog
):
    attempts = []

    def database_down(**kwargs):
        attempts.append(kwargs)
        raise RuntimeError("the database is unreachable")

    monkeypatch.setattr(tasks, "release_fail", database_down)
    task = _FakeTask()
    task.request.retries = task.max_retries  # retries exhausted: the release is failed
    escaped = None
    with caplog.at_level("INFO"):
        try:
            try:
                raise ValueError(f"could not convert the value {CANARY}")
            except ValueError as exc:
                tasks._retry_or_fail(task, release_id=1, exc=exc)
        except Exception as error:  # what Celery would log with its traceback
            escaped = error
    assert len(attempts) == 1, "the failure was not recorded"
    assert CANARY not in attempts[0]["reason"]
    # whatever escapes to Celery, and everything logged, names the failure without its text
    text = caplog.text
    if escaped is not None:
        text += ExceptionInfo((type(escaped), escaped, escaped.__traceback__)).traceback
    assert "RuntimeError" in text  # the recording error is reported...
    assert CANARY not in text  # ...without the data error's message


# --- public surfaces ------------------------------------------------------------------


@pytest.fixture
def published(project, owner, reviewer):
    return build_release(project=project, owner=owner, reviewer=reviewer)


def _public_urls(release) -> list[str]:
    slug = release.project.slug
    return [
        reverse("public:release", args=[slug, release.pk]),
        reverse("public:release-json", args=[slug, release.pk]),
        reverse("public:release-csv", args=[slug, release.pk]),
        reverse("api:public-release", args=[slug, release.pk]),
    ]


@pytest.mark.django_db
def test_public_pages_and_api_show_no_compute_time(client, project, owner, reviewer):
    # The computation finished at a distinctive moment: its release's computed_at AND the
    # ledger charge written then (the registry's burn rate reads the charges).
    moment = datetime(2001, 2, 3, 4, 5, 6, tzinfo=UTC)
    published = build_release(project=project, owner=owner, reviewer=reviewer, computed_at=moment)
    assert Release.objects.get(pk=published.pk).computed_at == moment
    charge = LedgerEntry.objects.get(project=project, kind=LedgerEntry.Kind.CHARGE)
    assert charge.created_at == moment  # the field the registry used to publish
    stamps = [moment.isoformat()[:19], "2001-02-03"]
    # The count's discrete Laplace noise (scale 20) is exactly 0 with probability ~2.5 %:
    # then the published value IS the true count and its absence cannot be asserted.
    released = {
        v for s in Release.objects.get(pk=published.pk).result.payload["statistics"]
        for v in s.get("values") or []
    }  # fmt: skip
    check_canary = TRUE_COUNT not in released
    slug = published.project.slug
    urls = _public_urls(published) + [
        reverse("public:project", args=[slug]),
        reverse("api:public-releases", args=[slug]),
        reverse("registry:project", args=[slug]),
        reverse("registry:project_json", args=[slug]),
        reverse("api:public-registry", args=[slug]),
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.getvalue().decode()
        assert "computed_at" not in body, url
        assert not any(stamp in body for stamp in stamps), url
        assert not check_canary or CANARY not in body, url


@pytest.mark.django_db
@pytest.mark.parametrize("state", ["computed", "failed", "withdrawn"])
def test_unpublished_releases_are_invisible_anonymously(client, project, owner, reviewer, state):
    release = build_release(
        project=project, owner=owner, reviewer=reviewer, title="Private one", publish=False
    )
    if state != "computed":
        # a release that never got results: failed (or withdrawn) before computing
        release.result.delete()
        Release.objects.filter(pk=release.pk).update(status=state, failure_reason="test")
    slug = project.slug
    for url in _public_urls(release):
        assert client.get(url).status_code == 404, url
    assert client.get(reverse("public:project", args=[slug])).status_code == 404
    assert client.get(reverse("api:public-releases", args=[slug])).status_code == 404
    listing = client.get(reverse("api:public-projects"))
    assert listing.status_code == 200
    assert slug not in json.dumps(listing.json())
    home = client.get(reverse("public:home")).content.decode()
    assert "Private one" not in home and f"/p/{slug}/" not in home


# --- admin ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_admin_cannot_move_or_alter_a_computed_release(published, django_user_model):
    staff = django_user_model.objects.create_superuser("audit-admin", "a@example.org", "pw")
    request = RequestFactory().get("/")
    request.user = staff
    admin = ReleaseAdmin(Release, site)
    form_fields = admin.get_form(request, published).base_fields
    for name in ("status", "spec", "spec_hash", "epsilon", "published_at", "computed_at"):
        assert name not in form_fields, name
    inline = admin.get_inline_instances(request, published)[0]
    assert not inline.has_change_permission(request, published)
    assert not inline.has_add_permission(request, published)
    assert not inline.has_delete_permission(request, published)
    assert not admin.has_delete_permission(request, published)


@pytest.mark.django_db
def test_admin_change_post_leaves_a_computed_release_unchanged(
    client, project, owner, reviewer, django_user_model
):
    release = build_release(
        project=project, owner=owner, reviewer=reviewer, title="Computed", publish=False
    )
    staff = django_user_model.objects.create_superuser("audit-admin2", "b@example.org", "pw")
    client.force_login(staff)
    url = reverse("admin:releases_release_change", args=[release.pk])
    response = client.post(
        url,
        {
            # every field of the model: a form that still offered them would be valid
            "project": release.project_id,
            "dataset": release.dataset_id,
            "created_by": owner.pk,
            "title": "Computed",
            "description": "",
            "status": "queued",
            "mechanism": "laplace",
            "confidence": "0.95",
            "epsilon": "9",
            "delta": "0",
            "spec": "{}",
            "spec_hash": "f" * 64,
            "budget_request": release.budget_request_id,
            "progress": "0",
            "failure_reason": "",
            "statistics-TOTAL_FORMS": "0",
            "statistics-INITIAL_FORMS": "0",
            "statistics-MIN_NUM_FORMS": "0",
            "statistics-MAX_NUM_FORMS": "1000",
        },
    )
    assert response.status_code in (200, 302, 403)  # 403: the admin refuses a used release
    release.refresh_from_db()
    assert release.status == "computed"
    assert release.spec_hash == "0" * 64
    assert release.epsilon != 9

"""Schemathesis against the live OpenAPI schema of the WSGI app, on PostgreSQL.

Every operation, with schema-conforming (positive) and schema-violating
(negative) inputs, as an owner, as a reviewer (both by token) and anonymously:
no response may be a 5xx and every documented response must match its schema.
Path ids are real seeded objects two times out of three (a project, a ready
dataset, a draft, a submitted and a published release, budget requests), so the
operations reach their services rather than stopping at 404.
"""

from __future__ import annotations

import zlib

import hypothesis
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase
from hypothesis.errors import Unsatisfiable
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import response_schema_conformance

from dpportal.wsgi import application
from tests.public_builders import build_release
from tests.releases_support import draft, make_dataset, submitted

EXAMPLES_PER_MODE = 10


@pytest.fixture
def keep_connection():
    """Like Django's test client: requests must not close the test's database connection."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def seeded(keep_connection, project, owner, reviewer, settings):
    # No throttling of the anonymous caller here: throttling has its own test.
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "100000/minute"},
    }
    published = build_release(project=project, owner=owner, reviewer=reviewer)
    dataset = make_dataset(project=project, owner=owner, rows=500)
    a_draft = draft(project=project, owner=owner, dataset=dataset, epsilon="0.2")
    a_submitted = submitted(project=project, owner=owner, dataset=dataset, epsilon="0.2")
    return {
        "slug": [project.slug],
        "dataset_id": [dataset.pk, published.dataset_id],
        "release_id": [a_draft.pk, a_submitted.pk, published.pk],
        "budget_request_id": [a_submitted.budget_request_id, published.budget_request_id],
    }


def _with_real_ids(case, seeded: dict) -> None:
    """Two times out of three, point the generated path parameters at real objects."""
    if not case.path_parameters:
        return
    for name, value in list(case.path_parameters.items()):
        real = seeded.get(name)
        pick = zlib.crc32(str(value).encode())
        if real and pick % 3:
            case.path_parameters[name] = real[pick % len(real)]


def test_every_operation_conforms_and_never_fails(seeded, owner, reviewer):
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    identities = {
        "owner": {"Authorization": f"Token {Token.objects.create(user=owner).key}"},
        "reviewer": {"Authorization": f"Token {Token.objects.create(user=reviewer).key}"},
        "anonymous": {},
    }
    checks = [not_a_server_error, response_schema_conformance]
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30  # every operation the browser offers, and the public reads
    statuses: dict[str, set[int]] = {}

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @hypothesis.settings(
                max_examples=EXAMPLES_PER_MODE,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
            def run(case) -> None:
                _with_real_ids(case, seeded)
                for who, headers in identities.items():
                    try:
                        # schemathesis's WSGI transport does not undo the gzip the app
                        # applies to HTML and JSON: ask for the body as is
                        response = case.call_and_validate(
                            headers={**headers, "Accept-Encoding": "identity"}, checks=checks
                        )
                    except Exception as exc:
                        raise AssertionError(f"{operation.label} ({mode.value}) as {who}") from exc
                    statuses.setdefault(operation.label, set()).add(response.status_code)

            try:
                run()
            except Unsatisfiable:
                # nothing in this operation can be made invalid (e.g. no parameters)
                assert mode is GenerationMode.NEGATIVE, operation.label

    # the seeding worked: operations on real objects answered with success codes
    successes = {label for label, codes in statuses.items() if codes & {200, 201, 204}}
    assert "GET /api/v1/releases/{release_id}/" in successes
    assert "GET /api/v1/public/projects/{slug}/releases/{release_id}/" in successes
    assert "GET /api/v1/datasets/{dataset_id}/profile/" in successes
    assert len(successes) >= 20, sorted(set(statuses) - successes)

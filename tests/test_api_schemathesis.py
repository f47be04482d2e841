"""Schemathesis against the live OpenAPI schema of the WSGI app, on PostgreSQL.

Every operation, with schema-conforming (positive) and schema-violating
(negative) inputs, each example sent as an owner, a reviewer (both by token) or
anonymously (drawn with the example): no response may be a 5xx and every
documented response must match its schema. Path ids are real seeded objects two
times out of three (a project, a ready dataset, a draft, a submitted and a
published release, budget requests), and the token endpoint gets the real
credentials one time out of three, so the operations reach their services rather
than stopping at 404 or 401: the test then requires a success from every
operation that fuzzed input can bring to one (SUCCEEDS below).

Runtime: 39 operations x 2 modes x EXAMPLES_PER_MODE requests, about 2 minutes of
CPU (6 minutes of wall time on a 2-core machine shared by 8 busy processes).
Passwords use a fast hasher here (only this test's users), and operations without
any input skip the negative mode, which could only end in Unsatisfiable.
"""

from __future__ import annotations

import zlib

import hypothesis
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import response_schema_conformance

from dpportal.wsgi import application
from tests.factories import PASSWORD
from tests.public_builders import build_release
from tests.releases_support import draft, make_dataset, submitted

EXAMPLES_PER_MODE = 30

#: Operations that must answer a success at least once: every read, the token's
#: life cycle and the reviewer's decision on the seeded request. (Writes whose body
#: must be a consistent release or declaration are not expected to be guessed.)
SUCCEEDS = {
    "POST /api/v1/auth/token/",
    "POST /api/v1/auth/token/revoke/",
    "GET /api/v1/budget-requests/",
    "GET /api/v1/budget-requests/{budget_request_id}/",
    "GET /api/v1/datasets/{dataset_id}/",
    "GET /api/v1/datasets/{dataset_id}/codebook/",
    "GET /api/v1/datasets/{dataset_id}/profile/",
    "GET /api/v1/datasets/{dataset_id}/status/",
    "GET /api/v1/projects/",
    "GET /api/v1/projects/{slug}/",
    "GET /api/v1/projects/{slug}/datasets/",
    "GET /api/v1/projects/{slug}/ledger/",
    "GET /api/v1/projects/{slug}/members/",
    "GET /api/v1/projects/{slug}/releases/",
    "GET /api/v1/public/projects/",
    "GET /api/v1/public/projects/{slug}/registry/",
    "GET /api/v1/public/projects/{slug}/releases/",
    "GET /api/v1/public/projects/{slug}/releases/{release_id}/",
    "GET /api/v1/releases/{release_id}/",
    "GET /api/v1/releases/{release_id}/preview/",
    "GET /api/v1/releases/{release_id}/results/",
    "GET /api/v1/releases/{release_id}/status/",
}
#: ... and at least one of these state changes on the seeded objects
SOME_WRITE_SUCCEEDS = {
    "POST /api/v1/budget-requests/{budget_request_id}/approve/",
    "POST /api/v1/budget-requests/{budget_request_id}/reject/",
    "POST /api/v1/releases/{release_id}/approve/",
    "POST /api/v1/releases/{release_id}/reject/",
    "POST /api/v1/releases/{release_id}/submit/",
    "POST /api/v1/releases/{release_id}/withdraw/",
    "POST /api/v1/projects/",
}
SUCCESS = {200, 201, 204}


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """Hashing at production cost would take most of this test's time (set before users)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


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
    # No throttling here: throttling has its own tests (tests/test_api_auth.py),
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {}}
    settings.AXES_ENABLED = False  # nor the failed-login limits (tests/test_login_lockout.py)
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


def _pick(value: object, choices: int) -> int:
    return zlib.crc32(repr(value).encode()) % choices


def _with_real_values(case, seeded: dict, users: list) -> None:
    """Two times out of three, point the generated path parameters at real objects;
    one time out of three, send the token endpoint real credentials."""
    for name, value in list((case.path_parameters or {}).items()):
        real = seeded.get(name)
        pick = zlib.crc32(str(value).encode())
        if real and pick % 3:
            case.path_parameters[name] = real[pick % len(real)]
    if case.operation.label == "POST /api/v1/auth/token/" and isinstance(case.body, dict):
        if _pick(case.body, 3) == 0:
            user = users[_pick(case.body, len(users) * 3) % len(users)]
            case.body = {"username": user.username, "password": PASSWORD}


def test_every_operation_conforms_and_never_fails(seeded, owner, reviewer):
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    tokens = {
        "owner": Token.objects.create(user=owner),
        "reviewer": Token.objects.create(user=reviewer),
    }
    identities = {
        "owner": {"Authorization": f"Token {tokens['owner'].key}"},
        "reviewer": {"Authorization": f"Token {tokens['reviewer'].key}"},
        "anonymous": {},
    }
    checks = [not_a_server_error, response_schema_conformance]
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 37  # every operation the browser offers, and the public reads
    statuses: dict[str, set[int]] = {}

    for operation in operations:
        raw = operation.definition.raw
        modes = [GenerationMode.POSITIVE]
        if raw.get("parameters") or raw.get("requestBody"):
            modes.append(GenerationMode.NEGATIVE)  # no input, nothing to make invalid
        for mode in modes:

            @hypothesis.settings(
                max_examples=EXAMPLES_PER_MODE,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @hypothesis.given(
                case=operation.as_strategy(generation_mode=mode),
                who=st.sampled_from(sorted(identities)),
            )
            def run(case, who) -> None:
                # werkzeug cannot encode a multipart body that is not an object
                multipart = (case.media_type or "").startswith("multipart/")
                hypothesis.assume(not multipart or isinstance(case.body, dict))
                _with_real_values(case, seeded, [owner, reviewer])
                try:
                    # schemathesis's WSGI transport does not undo the gzip the app
                    # applies to HTML and JSON: ask for the body as is
                    response = case.call_and_validate(
                        headers={**identities[who], "Accept-Encoding": "identity"}, checks=checks
                    )
                except Exception as exc:
                    raise AssertionError(f"{operation.label} ({mode.value}) as {who}") from exc
                statuses.setdefault(operation.label, set()).add(response.status_code)
                # a revoked token comes back, so that the next examples still authenticate
                for user, token in ((owner, tokens["owner"]), (reviewer, tokens["reviewer"])):
                    if not Token.objects.filter(key=token.key).exists():
                        Token.objects.filter(user=user).delete()
                        Token.objects.create(key=token.key, user=user)

            try:
                run()
            except Unsatisfiable:
                # nothing in this operation can be made invalid (e.g. no parameters)
                assert mode is GenerationMode.NEGATIVE, operation.label

    successes = {label for label, codes in statuses.items() if codes & SUCCESS}
    missing = sorted(SUCCEEDS - successes)
    assert not missing, (missing, {label: statuses.get(label) for label in missing})
    assert successes & SOME_WRITE_SUCCEEDS, {op: statuses.get(op) for op in SOME_WRITE_SUCCEEDS}
    # every operation was exercised
    assert set(statuses) == {operation.label for operation in operations}

"""Hostile input on every HTML page: never a 500, and a refused POST changes nothing.

Walks every URL pattern of the project (admin, /api/ and static files excluded: the
API has its own schemathesis test) and, for each, as anonymous, a non-member, the
project's owner and its reviewer, sends GET and POST requests carrying hostile input:
path ids that do not exist or overflow a bigint (2**70), query strings with NUL bytes,
invalid UTF-8 and very long values, form fields with NUL bytes, non-numbers where
numbers are expected, NaN / Infinity / 1e999 / -0 / negative / zero for epsilon, delta
and bounds, and missing fields. Each request must answer below 500; each POST whose
input is invalid must leave the database (rows and states that matter) unchanged.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from budgets.models import BudgetRequest, CapChange, LedgerEntry, Membership, Project
from datasets.models import Column, Dataset
from releases.models import Release, ReleaseEvent, ReleaseResult, Statistic
from tests.factories import UserFactory
from tests.public_builders import build_release
from tests.releases_support import builder_data, draft, make_dataset, submitted

pytestmark = pytest.mark.django_db

HUGE = 2**70
LONG = "A" * 5000
NUMBERS = ["NaN", "nan", "Infinity", "-Infinity", "inf", "1e999", "-1e999", "-0", "-1", "0",
           "1e-999", "0x10", "abc", "1,5", " ", "\x00", "1\x00"]  # fmt: skip
TEXTS = ["\x00", "a\x00b", LONG, "\ufffd\ud7ff", "<script>alert(1)</script>", "NaN"]

QUERIES = [
    "?confidence=%00&intervals=%00&display=%00",
    "?confidence=%FF%FE&intervals=%FF&display=%C3%28",
    "?%00=%00&%FF=%FF",
    "?confidence=NaN&intervals=simultaneous&display=rounded",
    "?confidence=1e999",
    "?confidence=-0",
    "?confidence=Infinity%25",
    "?next=%00&page=-1&q=" + "x" * 10000,
    "?confidence=" + "9" * 5000,
]

# Fields of every page's forms (budgets, datasets, releases, accounts).
FIELDS = [
    "name", "slug", "description", "privacy_unit_description", "epsilon_cap", "delta_cap",
    "note", "username", "password", "role", "comment", "unit", "id_column",
    "contribution_bound", "title", "epsilon", "delta", "confidence", "mechanism", "dataset",
]  # fmt: skip
COLUMN_FIELDS = ["kind", "categories", "lower", "upper", "bins", "missing"]

# POSTs whose body is not read (or whose fields are all optional): any body is a valid
# request, so they may change things; they must still never answer 500.
BODY_IGNORED = {
    "accounts:logout",
    "releases:submit",
    "releases:withdraw",
    "releases:publish",
    "datasets:delete",
}
# Decisions: an empty or ordinary comment is a valid decision; NUL / over-long is not.
DECISIONS = {
    "review:request_approve",
    "review:request_reject",
    "releases:approve",
    "releases:reject",
}


def _walk(patterns, prefix="", namespace=""):
    for p in patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            ns = p.namespace or namespace
            yield from _walk(p.url_patterns, route, ns)
        elif isinstance(p, URLPattern) and p.name:
            yield (f"{namespace}:{p.name}" if namespace else p.name), route, p


def page_patterns() -> list[tuple[str, str, set[str]]]:
    out = []
    for name, route, pattern in _walk(get_resolver().url_patterns):
        if route.startswith(("admin/", "api/", "static/")) or name.startswith("admin:"):
            continue
        out.append((name, route, set(pattern.pattern.converters)))
    return sorted(out)


PATTERNS = page_patterns()


@dataclass
class World:
    project: Project
    owner: object
    reviewer: object
    outsider: object
    dataset: Dataset
    draft: Release
    submitted: Release
    published: Release
    users: dict = field(default_factory=dict)


@pytest.fixture
def world(project, owner, reviewer):
    published = build_release(project=project, owner=owner, reviewer=reviewer)
    dataset = make_dataset(project=project, owner=owner, rows=300)
    d = draft(project=project, owner=owner, dataset=dataset, epsilon="0.1")
    s = submitted(project=project, owner=owner, dataset=dataset, epsilon="0.1")
    outsider = UserFactory(username="oscar-outsider")
    w = World(project, owner, reviewer, outsider, dataset, d, s, published)
    w.users = {"anonymous": None, "outsider": outsider, "reviewer": reviewer, "owner": owner}
    return w


def valid_kwargs(name: str, converters: set[str], w: World) -> dict:
    kwargs = {}
    for key in converters:
        if key in ("slug", "project_slug"):
            kwargs[key] = w.project.slug
        elif name.startswith("budgets:request"):
            kwargs[key] = w.submitted.budget_request_id
        elif name.startswith("datasets:"):
            kwargs[key] = w.dataset.pk
        elif name.startswith("public:"):
            kwargs[key] = w.published.pk
        elif name in ("releases:approve", "releases:reject", "releases:withdraw"):
            kwargs[key] = w.submitted.pk
        else:
            kwargs[key] = w.draft.pk
    return kwargs


def hostile_kwargs(converters: set[str], valid: dict) -> list[dict]:
    """Each path argument in turn replaced by one that names nothing or overflows."""
    out = []
    for key in converters:
        if key in ("slug", "project_slug"):
            values = ["no-such-project", "a" * 3000, "-"]
        else:
            values = [0, 987654321, 2**31, HUGE]
        out.extend({**valid, key: v} for v in values)
    return out


def fingerprint() -> tuple:
    """Everything a refused POST must leave alone."""
    return (
        list(Project.objects.order_by("pk").values_list("pk", "epsilon_cap", "delta_cap")),
        list(Membership.objects.order_by("pk").values_list("pk", "role")),
        list(
            Dataset.objects.order_by("pk").values_list(
                "pk", "status", "declared", "id_column", "contribution_bound", "name"
            )
        ),
        list(
            Column.objects.order_by("pk").values_list(
                "pk", "kind", "categories", "lower", "upper", "bin_edges", "missing"
            )
        ),
        list(Release.objects.order_by("pk").values_list("pk", "status", "title")),
        Statistic.objects.count(),
        ReleaseEvent.objects.count(),
        ReleaseResult.objects.count(),
        list(BudgetRequest.objects.order_by("pk").values_list("pk", "status", "comment")),
        list(LedgerEntry.objects.order_by("pk").values_list("pk", "kind", "epsilon")),
        CapChange.objects.count(),
    )


def generic_bodies(w: World) -> list[tuple[str, dict]]:
    """(label, body): every field any page reads set to one invalid value, and none at all."""
    bodies: list[tuple[str, dict]] = [("missing-fields", {})]
    columns = list(w.dataset.columns.order_by("position"))
    for value in [*NUMBERS, *TEXTS]:
        body = {f: value for f in FIELDS}
        for c in columns:
            body.update({f"{f}-{c.position}": value for f in COLUMN_FIELDS})
        body["payload"] = value
        bodies.append((f"all={value[:12]!r}", body))
    return bodies


def caps_bodies() -> list[tuple[str, dict]]:
    bodies = []
    for value in NUMBERS:
        bodies.append(
            (
                f"caps={value!r}",
                {"epsilon_cap": value, "delta_cap": value, "note": "x",
                 "name": "P", "description": "d", "privacy_unit_description": "u"},
            )
        )  # fmt: skip
        bodies.append((f"eps-cap={value!r}", {"epsilon_cap": value, "delta_cap": "0.00001"}))
        if value not in ("0", "-0"):  # a zero delta cap is a valid cap
            bodies.append((f"delta-cap={value!r}", {"epsilon_cap": "1", "delta_cap": value}))
    bodies.append(("note-nul", {"epsilon_cap": "2", "delta_cap": "0", "note": "a\x00"}))
    bodies.append(("note-long", {"epsilon_cap": "2", "delta_cap": "0", "note": LONG}))
    return bodies


def declare_bodies(w: World) -> list[tuple[str, dict]]:
    columns = list(w.dataset.columns.order_by("position"))
    bodies = []
    for value in NUMBERS:
        declare = {"unit": "person", "id_column": "person", "contribution_bound": value}
        for c in columns:
            declare[f"kind-{c.position}"] = "excluded"
        declare.update({"kind-2": "numeric", "lower-2": value, "upper-2": "100", "bins-2": ""})
        bodies.append((f"declare-bound+lower={value!r}", declare))
        declare = {**declare, "contribution_bound": "1", "lower-2": "0", "upper-2": value}
        bodies.append((f"declare-upper={value!r}", declare))
        declare = {**declare, "upper-2": "100", "bins-2": f"0, {value}, 100"}
        bodies.append((f"declare-bins={value!r}", declare))
    declare = {f"kind-{c.position}": "categorical" for c in columns}
    declare.update({f"categories-{c.position}": "a\x00\nb" for c in columns})
    bodies.append(("declare-categories-nul", declare))
    declare = {f"kind-{c.position}": "excluded" for c in columns}
    bodies.append(("declare-id-nul", {**declare, "unit": "person", "id_column": "person\x00"}))
    return bodies


def member_bodies() -> list[tuple[str, dict]]:
    return [
        ("member-nul", {"username": "oscar-outsider\x00", "role": "reviewer"}),
        ("member-role", {"username": "oscar-outsider", "role": "owner\x00"}),
        ("member-unknown", {"username": "x" * 5000, "role": "reviewer"}),
        ("member-missing-role", {"username": "oscar-outsider"}),
    ]


def payload_bodies(w: World) -> list[tuple[str, dict]]:
    """The release builder's JSON payload with hostile numbers and shapes."""
    bodies = []
    for value in NUMBERS:
        for key, extra in (("epsilon", {}), ("delta", {"mechanism": "gaussian"}),
                           ("confidence", {})):  # fmt: skip
            data = builder_data(w.dataset, **{key: value, **extra})
            bodies.append((f"payload-{key}={value!r}", {"payload": json.dumps(data)}))
        stats = [
            {"kind": "mean", "column": "age", "n_guess": value},
            {"kind": "sum", "column": "income", "lower": value, "upper": value},
            {"kind": "count", "column": "region", "category": value},
        ]
        data = builder_data(w.dataset, statistics=stats)
        bodies.append((f"payload-stats={value!r}", {"payload": json.dumps(data)}))
    for dataset in (HUGE, -1, "1\x00", None, [1], {"a": 1}, 1.5, 1e308):
        data = {**builder_data(w.dataset), "dataset": dataset}
        bodies.append((f"payload-dataset={dataset!r}", {"payload": json.dumps(data)}))
    odd = [
        {"statistics": "nope"},
        {"statistics": [None, 1, "x", []]},
        {"statistics": [{"kind": "histogram", "column": "region", "column2": "region"}]},
        {"statistics": [{"kind": "\x00"}] * 500},
        {"title": "\x00", "mechanism": "\x00"},
        {"title": LONG, "mechanism": "gaussian", "delta": "0"},
    ]
    for extra in odd:
        data = builder_data(w.dataset, **extra)
        bodies.append((f"payload-{list(extra)[0]}", {"payload": json.dumps(data)}))
    bodies.append(("payload-nan-literal", {"payload": '{"epsilon": NaN, "delta": Infinity}'}))
    bodies.append(("payload-deep", {"payload": "[" * 100_000}))
    bodies.append(("payload-list", {"payload": "[1, 2]"}))
    return bodies


def bodies_for(name: str, w: World) -> list[tuple[str, dict]]:
    if name in DECISIONS:
        return decision_bodies()
    if name in BODY_IGNORED:
        return [("missing-fields", {}), ("nul", {f: "\x00" for f in FIELDS})]
    if name == "datasets:upload":
        return upload_bodies() + generic_bodies(w)[:4]
    if name == "datasets:texts":  # free text: any number-like text is a valid name
        return texts_bodies()
    extra = {
        "budgets:project_create": caps_bodies(),
        "budgets:project_budget": caps_bodies(),
        "budgets:member_add": member_bodies(),
        "datasets:declare": declare_bodies(w),
        "releases:new": payload_bodies(w),
        "releases:edit": payload_bodies(w),
        "releases:preview": payload_bodies(w),
    }.get(name, [])
    return generic_bodies(w) + extra


def texts_bodies() -> list[tuple[str, dict]]:
    """A dataset's name and description: refused without a name, with NUL or too long."""
    fields = ("name", "name_zh", "description", "description_zh")
    return [("missing-fields", {})] + [
        (f"texts={label}", {f: value for f in fields})
        for label, value in (("nul", "\x00"), ("nul-inside", "a\x00b"), ("long", LONG))
    ]


def decision_bodies() -> list[tuple[str, dict]]:
    return [("comment-nul", {"comment": "ok\x00"}), ("comment-long", {"comment": LONG})]


def upload_bodies() -> list[tuple[str, dict]]:
    csv = b"person,age\n1,2\n"
    return [
        ("upload-missing-file", {"name": "x"}),
        ("upload-name-nul", {"name": "a\x00", "file": SimpleUploadedFile("a.csv", csv)}),
        ("upload-name-long", {"name": LONG, "file": SimpleUploadedFile("a.csv", csv)}),
        ("upload-empty", {"name": "x", "file": SimpleUploadedFile("a.csv", b"")}),
        ("upload-file-as-text", {"name": "x", "file": "\x00not a file"}),
    ]


@dataclass
class Walk:
    failures: list[str] = field(default_factory=list)
    requests: int = 0

    def check(self, response, what: str) -> None:
        self.requests += 1
        if response.status_code >= 500:
            detail = ""
            if getattr(response, "exc_info", None):
                detail = "".join(traceback.format_exception(*response.exc_info))[-3000:]
            self.failures.append(f"{what} -> {response.status_code}\n{detail}")


def _client(user) -> Client:
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def _post(walk: Walk, client, url, body, what, *, must_not_change: bool, json_body=None):
    before = fingerprint() if must_not_change else None
    try:
        if json_body is not None:
            response = client.post(url, json_body, content_type="application/json")
        else:
            response = client.post(url, body)
    except Exception:  # the client itself must not blow up either
        walk.failures.append(f"{what} raised\n{traceback.format_exc()[-3000:]}")
        return
    walk.check(response, what)
    if must_not_change and response.status_code < 500:
        after = fingerprint()
        if after != before:
            walk.failures.append(
                f"{what} -> {response.status_code} changed the database:\n"
                f"  before={before}\n  after ={after}"
            )


def _params():
    for name, route, converters in PATTERNS:
        yield pytest.param(name, converters, id=name)


def test_the_walk_covers_the_pages():
    names = {name for name, _, _ in PATTERNS}
    assert {"budgets:project_budget", "datasets:declare", "releases:new", "public:release"} <= names
    assert not any(name.startswith(("admin:", "api")) for name in names)


@pytest.mark.parametrize(("name", "converters"), list(_params()))
def test_hostile_input_never_500_and_changes_nothing(name, converters, world):
    walk = Walk()
    valid = valid_kwargs(name, converters, world)
    url = reverse(name, kwargs=valid)
    bad_urls = [reverse(name, kwargs=k) for k in hostile_kwargs(converters, valid)]
    bodies = bodies_for(name, world)
    guard = name not in BODY_IGNORED
    for role, user in world.users.items():
        client = _client(user)
        for bad in bad_urls:
            walk.check(client.get(bad), f"{role} GET {bad[:120]}")
            _post(walk, client, bad, {"comment": "x"}, f"{role} POST {bad[:120]}",
                  must_not_change=True)  # fmt: skip
        for query in QUERIES:
            walk.check(client.get(url + query), f"{role} GET {url}{query[:80]}")
        # A page that only reads answers 405 (decisions and actions are POST-only, and an
        # empty POST to them is a valid request that would change things).
        if name not in DECISIONS | BODY_IGNORED and client.post(url).status_code == 405:
            walk.requests += 1
            continue
        # Non-members and the wrong role are refused before the body is read: a few suffice.
        privileged = role == "owner" or (role == "reviewer" and name in DECISIONS)
        for label, body in bodies if privileged else bodies[:3]:
            if hasattr(body.get("file"), "seek"):
                body["file"].seek(0)
            _post(walk, client, url, body, f"{role} POST {url} [{label}]", must_not_change=guard)
        if name in ("releases:new", "releases:edit", "releases:preview"):
            for raw in (b"\xff\xfe{", b'{"epsilon": "\x00"}', b"[" * 50_000):
                _post(walk, client, url, None, f"{role} POST {url} json={raw[:20]!r}",
                      must_not_change=guard, json_body=raw)  # fmt: skip
    assert not walk.failures, f"{len(walk.failures)} failures:\n\n" + "\n\n".join(walk.failures)
    assert walk.requests > 0


def test_hostile_session_cookie_and_decimal_values_are_harmless(client, world):
    """A cookie with NUL / invalid bytes, and decimal edge cases, on a page read by all."""
    hostile = Client(raise_request_exception=False)
    hostile.cookies["sessionid"] = "abc\x00def"
    hostile.cookies["csrftoken"] = "\x00" * 64
    response = hostile.get(reverse("public:project", kwargs={"slug": world.project.slug}))
    assert response.status_code == 200
    assert world.project.epsilon_cap == Decimal("1.0")


def test_huge_epsilon_cap_gets_a_clear_message_and_changes_nothing(world):
    client = _client(world.owner)
    url = reverse("budgets:project_budget", kwargs={"slug": world.project.slug})
    before = fingerprint()
    response = client.post(url, {"epsilon_cap": "1e999", "delta_cap": "0"})
    assert response.status_code == 400
    assert "epsilon cap is too large: it must be below 1000000000000." in response.content.decode()
    assert fingerprint() == before


def test_nul_in_a_reviewer_comment_is_refused_with_a_message(world):
    client = _client(world.reviewer)
    before = fingerprint()
    response = client.post(
        reverse("releases:reject", kwargs={"release_id": world.submitted.pk}),
        {"comment": "no\x00"},
        follow=True,
    )
    assert response.status_code == 200
    assert "The comment may not contain NUL characters." in response.content.decode()
    assert fingerprint() == before


def test_declare_page_shows_integer_bin_edges(world):
    client = _client(world.owner)
    response = client.get(reverse("datasets:declare", kwargs={"pk": world.dataset.pk}))
    assert response.status_code == 200
    assert "0, 18, 40, 65, 100" in response.content.decode()

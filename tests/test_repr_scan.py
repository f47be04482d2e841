"""No page or API text shows a Python repr, an exponent or a number with too many digits.

`seed_demo` builds a project with a published release of every statistic kind
and a request pending review; this test then renders every page an owner, a
reviewer and an anonymous reader can reach (GET; plus the builder's preview)
and scans what a person reads:

- HTML: the text between tags (outside <script> and <style>) and the
  attributes read aloud or shown (aria-label, alt, placeholder). Title
  attributes are where the exact value of a budget lives (`budget_exact`), so
  they are scanned for reprs only, never for digits.
- JSON (the API, data.json, the registry JSON, the builder preview): exact
  values stay exact, so numbers and numeric strings are not scanned for
  digits. Every string is scanned for reprs; the human-readable text fields
  (TEXT_KEYS: messages, labels, titles, explanations, notes, "*_text",
  "*_display", "*_label") also for exponents and digits.
- CSV: every cell for reprs; the text columns (CSV_TEXT_COLUMNS) also for
  exponents and digits.

The rules (`problems`): a repr (`None`, `True`, `False` as words, `{'`, `[{`,
`['`, `Decimal(`, `Fraction(`, `object at 0x`), an exponent (`1E+1`, `1e-07`),
and a number with a decimal point and more than MAX_SIGNIFICANT significant
digits. dpportal.formatting never writes more: budgets have 4 significant
digits, scales 3, half-widths 2, and a noisy value gets decimals only when its
half-width is below 10, two digits past the half-width's first one.
"""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from budgets.models import BudgetRequest, Project
from datasets.models import Dataset
from releases.demo import PENDING_TITLE, PUBLISHED_TITLE
from releases.models import Release
from releases.services import release_form_data

pytestmark = pytest.mark.django_db

MAX_SIGNIFICANT = 7

REPR = re.compile(
    r"\b(?:None|True|False)\b|\{'|\[\{|\['|\bDecimal\(|\bFraction\(|object at 0x|<built-in"
)
EXPONENT = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?[eE][-+]?\d+(?![\w.])")
DECIMAL = re.compile(
    r"(?<![\w.,])[-+]?\d{1,3}(?:,\d{3})*\.\d+(?![\w.])|(?<![\w.,])\d+\.\d+(?![\w.])"
)

TEXT_KEYS = {
    "message", "detail", "title", "description", "label", "explanation", "caption",
    "alt_text", "parameter_text", "interval_note", "privacy_unit", "status_label",
    "failure_reason", "comment", "note", "rule", "accounting_rule", "data_use", "text",
    "neighbouring", "mechanism_label", "unit",
}  # fmt: skip
CSV_TEXT_COLUMNS = (
    "release_title", "statistic_label", "noise", "noise_parameter", "privacy_unit", "columns",
)  # fmt: skip


def significant_digits(number: str) -> int:
    digits = number.lstrip("+-").replace(",", "").replace(".", "").lstrip("0")
    return len(digits)


def problems(text: str, *, digits: bool = True) -> list[str]:
    """What is wrong with one piece of text a person reads (empty: nothing)."""
    found = [f"repr {m.group(0)!r}" for m in REPR.finditer(text)]
    if digits:
        found += [f"exponent {m.group(0)!r}" for m in EXPONENT.finditer(text)]
        found += [
            f"{significant_digits(m.group(0))} significant digits in {m.group(0)!r}"
            for m in DECIMAL.finditer(text)
            if significant_digits(m.group(0)) > MAX_SIGNIFICANT
        ]
    return found


class _Text(HTMLParser):
    """Collects (where, text, check_digits) from an HTML page."""

    SPOKEN = ("aria-label", "alt", "placeholder")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pieces: list[tuple[str, str, bool]] = []
        self._skip = 0
        self._stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in self.SPOKEN:
                self.pieces.append((f"<{tag} {name}>", value, True))
            elif name in ("title", "value"):
                self.pieces.append((f"<{tag} {name}>", value, False))
        if tag in ("script", "style"):
            self._skip += 1
        if tag not in ("br", "img", "input", "meta", "link", "hr", "source"):
            self._stack.append(tag)

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        if tag in self._stack:
            while self._stack and self._stack.pop() != tag:
                pass

    def handle_data(self, data):
        if not self._skip and data.strip():
            where = f"<{self._stack[-1]}>" if self._stack else "text"
            self.pieces.append((where, data.strip(), True))


def scan_html(body: str) -> list[str]:
    parser = _Text()
    parser.feed(body)
    out = []
    for where, text, digits in parser.pieces:
        out += [f"{where} {problem} in {text[:120]!r}" for problem in problems(text, digits=digits)]
    return out


def _human_key(key: str) -> bool:
    return key in TEXT_KEYS or key.endswith(("_text", "_display", "_label", "_html"))


def scan_json(value, *, path: str = "$", key: str = "") -> list[str]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in scan_json(v, path=f"{path}.{k}", key=str(k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in scan_json(v, path=f"{path}[{i}]", key=key)]
    if isinstance(value, str):
        return [f"{path} {p} in {value[:120]!r}" for p in problems(value, digits=_human_key(key))]
    return []


def scan_csv(body: str) -> list[str]:
    out = []
    for i, row in enumerate(csv.DictReader(io.StringIO(body))):
        for column, cell in row.items():
            for p in problems(cell or "", digits=column in CSV_TEXT_COLUMNS):
                out.append(f"row {i + 1} {column}: {p} in {cell[:120]!r}")
    return out


def scan_response(response) -> list[str]:
    kind = response.get("Content-Type", "")
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    body = raw.decode()
    if "json" in kind:
        return scan_json(json.loads(body))
    if "csv" in kind:
        return scan_csv(body)
    return scan_html(body)


# --- the rules themselves --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("columns []; category None; hold False", True),
        ("[{'kind': 'count'}]", True),
        ("epsilon Decimal('0.5')", True),
        ("an epsilon of 1E+1", True),
        ("delta 1E-7", True),
        ("Epsilon spent 0.999999999998 of 3", True),
        ("52801.822967529296875", True),
        ("0.000040171073846375336", True),
        ("119968.000 rows", True),
        ("scale 44161725.0674", True),
        ("Epsilon spent 1 of 3", False),
        ("± 7,100 · scale 1,350 · 0.0000001 · 42.37 · 2026-05-01 12:30", False),
        ("none of the education categories", False),
        ("0.000040", False),
    ],
)
def test_the_scan_catches_what_issue_11_found(text, bad):
    assert bool(problems(text)) is bad


def test_title_attributes_may_hold_exact_values_but_no_repr():
    assert scan_html('<span title="0.333333333334">0.3333</span>') == []
    assert scan_html('<span title="None">x</span>') != []
    assert scan_html("<script>var x = 0.333333333334;</script><p>ok</p>") == []


def test_json_keeps_exact_values_but_not_reprs_or_unreadable_text():
    assert scan_json({"epsilon": "0.333333333334", "halfwidth": 7144.035614013672}) == []
    assert scan_json({"category": "None"}) != []
    assert scan_json({"message": "only 0.999999999998 remains"}) != []


# --- every page of a seeded project ---------------------------------------------------


def _api(user) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def _pages(*, project, dataset, published, pending, approved_request, pending_request):
    slug = project.slug
    pub = f"/p/{slug}/releases/{published.pk}/"
    public = [
        "/",
        "/accounts/login/",
        f"/p/{slug}/",
        pub,
        f"{pub}?confidence=0.99&intervals=simultaneous",
        f"{pub}?display=rounded&confidence=0.9",
        f"{pub}data.json",
        f"{pub}data.json?confidence=0.99",
        f"{pub}data.csv",
        f"/registry/{slug}/",
        f"/registry/{slug}.json",
    ]
    public_api = [
        "/api/v1/public/projects/",
        f"/api/v1/public/projects/{slug}/registry/",
        f"/api/v1/public/projects/{slug}/releases/",
        f"/api/v1/public/projects/{slug}/releases/{published.pk}/",
    ]
    member = [
        "/accounts/home/",
        f"/projects/{slug}/",
        f"/projects/{slug}/budget/",
        f"/datasets/project/{slug}/",
        f"/datasets/{dataset.pk}/",
        f"/releases/{published.pk}/",
        f"/releases/{pending.pk}/",
        f"/releases/{published.pk}/status.json",
    ]
    member_api = [
        "/api/v1/projects/",
        f"/api/v1/projects/{slug}/",
        f"/api/v1/projects/{slug}/members/",
        f"/api/v1/projects/{slug}/ledger/",
        f"/api/v1/projects/{slug}/datasets/",
        f"/api/v1/projects/{slug}/releases/",
        f"/api/v1/datasets/{dataset.pk}/",
        f"/api/v1/datasets/{dataset.pk}/status/",
        f"/api/v1/releases/{published.pk}/",
        f"/api/v1/releases/{pending.pk}/",
        f"/api/v1/releases/{published.pk}/status/",
        f"/api/v1/releases/{published.pk}/results/",
        f"/api/v1/releases/{published.pk}/results/?confidence=0.99",
        f"/api/v1/releases/{pending.pk}/preview/",
        "/api/v1/budget-requests/",
        f"/api/v1/budget-requests/{approved_request.pk}/",
        f"/api/v1/budget-requests/{pending_request.pk}/",
    ]
    owner = [
        "/projects/new/",
        f"/datasets/{dataset.pk}/declare/",
        f"/datasets/{dataset.pk}/delete/",
        f"/datasets/{dataset.pk}/status.json",
        f"/releases/new/{slug}/",
    ]
    owner_api = [f"/api/v1/datasets/{dataset.pk}/profile/"]
    reviewer = [
        "/projects/inbox/",
        f"/projects/requests/{pending_request.pk}/",
        f"/projects/requests/{approved_request.pk}/",
    ]
    return {
        "anonymous": (public, public_api),
        "owner": (public + member + owner, public_api + member_api + owner_api),
        "reviewer": (public + member + reviewer, public_api + member_api),
    }


def test_no_page_an_owner_reviewer_or_reader_reaches_shows_a_repr_or_raw_number():
    call_command("seed_demo", stdout=StringIO())
    project = Project.objects.get()
    dataset = Dataset.objects.get(project=project)
    published = Release.objects.get(title=PUBLISHED_TITLE)
    pending = Release.objects.get(title=PENDING_TITLE)
    approved_request = published.budget_request
    pending_request = BudgetRequest.objects.get(pk=pending.budget_request_id)
    users = {
        "anonymous": None,
        "owner": get_user_model().objects.get(username="owner"),
        "reviewer": get_user_model().objects.get(username="reviewer"),
    }
    pages = _pages(
        project=project,
        dataset=dataset,
        published=published,
        pending=pending,
        approved_request=approved_request,
        pending_request=pending_request,
    )
    failures: list[str] = []
    scanned = 0
    for role, (html_pages, api_pages) in pages.items():
        web = Client()
        if users[role] is not None:
            web.force_login(users[role])
        api = _api(users[role])
        for url, client in [(u, web) for u in html_pages] + [(u, api) for u in api_pages]:
            response = client.get(url)
            if response.status_code != 200:
                failures.append(f"{role} {url}: status {response.status_code}")
                continue
            scanned += 1
            failures += [f"{role} {url}: {p}" for p in scan_response(response)]
        # the builder's live preview (JSON shown on the builder page)
        if role == "owner":
            for url, data in [
                (f"/releases/preview/{project.slug}/", release_form_data(release=pending)),
            ]:
                response = web.post(url, data=json.dumps(data), content_type="application/json")
                assert response.status_code == 200, response.content
                scanned += 1
                failures += [f"{role} POST {url}: {p}" for p in scan_response(response)]
            body = release_form_data(release=published)
            # the API takes absent fields, not the form's empty strings
            body["statistics"] = [
                {k: v for k, v in stat.items() if v != ""} for stat in body["statistics"]
            ]
            response = api.post(
                f"/api/v1/projects/{project.slug}/releases/preview/", body, format="json"
            )
            assert response.status_code == 200, response.content
            scanned += 1
            failures += [f"{role} POST api preview: {p}" for p in scan_response(response)]
    assert scanned >= 80
    assert not failures, f"{len(failures)} problems:\n" + "\n".join(failures)

"""The Content-Security-Policy: on every kind of page, strict, and no inline script left."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent


def policy_of(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


def test_every_kind_of_page_sends_the_strict_policy(project, owner, admin_user):
    anonymous, member, staff = Client(), Client(), Client()
    assert member.login(username=owner.username, password=PASSWORD)
    staff.force_login(admin_user)
    pages = [
        (anonymous, "/"),
        (anonymous, "/accounts/login/"),
        (anonymous, f"/registry/{project.slug}/"),
        (member, f"/projects/{project.slug}/"),
        (member, f"/releases/new/{project.slug}/"),
        (member, "/api/v1/projects/"),  # DRF's browsable API (HTML) and its JSON
        (anonymous, "/api/docs/"),
        (staff, "/admin/"),
        (anonymous, "/no/such/page/"),
    ]
    for client, url in pages:
        for accept in ("text/html", "application/json"):
            response = client.get(url, HTTP_ACCEPT=accept)
            policy = policy_of(response)
            assert policy["script-src"] == ["'self'"], url
            assert policy["object-src"] == ["'none'"], url
            assert policy["base-uri"] == ["'self'"], url
            assert policy["frame-ancestors"] == ["'none'"], url
            assert policy["style-src"] == ["'self'"], url
            assert policy["style-src-elem"] == ["'self'"], url
            assert policy["style-src-attr"] == ["'none'"], url
            assert "'unsafe-eval'" not in response["Content-Security-Policy"], url


def test_swagger_ui_loads_its_init_script_as_a_file(db):
    page = Client().get("/api/docs/").content.decode()
    src = re.search(r'<script src="([^"]*\?[^"]*script[^"]*)"', page)
    assert src, "Swagger UI's init script is not a separate file"
    script = Client().get(src.group(1).replace("&amp;", "&"))
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in script.content.decode()
    assert "<style>" not in page


def test_no_template_has_an_inline_script_or_inline_event_handler():
    inline = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
    handler = re.compile(r"\son[a-z]+\s*=", re.I)
    offenders = []
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text()
        offenders += [f"{path}: {m.group(0)}" for m in inline.finditer(text)]
        offenders += [f"{path}: {m.group(0)}" for m in handler.finditer(text)]
    assert offenders == []


def test_no_static_script_writes_markup_with_innerhtml():
    offenders = [
        str(path)
        for path in (ROOT / "static" / "js").rglob("*.js")
        if re.search(
            r"\.(innerHTML|outerHTML)\s*[+]?=|insertAdjacentHTML|document\.write", path.read_text()
        )
    ]
    assert offenders == []


def test_plotlys_global_sheet_matches_the_bundle():
    """The pages link plotly.js's global rules as a static sheet (no inline <style>):
    it must hold what the vendored bundle would have inserted, in the same order."""
    import runpy

    script = runpy.run_path(str(ROOT / "scripts" / "plotly_global_css.py"))
    rules = script["rules"](script["BUNDLE"].read_text())
    assert len(rules) > 40
    sheet = script["TARGET"].read_text().splitlines()
    assert [line for line in sheet if "{" in line] == [f"{s}{{{b}}}" for s, b in reversed(rules)]
    for template in ("public/release.html", "releases/builder.html"):
        text = (ROOT / "templates" / template).read_text()
        assert 'id="plotly.js-style-global" class="no-inline-styles"' in text, template
        assert text.index("plotly-global.css") < text.index("plotly-dpportal.min.js"), template

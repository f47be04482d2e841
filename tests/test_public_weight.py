"""Page weight (issue 11, point 7) and the favicon (point 8).

Static files are served compressed with content-hashed names in every mode that
serves people, the embedded default of scripts/run.sh included; the Plotly
bundle holds only the traces the pages draw; HTML and JSON responses are compressed.
bench/page_weight.py measures the transferred bytes and time to interactive.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from tests.public_builders import build_release

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = "vendor/plotly/plotly-dpportal.min.js"


@pytest.fixture
def published(project, owner, reviewer):
    return build_release(project=project, owner=owner, reviewer=reviewer)


def test_the_plotly_bundle_is_a_partial_one_of_the_traces_we_draw():
    path = finders.find(BUNDLE)
    assert path, "the vendored partial bundle is among the static files"
    text = Path(path).read_text()
    assert "plotly.js (dpportal - minified) v3.1.0" in text[:300]
    # scripts/build-plotly-bundle.sh: bar, heatmap, scatter, and no world calendars
    traces = set(re.findall(r'name:"([a-z0-9]+)",basePlotModule', text))
    assert traces == {"bar", "heatmap", "scatter"}
    assert "Nanakshahi" not in text  # a calendar of world-calendars
    assert Path(path).stat().st_size < 1_000_000  # cartesian 1.3 MB, full bundle 4.8 MB
    assert (Path(path).parent / "LICENSE").read_text().startswith("MIT License")
    # the full bundle of the plotly wheel is no longer among our static files
    assert finders.find("vendor/plotly/plotly.min.js") is None
    assert finders.find("vendor/plotly/plotly-cartesian.min.js") is None


@pytest.mark.django_db
def test_release_page_loads_the_partial_bundle(client, published):
    url = reverse("public:release", args=[published.project.slug, published.pk])
    html = client.get(url).content.decode()
    scripts = re.findall(r'<script src="([^"]+)"', html)
    assert scripts == [
        "/static/" + BUNDLE,
        "/static/js/public-charts-stats.js",
        "/static/js/public-release.js",
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["public:release", "public:release-json", "registry-json"])
def test_html_and_json_responses_are_compressed(client, published, name):
    slug = published.project.slug
    if name == "registry-json":
        url = reverse("registry:project_json", args=[slug])
    else:
        url = reverse(name, args=[slug, published.pk])
    plain = client.get(url)
    packed = client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert packed["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in packed["Vary"]
    assert gzip.decompress(packed.content) == plain.content
    assert len(packed.content) < len(plain.content) / 2


@pytest.mark.django_db
def test_favicon_is_linked_and_served(client):
    html = client.get(reverse("public:home")).content.decode()
    icons = re.findall(r'<link rel="icon" href="([^"]+)"', html)
    assert icons == ["/static/favicon.svg", "/static/favicon.ico"]
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == "/static/favicon.ico"
    icon = Path(finders.find("favicon.ico")).read_bytes()
    assert icon[:4] == b"\x00\x00\x01\x00" and len(icon) < 2000  # an ICO, small
    svg = Path(finders.find("favicon.svg")).read_text()
    assert svg.startswith("<svg") and len(svg) < 2000


def test_a_gunicorn_worker_loads_the_views_while_it_boots(tmp_path):
    """Not in its first request: a first visit on a fresh worker waited seconds for
    the imports behind the URLconf (dp_accounting, scipy). Importing the WSGI module,
    as a worker does when it boots, must have loaded them."""
    probe = (
        "import sys; import dpportal.wsgi; "
        "print(all(m in sys.modules for m in ('releases.public.views', 'accounts.views')))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DPPORTAL_VAR_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300, check=True)  # fmt: skip
    assert out.stdout.strip().splitlines()[-1] == "True"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, **headers: str):
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_run_sh_serves_static_files_hashed_and_compressed(tmp_path):
    """The embedded default, started the way scripts/run.sh starts it."""
    script = (ROOT / "scripts" / "run.sh").read_text()
    assert "export DPPORTAL_STATIC_COLLECTED=1" in script
    assert "manage.py collectstatic --noinput" in script
    assert re.search(r"manage.py runserver .*--nostatic", script)
    env = {
        **os.environ,
        "DEBUG": "1",
        "DPPORTAL_STATIC_COLLECTED": "1",
        "DPPORTAL_VAR_DIR": str(tmp_path / "var"),
        "STATIC_ROOT": str(tmp_path / "static"),
        "PYTHONPATH": str(ROOT),
    }
    for name in ("DATABASE_URL", "REDIS_URL"):  # the embedded default has neither
        env.pop(name, None)
    (tmp_path / "var").mkdir()
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "collectstatic", "--noinput"], env=env, check=True, timeout=300,
                   capture_output=True)  # fmt: skip
    manifest = json.loads((tmp_path / "static" / "staticfiles.json").read_text())["paths"]
    hashed = manifest[BUNDLE]
    assert re.fullmatch(r"vendor/plotly/plotly-dpportal\.min\.[0-9a-f]{12}\.js", hashed)
    port = _free_port()
    server = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload", "--nostatic"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        status, headers, body = _get(f"{base}/static/{hashed}", **{"Accept-Encoding": "gzip"})
        assert status == 200
        assert headers.get("Content-Encoding") == "gzip"
        assert "immutable" in headers.get("Cache-Control", "")
        assert len(body) < 600_000  # 1.3 MB of JavaScript, compressed
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            opener.open(f"{base}/favicon.ico", timeout=10)
            pytest.fail("/favicon.ico should redirect")
        except urllib.error.HTTPError as redirect:
            assert redirect.code == 302
            assert redirect.headers["Location"] == "/static/" + manifest["favicon.ico"]
        # the raw source folders are not served in this mode
        assert _get(f"{base}/static/vendor/plotly/plotly.min.js")[0] == 404
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)

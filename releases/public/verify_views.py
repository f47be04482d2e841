"""The release verification script as a download, and the page that says how to run it.

The script (releases/verify/dpportal_verify.py) is one standalone file: numpy, scipy and
dp-accounting only, no dpportal code, so anyone can read it and run it on a release's
record and its project's epsilon registry. The page names the library versions the
product itself runs with (the pins of requirements.txt), so a reader installs the very
same ones.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header
from django.views import View

SCRIPT_PATH = Path(__file__).resolve().parent.parent / "verify" / "dpportal_verify.py"
SCRIPT_NAME = "dpportal_verify.py"
#: the libraries the script needs, by their names on PyPI
SCRIPT_REQUIREMENTS = ("numpy", "scipy", "dp-accounting")
CACHE_SECONDS = 3600


@lru_cache(maxsize=1)
def script_bytes() -> bytes:
    """The script's bytes (read once per process: it changes only with a deploy)."""
    return SCRIPT_PATH.read_bytes()


def pinned_requirements() -> list[tuple[str, str]]:
    """(name, version) of each library the script needs, as installed with the product."""
    return [(name, metadata.version(name)) for name in SCRIPT_REQUIREMENTS]


class VerifyScriptView(View):
    """The script as a file download (text/x-python), the same for everyone."""

    def get(self, request: HttpRequest) -> HttpResponse:
        body = script_bytes()
        response = HttpResponse(body, content_type="text/x-python; charset=utf-8")
        response["Content-Disposition"] = content_disposition_header(True, SCRIPT_NAME)
        response["Cache-Control"] = f"public, max-age={CACHE_SECONDS}"
        response["ETag"] = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        return response


class VerifyGuideView(View):
    """How to run the script: a virtual environment, the pinned libraries, the documents."""

    def get(self, request: HttpRequest) -> HttpResponse:
        requirements = pinned_requirements()
        return render(
            request,
            "public/verify.html",
            {
                "requirements": requirements,
                "pip_line": " ".join(f"{name}=={version}" for name, version in requirements),
                "script_sha256": hashlib.sha256(script_bytes()).hexdigest(),
            },
        )

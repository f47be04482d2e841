"""dpportal.privacy stands alone: importing all of it never imports Django, Celery,
`releases` or `budgets` (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dpportal.privacy as privacy_package

ROOT = Path(privacy_package.__file__).resolve().parents[2]
FORBIDDEN = ("django", "celery", "releases", "budgets", "rest_framework", "kombu")

SCRIPT = """
import importlib, json, pkgutil, sys
import dpportal.privacy as pkg
names = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__))
for name in names:
    importlib.import_module("dpportal.privacy." + name)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in %r)
print(json.dumps({"modules": names, "forbidden": loaded}))
"""


def test_importing_every_privacy_module_imports_no_application_code():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT % (FORBIDDEN,)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    report = json.loads(out.stdout)
    assert report["forbidden"] == []
    assert {"samplers", "mechanisms", "accuracy", "accounting", "planning", "rng"} <= set(
        report["modules"]
    )


def test_modules_stay_small_and_documented():
    """STYLE.md: modules under ~400 lines; every public function has a docstring."""
    import ast

    for path in Path(privacy_package.__file__).parent.glob("*.py"):
        text = path.read_text()
        assert len(text.splitlines()) <= 400, path.name
        tree = ast.parse(text)
        assert ast.get_docstring(tree), path.name
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_"):
                assert ast.get_docstring(node), f"{path.name}:{node.name}"

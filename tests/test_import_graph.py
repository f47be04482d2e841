"""Imports point one way: interfaces -> services and selectors -> models -> dpportal.privacy.

The whole project's import graph (module-level AND function-level imports, read
with ast: tests/import_graph.py) must have no cycle, so no import inside a
function can be hiding one. Tasks are reached by name only, through each app's
dispatch module: services and the lifecycle decide that a task runs, tasks call
them, never the reverse. The first tests check the checker itself on a small
package written for the purpose, so the project's tests cannot pass by missing
what they look for.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.import_graph import describe, find_cycle, project_imports, project_modules

#: module name parts that make a module an interface (it calls services; nothing calls it)
INTERFACE_PARTS = {
    "admin",
    "api",
    "api_urls",
    "demo",
    "forms",
    "management",
    "tasks",
    "templatetags",
    "urls",
    "views",
}
#: module name parts of the layers below the interfaces
CORE_PARTS = {"compute", "dp", "dp_stats", "lifecycle", "selectors", "services"}


def layer(module: str) -> str:
    parts = module.split(".")
    if parts[:2] == ["dpportal", "privacy"]:
        return "privacy"
    if any(p in INTERFACE_PARTS or p.endswith(("_views", "_urls")) for p in parts):
        return "interface"
    if parts[-1] == "dispatch":
        return "dispatch"
    if "models" in parts or "migrations" in parts:
        return "models"
    if any(p in CORE_PARTS or p.endswith("_selectors") for p in parts):
        return "core"
    return "other"


# --- the checker finds what it looks for ----------------------------------------------------


def _package(root: Path, files: dict[str, str]) -> list:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return project_imports(project_modules(root, ("pkg",)))


def test_a_cycle_hidden_in_a_function_is_found(tmp_path):
    imports = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/services.py": "from pkg.models import Thing\n",
            "pkg/models.py": "class Thing:\n    pass\n",
            "pkg/lifecycle.py": "import pkg.services\n\ndef go():\n    from pkg import tasks\n",
            "pkg/tasks.py": "from pkg.lifecycle import go\n",
        },
    )
    cycle = find_cycle(imports)
    assert {(e.importer, e.target) for e in cycle} == {
        ("pkg.lifecycle", "pkg.tasks"),
        ("pkg.tasks", "pkg.lifecycle"),
    }
    assert [e.in_function for e in cycle if e.importer == "pkg.lifecycle"] == [True]
    assert "pkg.lifecycle -> pkg.tasks (line 4, in a function)" in describe(cycle)


def test_a_submodule_import_runs_its_package_and_type_checking_does_not_count(tmp_path):
    imports = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "from pkg.sub.plan import Plan\nfrom pkg.sub.use import use\n",
            "pkg/sub/plan.py": "class Plan:\n    pass\n",
            "pkg/sub/use.py": "from pkg.sub.plan import Plan\n\ndef use():\n    pass\n",
            "pkg/dp.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg.sub.plan import Plan\n"
            ),
            "pkg/math.py": "def f():\n    from pkg.sub.plan import Plan\n",
            "pkg/apps.py": (
                "from django.apps import AppConfig\n"
                "class PkgConfig(AppConfig):\n"
                "    def ready(self):\n        import pkg.sub\n"
            ),
        },
    )
    edges = {(e.importer, e.target) for e in imports}
    # pkg/sub/__init__ runs before pkg.sub.plan: an edge to both; never to one's own package
    assert ("pkg.math", "pkg.sub") in edges and ("pkg.math", "pkg.sub.plan") in edges
    assert ("pkg.sub.use", "pkg.sub") not in edges
    assert not any(importer in ("pkg.dp", "pkg.apps") for importer, _ in edges)
    assert find_cycle(imports) == []
    # the same sub-package import from below its __init__'s importers closes a cycle
    (tmp_path / "pkg/sub/plan.py").write_text("from pkg.math import f\n")
    (tmp_path / "pkg/math.py").write_text("from pkg.sub.use import use\n")
    assert find_cycle(project_imports(project_modules(tmp_path, ("pkg",))))


# --- the project ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def imports():
    return project_imports()


def test_the_project_has_no_import_cycle(imports):
    cycle = find_cycle(imports)
    assert not cycle, "an import cycle:\n" + describe(cycle)


def test_the_layers_below_the_interfaces_never_import_one(imports):
    wrong = [
        e
        for e in imports
        if layer(e.importer) in ("core", "dispatch", "models", "privacy")
        and layer(e.target) == "interface"
    ]
    assert not wrong, "a service, selector, model or the math imports an interface:\n" + describe(
        wrong
    )


def test_no_module_imports_a_tasks_module(imports):
    wrong = [e for e in imports if e.target.split(".")[-1] == "tasks"]
    assert not wrong, "tasks are sent by name through the app's dispatch module:\n" + describe(
        wrong
    )


def test_models_import_only_models_and_the_math(imports):
    wrong = [
        e
        for e in imports
        if layer(e.importer) == "models"
        and layer(e.target) not in ("models", "privacy")
        and e.target not in ("accounts", "budgets", "datasets", "releases", "dpportal")
    ]
    assert not wrong, "a model imports a layer above it:\n" + describe(wrong)


def test_the_math_imports_only_the_math(imports):
    wrong = [e for e in imports if layer(e.importer) == "privacy" and layer(e.target) != "privacy"]
    assert not wrong, "dpportal.privacy imports the application:\n" + describe(wrong)


def test_dispatch_modules_import_only_the_celery_app(imports):
    modules = [m for m in project_modules() if layer(m) == "dispatch"]
    assert sorted(modules) == ["datasets.dispatch", "releases.dispatch"]
    wrong = [
        e
        for e in imports
        if layer(e.importer) == "dispatch" and e.target not in ("dpportal", "dpportal.celery")
    ]
    assert not wrong, "a dispatch module imports the application:\n" + describe(wrong)


def test_the_dispatched_names_are_the_registered_tasks():
    from datasets import dispatch as datasets_dispatch
    from datasets.tasks import dataset_ingest_task, dataset_person_rows_task
    from dpportal.celery import app
    from releases import dispatch as releases_dispatch
    from releases.tasks import release_compute_task

    assert releases_dispatch.COMPUTE_TASK == release_compute_task.name
    assert datasets_dispatch.INGEST_TASK == dataset_ingest_task.name
    assert datasets_dispatch.PERSON_ROWS_TASK == dataset_person_rows_task.name
    assert {
        releases_dispatch.COMPUTE_TASK,
        datasets_dispatch.INGEST_TASK,
        datasets_dispatch.PERSON_ROWS_TASK,
    } <= set(app.tasks)

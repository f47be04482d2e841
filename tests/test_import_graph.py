"""Imports point one way: interfaces -> services and selectors -> models -> dpportal.privacy,
and releases -> datasets, accounts -> budgets -> dpportal's core -> dpportal.privacy.

The whole project's import graph (module-level, function-level AND type-only
imports, read with ast: tests/import_graph.py) must have no cycle, so no import
inside a function or under `if TYPE_CHECKING:` can be hiding one. Every module has
a layer (LAYERS, an explicit map) and an app (APP_RANK); no import runs from a
lower layer to a higher one, nor from an app to one above it (the root URLconfs,
which mount every app's URLs, excepted). Tasks are reached by name only, through
each app's dispatch module: services and the lifecycle decide that a task runs,
tasks call them, never the reverse. The first tests check the checker itself, on a
small package written for the purpose and on made-up edges, so the project's tests
cannot pass by missing what they look for.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.import_graph import Import, describe, find_cycle, project_imports, project_modules

#: The layers, from the top down: a module imports its own layer or one below it.
#: interface: what a person, a worker or the command line calls (views, API views,
#:   forms, admin, URLconfs, tasks, management commands, templatetags, settings) and
#:   the presentation only they use; nothing below imports it.
#: service: services, selectors, the lifecycle, the compute path, the DP plans.
#: dispatch: sends a task by name (imports only the Celery app).
#: models: Django models and migrations.
#: base: code that knows no model and no request (errors, formatting, message
#:   records, the readers of uploaded files, storage).
#: privacy: the math (imports nothing of the project; its own test below).
LAYER_RANK = {"interface": 5, "service": 4, "dispatch": 3, "models": 2, "base": 1, "privacy": 0}

#: module or package -> layer; the longest matching name decides. Every module of the
#: project must be covered (a new module needs a line here: decide where it sits).
LAYERS = {
    # accounts
    "accounts.api": "interface",
    "accounts.apps": "interface",
    "accounts.backends": "interface",
    "accounts.forms": "interface",
    "accounts.migrations": "models",
    "accounts.services": "service",
    "accounts.throttling": "interface",
    "accounts.urls": "interface",
    "accounts.views": "interface",
    # budgets
    "budgets.admin": "interface",
    "budgets.amounts": "base",
    "budgets.api": "interface",
    "budgets.apps": "interface",
    "budgets.forms": "interface",
    "budgets.management": "interface",
    "budgets.migrations": "models",
    "budgets.models": "models",
    "budgets.public_urls": "interface",
    "budgets.public_version": "base",
    "budgets.selectors": "service",
    "budgets.services": "service",
    "budgets.urls": "interface",
    "budgets.views": "interface",
    # datasets
    "datasets.admin": "interface",
    "datasets.api": "interface",
    "datasets.apps": "interface",
    "datasets.checks": "interface",
    "datasets.codebook_views": "interface",
    "datasets.declare_views": "interface",
    "datasets.demo": "interface",
    "datasets.dispatch": "dispatch",
    "datasets.domains": "base",
    "datasets.external": "base",
    "datasets.ingest": "base",
    "datasets.locations": "base",
    "datasets.migrations": "models",
    "datasets.models": "models",
    "datasets.person_rows": "base",
    "datasets.private_files": "base",
    "datasets.reading_views": "interface",
    "datasets.reading_words": "interface",
    "datasets.register_views": "interface",
    "datasets.selectors": "service",
    "datasets.services": "service",
    "datasets.storage": "base",
    "datasets.tasks": "interface",
    "datasets.upload_limits": "interface",
    "datasets.urls": "interface",
    "datasets.views": "interface",
    # dpportal: the project's core
    "dpportal.api": "interface",
    "dpportal.api_urls": "interface",
    "dpportal.bidi": "base",
    "dpportal.bilingual": "base",
    "dpportal.buckets": "base",
    "dpportal.cache": "base",
    "dpportal.catalogues": "interface",
    "dpportal.celery": "base",
    "dpportal.converters": "interface",
    "dpportal.errors": "base",
    "dpportal.formats": "base",
    "dpportal.formatting": "base",
    "dpportal.logsafe": "base",
    "dpportal.messages": "base",
    "dpportal.middleware": "interface",
    "dpportal.privacy": "privacy",
    "dpportal.product": "base",
    "dpportal.public_cache": "interface",
    "dpportal.local_copies": "base",
    "dpportal.settings": "interface",
    "dpportal.statistic_names": "base",
    "dpportal.staticfiles": "interface",
    "dpportal.tasklimits": "base",
    "dpportal.templatetags": "interface",
    "dpportal.tokens": "base",
    "dpportal.urls": "interface",
    "dpportal.words": "base",
    "dpportal.wsgi": "interface",
    # releases
    "releases.admin": "interface",
    "releases.api": "interface",
    "releases.apps": "interface",
    "releases.builder_text": "interface",
    "releases.compute": "service",
    "releases.demo": "interface",
    "releases.dispatch": "dispatch",
    "releases.dp": "service",
    "releases.kinds": "service",
    "releases.lifecycle": "service",
    "releases.management": "interface",
    "releases.migrations": "models",
    "releases.models": "models",
    "releases.opendp_program": "interface",
    "releases.opendp_runner": "interface",
    "releases.plans": "service",
    "releases.private_check": "service",
    "releases.presentation": "interface",
    "releases.public": "interface",
    "releases.public.paging": "interface",
    "releases.public.selectors": "service",
    "releases.public.urls": "interface",
    "releases.public.verify_views": "interface",
    "releases.public.views": "interface",
    "releases.results_text": "interface",
    "releases.retry": "service",
    "releases.rows_tradeoff": "interface",
    "releases.review": "service",
    "releases.review.selectors": "service",
    "releases.review.stats": "service",
    "releases.review.stats_text": "service",
    "releases.review.text": "service",
    "releases.review.types": "service",
    "releases.review.urls": "interface",
    "releases.review.views": "interface",
    "releases.selectors": "service",
    # the standalone verification script: numpy, scipy and dp-accounting, no project module
    "releases.verify": "base",
    "releases.services": "service",
    "releases.tasks": "interface",
    "releases.templatetags": "interface",
    "releases.urls": "interface",
    "releases.views": "interface",
}

#: The apps, from the top down: a module imports its own app or one ranked lower,
#: never one ranked higher or another app of its rank. A dataset belongs to a
#: project (datasets -> budgets); the accounts' home page lists projects and reviews.
APP_RANK = {
    "releases": 4,
    "datasets": 3,
    "accounts": 3,
    "budgets": 2,
    "dpportal": 1,
    "dpportal.privacy": 0,
}

#: The root URLconfs mount every app's URLs: the one import allowed to run up the apps.
ROOT_URLCONFS = {"dpportal.urls", "dpportal.api_urls"}

#: Import cycles known today, each as the type-only edge that closes it (a test below
#: fails once an edge listed here no longer closes a cycle, so the set only shrinks).
KNOWN_CYCLES_TO_REMOVE: set[tuple[str, str]] = set()


def app_of(module: str) -> str:
    return "dpportal.privacy" if module.startswith("dpportal.privacy") else module.split(".")[0]


def layer(module: str) -> str:
    """The module's layer from LAYERS (an app's own package, always empty: base)."""
    if module in APP_RANK:
        return "privacy" if module == "dpportal.privacy" else "base"
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        found = LAYERS.get(".".join(parts[:end]))
        if found is not None:
            return found
    raise KeyError(f"{module} has no layer: add it to LAYERS in {__name__}")


def upward_layer_imports(imports: list[Import]) -> list[Import]:
    return [e for e in imports if LAYER_RANK[layer(e.importer)] < LAYER_RANK[layer(e.target)]]


def upward_app_imports(imports: list[Import]) -> list[Import]:
    return [
        e
        for e in imports
        if app_of(e.importer) != app_of(e.target)
        and APP_RANK[app_of(e.importer)] <= APP_RANK[app_of(e.target)]
        and e.importer not in ROOT_URLCONFS
    ]


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


def test_a_submodule_import_runs_its_package_and_type_only_imports_are_marked(tmp_path):
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
                "else:\n    import pkg.math\n"
            ),
            "pkg/math.py": "def f():\n    from pkg.sub.plan import Plan\n",
            "pkg/apps.py": (
                "from django.apps import AppConfig\n"
                "class PkgConfig(AppConfig):\n"
                "    def ready(self):\n        import pkg.sub\n"
            ),
        },
    )
    edges = {(e.importer, e.target): e for e in imports}
    # pkg/sub/__init__ runs before pkg.sub.plan: an edge to both; never to one's own package
    assert ("pkg.math", "pkg.sub") in edges and ("pkg.math", "pkg.sub.plan") in edges
    assert ("pkg.sub.use", "pkg.sub") not in edges
    assert not any(importer == "pkg.apps" for importer, _ in edges)
    # under TYPE_CHECKING: an edge, marked; its else branch runs, so it is not
    assert edges["pkg.dp", "pkg.sub.plan"].type_only and edges["pkg.dp", "pkg.sub"].type_only
    assert not edges["pkg.dp", "pkg.math"].type_only
    assert "pkg.dp -> pkg.sub.plan (line 3, type-only)" in describe(
        [edges["pkg.dp", "pkg.sub.plan"]]
    )
    assert find_cycle(imports) == []
    # the same sub-package import from below its __init__'s importers closes a cycle
    (tmp_path / "pkg/sub/plan.py").write_text("from pkg.math import f\n")
    (tmp_path / "pkg/math.py").write_text("from pkg.sub.use import use\n")
    assert find_cycle(project_imports(project_modules(tmp_path, ("pkg",))))


def test_a_cycle_through_a_type_only_import_is_found(tmp_path):
    imports = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/plan.py": "from pkg.dp import scale\n\nclass Plan:\n    pass\n",
            "pkg/dp.py": (
                "from __future__ import annotations\n"
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg.plan import Plan\n"
                "def scale(plan: Plan) -> float:\n    return 1.0\n"
            ),
        },
    )
    cycle = find_cycle(imports)
    assert {(e.importer, e.target, e.type_only) for e in cycle} == {
        ("pkg.plan", "pkg.dp", False),
        ("pkg.dp", "pkg.plan", True),
    }


@pytest.mark.parametrize(
    "importer, target",
    [
        ("budgets.views", "releases.lifecycle"),  # an app imports one above it
        ("datasets.management.commands.seed_demo", "releases.demo"),
        ("dpportal.api.authentication", "accounts.services"),  # the core imports an app
        ("datasets.services.uploads", "accounts.services"),  # an app of the same rank
        ("dpportal.privacy.noise", "dpportal.formatting"),  # the math imports the core
    ],
)
def test_an_import_up_the_apps_is_found(importer, target):
    edge = Import(importer, target, 1, in_function=False, type_only=True)
    assert upward_app_imports([edge]) == [edge]


@pytest.mark.parametrize(
    "importer, target",
    [
        ("releases.review.views", "budgets.views"),  # an interface of an app below
        ("releases.services.review", "releases.lifecycle"),
        ("datasets.models", "budgets.models"),
        ("dpportal.urls", "releases.review.urls"),  # the root URLconf mounts every app
    ],
)
def test_an_import_down_the_apps_passes(importer, target):
    assert upward_app_imports([Import(importer, target, 1, in_function=False)]) == []


@pytest.mark.parametrize(
    "importer, target",
    [
        ("releases.services.preview", "releases.views"),  # a service imports an interface
        ("budgets.selectors.budget", "releases.api"),
        ("budgets.models", "budgets.selectors"),  # a model imports a selector
        ("datasets.ingest.reader", "datasets.models"),  # base code imports a model
        ("dpportal.errors", "dpportal.middleware"),
        ("releases.dispatch", "releases.lifecycle"),
    ],
)
def test_an_import_up_the_layers_is_found(importer, target):
    edge = Import(importer, target, 1, in_function=True)
    assert upward_layer_imports([edge]) == [edge]


def test_a_module_outside_the_layer_map_is_refused():
    assert layer("releases.kinds.count") == "service"
    assert layer("budgets") == "base" and layer("dpportal.privacy") == "privacy"
    with pytest.raises(KeyError, match="releases.anything has no layer"):
        layer("releases.anything")


# --- the project ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def imports():
    return project_imports()


def test_the_project_has_no_import_cycle(imports):
    """Type-only imports count: a cycle through one is a cycle of the design."""
    cycle = find_cycle([e for e in imports if (e.importer, e.target) not in KNOWN_CYCLES_TO_REMOVE])
    assert not cycle, "an import cycle:\n" + describe(cycle)


def _reaches(imports: list[Import], start: str, goal: str) -> bool:
    graph: dict[str, set[str]] = {}
    for e in imports:
        graph.setdefault(e.importer, set()).add(e.target)
    seen: set[str] = set()
    todo = [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return False


def test_each_known_cycle_is_still_there(imports):
    """A known cycle that is gone leaves KNOWN_CYCLES_TO_REMOVE (so the set only shrinks)."""
    edges = {(e.importer, e.target) for e in imports}
    for importer, target in sorted(KNOWN_CYCLES_TO_REMOVE):
        assert (importer, target) in edges and _reaches(imports, target, importer), (
            f"{importer} -> {target} closes no cycle now: remove it from KNOWN_CYCLES_TO_REMOVE"
        )


def test_every_module_has_a_layer_and_an_app():
    for module in project_modules():
        assert layer(module) in LAYER_RANK
        assert app_of(module) in APP_RANK


def test_no_import_runs_up_the_layers(imports):
    wrong = upward_layer_imports(imports)
    assert not wrong, "an import from a lower layer to a higher one (see LAYERS):\n" + describe(
        wrong
    )


def test_no_import_runs_up_the_apps(imports):
    wrong = upward_app_imports(imports)
    assert not wrong, "an app imports an app above it (see APP_RANK):\n" + describe(wrong)


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

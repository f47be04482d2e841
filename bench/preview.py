"""Latency of the builder's preview with tight accounting, against a project's history.

Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/<a database of yours> \
     .venv/bin/python bench/preview.py [--history 100] [--repeat 3]

Builds (migrating the database first) a project whose ledger holds `--history`
approved releases of seven statistics (a count, a category count, two
histograms, a clipped sum, a mean, the most common category), every one with
its own epsilon (so no two releases share a mechanism: the accountant's worst
case), through the real services; then times the builder's preview endpoint
(POST /releases/preview/<project>/, Django's test client, in process):

- preview: the live preview (half-widths, basic budget, tight spend before and
  after, "how many more releases like this one fit");
- chart: the same with ?chart=1 (adds the accuracy-versus-epsilon sweep and the
  bisection for the largest total that fits).

"cold" clears the per-mechanism PLD cache and the composed-history cache first
(the first preview after a worker starts or after the ledger changed); "warm"
is the next keystroke. Two projects: Laplace releases (total 0.08 each, cap
(10, 1e-5)) and Gaussian releases (total 0.3 and delta 5e-8 each, cap (10,
1e-5): about 30 by basic sums, about 2.3 by PLD, so tight accounting lets
over a thousand more in: the fit count is the slow part there).
Prints medians over --repeat runs.

Measured 2026-11-23 on the shared 2-core machine (medians of 3; under load from
other jobs the same run took up to 3x longer):

| history 100 | preview cold | preview warm | chart cold | chart warm |
| Laplace     | 0.96 s       | 0.28 s       | 1.25 s     | 0.81 s     |
| Gaussian    | 1.98 s       | 0.67 s       | 3.71 s     | 2.31 s     |

Warm previews spend ~80 % in the fit count (dp_accounting's self_compose bounds,
about 20 candidate powers for fits of 1,600-4,600); the Gaussian chart in the
discrete Gaussian sigma calibration of 20 totals x 7 statistics.
"""

from __future__ import annotations

import sys

# Run as a script, this file's folder comes first on sys.path, where bench/http.py
# would shadow the standard library's `http` package: drop it before importing.
if sys.path and sys.path[0] and __file__.startswith(sys.path[0]):
    del sys.path[0]

import argparse
import os
import statistics
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DPPORTAL_VAR_DIR", str(ROOT / "var" / "bench"))

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from budgets import services as budget_services  # noqa: E402
from dpportal.privacy import headroom, pld_pmfs  # noqa: E402
from releases import dp, services  # noqa: E402
from tests.releases_support import builder_data, make_dataset  # noqa: E402

PASSWORD = "x-bench-password-1"  # noqa: S105 - a throwaway local user


def build(*, history: int, mechanism: str, stamp: str):
    User = get_user_model()
    owner = User.objects.create_user(f"bench-owner-{mechanism}-{stamp}", password=PASSWORD)
    reviewer = User.objects.create_user(f"bench-reviewer-{mechanism}-{stamp}", password=PASSWORD)
    project = budget_services.project_create(
        name=f"Bench {mechanism} {stamp}", description="Preview benchmark.",
        privacy_unit_description="One row.", epsilon_cap="1000", delta_cap="0.00001",
        created_by=owner, slug=f"bench-{mechanism}-{stamp}",
    )  # fmt: skip
    budget_services.membership_add(project=project, user=reviewer, role="reviewer")
    dataset = make_dataset(project=project, owner=owner, rows=200, name=f"survey-{mechanism}")
    extra = {"mechanism": mechanism, "delta": "0.00000005"} if mechanism == "gaussian" else {}
    base = Decimal("0.3") if mechanism == "gaussian" else Decimal("0.08")
    for i in range(history):
        epsilon = base + Decimal(i) / 10000  # every release its own mechanisms
        plan = services.release_plan_parse(
            project=project, data=builder_data(dataset, epsilon=str(epsilon), **extra)
        )
        request = budget_services.budget_request_create(
            project=project, title=f"Earlier {i}", epsilon=plan.cost_epsilon,
            delta=plan.cost_delta, summary={}, spec_hash="b" * 64, requested_by=owner,
            mechanisms=dp.release_mechanisms(plan=plan),
        )  # fmt: skip
        budget_services.budget_request_approve(budget_request_id=request.pk, reviewer=reviewer)
    project.epsilon_cap = Decimal(10)
    project.save(update_fields=["epsilon_cap"])
    return project, owner, builder_data(dataset, epsilon=str(base), **extra)


def timed(client: Client, url: str, data: dict, *, cold: bool) -> tuple[float, dict]:
    if cold:
        pld_pmfs._pld_for_key.cache_clear()  # noqa: SLF001 - a cold worker
        headroom._composed.cache_clear()  # noqa: SLF001
    start = time.perf_counter()
    response = client.post(url, data, content_type="application/json")
    elapsed = time.perf_counter() - start
    assert response.status_code == 200, response.content[:500]
    return elapsed, response.json()["preview"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--history", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    setup_test_environment()
    call_command("migrate", verbosity=0)
    stamp = str(int(time.time()))
    for mechanism in ("laplace", "gaussian"):
        project, owner, data = build(history=args.history, mechanism=mechanism, stamp=stamp)
        client = Client()
        client.force_login(owner)
        url = f"/releases/preview/{project.slug}/"
        for label, suffix in (("preview", ""), ("chart", "?chart=1")):
            for cold in (True, False):
                runs = []
                for _ in range(args.repeat):
                    if not cold:
                        timed(client, url + suffix, data, cold=False)  # warm it
                    elapsed, preview = timed(client, url + suffix, data, cold=cold)
                    runs.append(elapsed)
                before = preview["spend"]["before"]
                print(
                    f"{mechanism:8} history={args.history} {label:7} "
                    f"{'cold' if cold else 'warm'}: median {statistics.median(runs):.2f} s "
                    f"(runs {', '.join(f'{r:.2f}' for r in runs)}); tight before "
                    f"{before['epsilon_text']} (basic {before['basic_epsilon_text']}), "
                    f"fit {preview['spend']['fit']}"
                    + (f", room {preview['tradeoff']['remaining_text']}" if suffix else "")
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

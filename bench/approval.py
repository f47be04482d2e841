"""Latency of a budget approval through the real service on PostgreSQL, against history length.

Run: .venv/bin/python bench/approval.py [--repeat N]

Uses its own database (DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/dpportal_bench_approval; created and migrated
if missing). For 10, 100 and 1,000 earlier releases it builds a project whose
history is a realistic mix: nine releases in ten are one of four designs
republished again and again (Laplace counts, a Gaussian mean, a Gaussian
histogram with L = 3, Report Noisy Max with a Laplace count), one in ten has
its own epsilon (a distinct mechanism). Epsilons shrink with the history
(unit = min(1, 50 / releases)) as in bench/accounting.py. The history is
approved first under a generous cap; then the cap is lowered to just above the
PLD epsilon with the candidate, so the plain sums are past it and every timed
approval has to compose the whole history by privacy loss distributions (the
worst case: an approval within the plain sums costs no PLD at all).

Each run files a Gaussian candidate (a count and a mean), times
budget_request_approve (row lock, ledger sums, committed records, PLD check,
RESERVE), then withdraws it (RELEASE) so the next run sees the same history.
Reports the median over --repeat runs, cold (the per-mechanism PLD cache
cleared before the run: a fresh worker) and warm. Goal: < 1 s at
1,000 earlier releases.

Then, for 1,000 earlier releases, the same history under caps from 0.01 to 1e6
(epsilon; delta 1e-5): the approval (refused when the candidate does not fit),
the preview's budget check with the fit count (budgets.selectors.cap_check_cached,
what the builder's preview adds to its half-widths) and the reviewer's page of a
pending request (GET through Django's test client, the whole page rendered),
each cold (every accounting cache cleared: PLD cache, composed histories,
Django's cache) and warm (viewed again). Goal: every one < 1 s for
every cap, printed beside each row.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, bench/ comes first on sys.path, where bench/http.py would shadow
# the standard library's `http` package: put the repository there instead.
if sys.path and Path(sys.path[0] or ".").resolve() == ROOT / "bench":
    del sys.path[0]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dpportal_bench_approval")

HISTORY = (10, 100, 1_000)
#: the caps of the second table; "lowered" is the first table's cap (PLD needed)
CAPS = ("0.01", "lowered", "1000", "1000000")
GOAL_SECONDS = 1.0


def decimal_up(x: Fraction) -> Decimal:
    """x rounded up to 12 decimals (the epsilon column), so the records never cost more."""
    return (Decimal(x.numerator) / Decimal(x.denominator)).quantize(
        Decimal("1e-12"), rounding=ROUND_CEILING
    )


def delta_up(x: Fraction) -> Decimal:
    return (Decimal(x.numerator) / Decimal(x.denominator)).quantize(
        Decimal("1e-24"), rounding=ROUND_CEILING
    )


def releases(n: int) -> list[list]:
    """n releases' mechanism records: 90 % repeated designs, 10 % distinct epsilons."""
    from bench.accounting import _gaussian_count, _gaussian_mean, _laplace_count
    from dpportal.privacy.mechanism_records import MechanismRecord

    unit = min(Fraction(1), Fraction(50, n))
    designs = [
        [_laplace_count(unit / 10), _laplace_count(unit / 5, bound=2)],
        _gaussian_mean(unit / 4),
        [_gaussian_count(unit / 2, bound=3, cells=12)],
        [MechanismRecord.report_noisy_max(epsilon=unit / 10), _laplace_count(unit)],
    ]
    out = []
    for i in range(n):
        if i % 10 == 9:
            eps = unit * (Fraction(1, 10) + Fraction(i % 997, 1000))
            out.append([_gaussian_count(eps, cells=8)] if i % 20 == 9 else [_laplace_count(eps)])
        else:
            out.append(designs[i % len(designs)])
    return out


def candidate() -> list:
    from bench.accounting import candidate as bench_candidate

    return bench_candidate()


def build(n: int, stamp: str) -> dict:
    """A project with n approved releases (module docstring) and its owner and reviewer."""
    from django.contrib.auth import get_user_model

    from budgets import services
    from dpportal.privacy import pld

    user = get_user_model()
    owner = user.objects.create_user(f"bench-owner-{stamp}-{n}", password="x-bench-password-1")
    reviewer = user.objects.create_user(f"bench-rev-{stamp}-{n}", password="x-bench-password-1")
    project = services.project_create(
        name=f"Approval bench {stamp} {n}", description="", privacy_unit_description="",
        epsilon_cap="100000", delta_cap="0.5", created_by=owner, slug=f"bench-{stamp}-{n}",
    )  # fmt: skip
    services.membership_add(project=project, user=reviewer, role="reviewer")

    def file(records, title):
        cost = pld.basic_cost(records)
        return services.budget_request_create(
            project=project, title=title, epsilon=decimal_up(cost.epsilon),
            delta=delta_up(cost.delta), summary={}, spec_hash="b" * 64, requested_by=owner,
            mechanisms=[r.to_dict() for r in records],
        )  # fmt: skip

    for i, records in enumerate(releases(n)):
        req = file(records, f"h{i}")
        services.budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
    return {"project": project, "owner": owner, "reviewer": reviewer, "file": file}


def lowered_cap(project) -> Decimal:
    """Just above the PLD epsilon with the candidate: the plain sums are past it."""
    from budgets.selectors import committed_records
    from dpportal.privacy import pld

    history = committed_records(project=project)
    after = pld.pld_epsilon([*history, *candidate()], Fraction(1, 10**5))
    return decimal_up(Fraction(after) * Fraction(101, 100))


def set_cap(project, epsilon_cap: Decimal) -> None:
    """The cap set directly (bypassing the owner-only service: a bench fixture)."""
    from budgets.models import Project

    Project.objects.filter(pk=project.pk).update(
        epsilon_cap=epsilon_cap, delta_cap=Decimal("0.00001")
    )
    project.refresh_from_db()


def clear_caches() -> None:
    """A fresh worker: no PLD built, no history composed, nothing in Django's cache."""
    from django.core.cache import cache

    from budgets.selectors import accounting
    from dpportal.privacy import headroom, pld_pmfs

    pld_pmfs._pld_for_key.cache_clear()
    headroom._composed.cache_clear()
    accounting._committed_at.cache_clear()
    cache.clear()


def run(n: int, repeat: int, stamp: str) -> dict:
    from budgets import services
    from budgets.selectors import budget_summary, committed_records
    from dpportal.privacy import pld

    built = build(n, stamp)
    project, owner, reviewer, file = (
        built["project"], built["owner"], built["reviewer"], built["file"]
    )  # fmt: skip
    cand = candidate()
    history = committed_records(project=project)
    cap = lowered_cap(project)
    after = pld.pld_epsilon([*history, *cand], Fraction(1, 10**5))
    summary = budget_summary(project=project)
    set_cap(project, cap)
    timings = {"cold": [], "warm": []}
    for _ in range(repeat):
        for mode in ("cold", "warm"):
            req = file(cand, "candidate")
            if mode == "cold":
                clear_caches()
            start = time.perf_counter()
            services.budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
            timings[mode].append(time.perf_counter() - start)
            services.budget_request_withdraw(budget_request_id=req.pk, actor=owner)
    return {
        "releases": n,
        "distinct": len(history),
        "basic_eps": float(summary.epsilon_committed),
        "pld_eps": after,
        "cap": float(cap),
        "cold": statistics.median(timings["cold"]),
        "warm": statistics.median(timings["warm"]),
        "built": built,
    }


def run_caps(built: dict, repeat: int) -> list[dict]:
    """Approval, preview check and review page for each of CAPS (module docstring)."""
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    from budgets import services
    from budgets.selectors import cap_check_cached, committed_records_at, ledger_state
    from dpportal.errors import BudgetExceeded

    project, owner, reviewer = built["project"], built["owner"], built["reviewer"]
    cand = candidate()
    lowered = lowered_cap(project)

    def file(records, title):
        """Filed under a generous cap (a request above the cap alone is refused), then back."""
        cap = project.epsilon_cap
        set_cap(project, Decimal("100000"))
        req = built["file"](records, title)
        set_cap(project, cap)
        return req

    setup_test_environment()  # the test client's host is allowed
    client = Client()
    client.force_login(reviewer)
    rows = []
    for name in CAPS:
        cap = lowered if name == "lowered" else Decimal(name)
        set_cap(project, cap)
        times: dict[str, list[float]] = {
            f"{what} {mode}": [] for what in ("approve", "preview", "review")
            for mode in ("cold", "warm")
        }  # fmt: skip
        fit, approved = None, False
        for _ in range(repeat):
            req = file(cand, "candidate")
            url = reverse("review:request_detail", args=[req.pk])
            for mode in ("cold", "warm"):
                if mode == "cold":
                    clear_caches()
                start = time.perf_counter()
                state = ledger_state(project_id=project.pk)  # as the preview reads it
                check = cap_check_cached(
                    project_id=project.pk, state=state,
                    history=lambda s=state: committed_records_at(project_id=project.pk, state=s),
                    candidate=cand, epsilon_cap=project.epsilon_cap, delta_cap=project.delta_cap,
                )  # fmt: skip
                times[f"preview {mode}"].append(time.perf_counter() - start)
                fit = services_fit_text(check)
                if mode == "cold":
                    clear_caches()
                start = time.perf_counter()
                response = client.get(url)
                times[f"review {mode}"].append(time.perf_counter() - start)
                assert response.status_code == 200, response.status_code
            for mode in ("cold", "warm"):
                if mode == "cold":
                    clear_caches()
                start = time.perf_counter()
                try:
                    services.budget_request_approve(budget_request_id=req.pk, reviewer=reviewer)
                    approved = True
                except BudgetExceeded:
                    approved = False
                times[f"approve {mode}"].append(time.perf_counter() - start)
                if approved:
                    services.budget_request_withdraw(budget_request_id=req.pk, actor=owner)
                    req = file(cand, "candidate")
        row = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"cap": name, "fit": fit, "approved": approved, **row})
    return rows


def services_fit_text(check) -> str:
    from budgets.selectors import fit_text

    return fit_text(fit=check.fit, at_least=check.fit_at_least) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--history", type=int, nargs="*", help="earlier releases (default 10 100 1000)"
    )
    args = parser.parse_args()
    global HISTORY
    HISTORY = tuple(args.history) if args.history else HISTORY
    from bench.database import ensure_database

    ensure_database(os.environ["DATABASE_URL"])
    import logging

    import django

    django.setup()
    logging.disable(logging.INFO)  # the services' per-request lines
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    stamp = str(int(time.time()))
    header = (
        f"{'releases':>8s} {'distinct':>8s} {'basic eps':>9s} {'PLD eps':>8s} {'cap':>7s} "
        f"{'cold s':>7s} {'warm s':>7s}"
    )
    print(f"approval latency, median of {args.repeat} runs")
    print(header)
    print("-" * len(header))
    built = None
    for n in HISTORY:
        r = run(n, args.repeat, stamp)
        built = r["built"]
        print(
            f"{r['releases']:8d} {r['distinct']:8d} {r['basic_eps']:9.2f} {r['pld_eps']:8.2f} "
            f"{r['cap']:7.2f} {r['cold']:7.3f} {r['warm']:7.3f}"
        )
    print()
    print(
        f"{HISTORY[-1]:,} earlier releases, by epsilon cap (delta 1e-5); median of "
        f"{args.repeat} runs; goal < {GOAL_SECONDS:g} s each"
    )
    columns = [f"{w} {m}" for w in ("approve", "preview", "review") for m in ("cold", "warm")]
    header = f"{'cap':>9s} {'approved':>8s} {'fit':>16s} " + " ".join(f"{c:>13s}" for c in columns)
    print(header + "  goal")
    print("-" * (len(header) + 6))
    for r in run_caps(built, args.repeat):
        worst = max(r[c] for c in columns)
        verdict = "met" if worst < GOAL_SECONDS else "MISSED"
        print(
            f"{r['cap']:>9s} {str(r['approved']):>8s} {r['fit']:>16s} "
            + " ".join(f"{r[c]:13.3f}" for c in columns)
            + f"  < {GOAL_SECONDS:g} s {verdict}"
        )


if __name__ == "__main__":
    main()

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
cleared before the run: a fresh worker) and warm. Goal (issue 13): < 1 s at
1,000 earlier releases.
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


def ensure_database(url: str) -> None:
    import psycopg

    conninfo = url.replace("postgres://", "postgresql://", 1)
    server, name = conninfo.rsplit("/", 1)
    with psycopg.connect(server + "/postgres", connect_timeout=5, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


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


def run(n: int, repeat: int, stamp: str) -> dict:
    from django.contrib.auth import get_user_model

    from budgets import services
    from budgets.models import Project
    from budgets.selectors import budget_summary, committed_records
    from dpportal.privacy import pld, pld_pmfs

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
    cand = candidate()
    delta_cap = Fraction(1, 10**5)
    history = committed_records(project=project)
    after = pld.pld_epsilon([*history, *cand], delta_cap)
    cap = decimal_up(Fraction(after) * Fraction(101, 100))
    summary = budget_summary(project=project)
    # lowered below the plain sums (bypassing the owner-only service: a bench fixture)
    Project.objects.filter(pk=project.pk).update(epsilon_cap=cap, delta_cap=Decimal("0.00001"))
    timings = {"cold": [], "warm": []}
    for _ in range(repeat):
        for mode in ("cold", "warm"):
            req = file(cand, "candidate")
            if mode == "cold":
                pld_pmfs._pld_for_key.cache_clear()
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
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
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
    for n in HISTORY:
        r = run(n, args.repeat, stamp)
        print(
            f"{r['releases']:8d} {r['distinct']:8d} {r['basic_eps']:9.2f} {r['pld_eps']:8.2f} "
            f"{r['cap']:7.2f} {r['cold']:7.3f} {r['warm']:7.3f}"
        )


if __name__ == "__main__":
    main()

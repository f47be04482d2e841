"""A computed release as an OpenDP program: Python source its owner runs on their own copy.

Built from the frozen specification alone (what was approved), so the program
computes the same statistics with the same privacy unit and L, the same epsilon
(and delta) per statistic, the same declared bounds, cells and quantile candidates,
and Laplace or Gaussian noise as the release did. OpenDP calibrates and draws its
own noise, so a run's numbers differ from the published ones; a kind that OpenDP
cannot reproduce is named, with why (StatisticKind.opendp_missing).

Every value reaches the source as one literal of parsed, typed values (ints, floats,
strings, lists, dicts) written by repr (pprint) and read back with ast.literal_eval
before it is served: no text of the owner's is ever pasted into code. The program's
body is releases/opendp_runner.py, read as text: the product never imports OpenDP.
"""

from __future__ import annotations

import ast
import math
import pprint
from pathlib import Path
from typing import Any

from budgets.amounts import fmt
from releases import kinds
from releases.compute.readers import Axis
from releases.kinds.base import frac
from releases.kinds.domains import axis_domains
from releases.models import Release

RUNNER = Path(__file__).with_name("opendp_runner.py")
#: where the release's literal goes: between the runner's imports and its functions
MARKER = "# --- the release ---\n"
#: the OpenDP version the program was written for (requirements-dev.txt pins it)
OPENDP_VERSION = "0.16.0"

HEADER = '''#!/usr/bin/env python3
"""dpportal release {release_id} as an OpenDP {version} program.

##############################################################################
##
##  WARNING: EVERY RUN OF THIS PROGRAM ON THE REAL DATA SPENDS PRIVACY
##  BUDGET AGAIN, OUTSIDE THE PORTAL'S LEDGER.
##
##  The release already spent epsilon {epsilon}, delta {delta}. Each run spends
##  up to that much again: the portal's ledger, its caps and its epsilon
##  registry do not count it, and the protection of every person in the data
##  weakens with each run (the epsilons add up). Run it on the real data only
##  as often as the budget you still have allows, never in a loop; try it on
##  made-up data first.
##
##############################################################################

What it is: the statistics of release {release_id} (RELEASE below, taken from the
specification the reviewer approved), computed with OpenDP's Context API on a data
file you give on the command line (CSV or Parquet, read with Polars): the same
privacy unit and limit L of rows per person, the same epsilon (and delta) per
statistic, the same declared bounds, categories, bins and quantile candidates, and
Laplace or Gaussian noise as the release used.

Its noise differs from the published release's: every run draws fresh noise, with
OpenDP's samplers and OpenDP's own calibration to each statistic's budget, so its
numbers are not the published ones; they vary around the same true values with
about the same spread. A statistic OpenDP has no counterpart for is not computed:
the program prints "not available in OpenDP: <statistic> (<why>)".

Needs: pip install opendp=={version} polars
Run:   python {filename} DATA_FILE --i-understand-this-spends-privacy-budget
"""

'''


def program_filename(release: Release) -> str:
    """The name the program is downloaded under."""
    return f"dpportal-release-{int(release.pk)}-opendp.py"


def _finite(value: Any) -> None:
    """Refuse a value whose repr is not a Python literal (inf, nan) or not a plain type."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("a parameter of the OpenDP program is not finite")
    elif isinstance(value, dict):
        for key, item in value.items():
            _finite(key)
            _finite(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _finite(item)
    elif value is not None and not isinstance(value, str | int | bool):
        raise TypeError(f"a parameter of the OpenDP program is a {type(value).__name__}")


def _statistic(entry: dict[str, Any], *, mechanism: str) -> dict[str, Any]:
    """One frozen spec entry as the program's typed parameters."""
    kind = kinds.get(str(entry["kind"]))
    label = str(entry.get("label") or entry.get("label_zh") or kind.name)
    head = {
        "position": int(entry["position"]),
        "label": label,
        "kind": kind.name,
        "mechanism": "laplace" if kind.pure else str(mechanism),
        "epsilon": float(frac(entry["epsilon"])),
        "delta": 0.0 if kind.pure else float(frac(entry.get("delta") or 0)),
    }
    if any("date" in domain for domain in entry.get("columns") or []):
        return {**head, "program": "missing", "reason": "the portal's date bins are not "
                "reproduced by this program"}  # fmt: skip
    axes = [Axis.from_domain(domain) for domain in axis_domains(entry)]
    parameters = kind.opendp_parameters(entry, axes=axes)
    if parameters is None:
        return {**head, "program": "missing", "reason": kind.opendp_missing}
    return {**head, **parameters}


def release_parameters(release: Release) -> dict[str, Any]:
    """The release's frozen specification as the program's literal (typed values only)."""
    spec = release.spec or {}
    unit = spec.get("privacy_unit") or {}
    mechanism = str(spec.get("mechanism") or release.mechanism)
    statistics = sorted(spec.get("statistics") or [], key=lambda e: int(e["position"]))
    parameters = {
        "id": int(release.pk),
        "title": str(release.title),
        "mechanism": mechanism,
        "id_column": str(unit["id_column"]) if unit.get("id_column") else None,
        "contribution_bound": int(unit.get("contribution_bound") or 1),
        "statistics": [_statistic(entry, mechanism=mechanism) for entry in statistics],
    }
    _finite(parameters)
    return parameters


def _runner_parts() -> tuple[str, str]:
    """The runner's imports (its docstring dropped) and its functions."""
    source = RUNNER.read_text(encoding="utf-8")
    docstring_end = source.index('"""', 3) + len('"""\n')
    imports, functions = source[docstring_end:].split(MARKER, 1)
    return imports.strip("\n"), functions.strip("\n")


def opendp_program(release: Release) -> str:
    """The Python source of the release's OpenDP program (see the module docstring).

    Needs the frozen specification (a submitted release); ValueError without one.
    """
    if not release.spec:
        raise ValueError("the release has no frozen specification")
    parameters = release_parameters(release)
    literal = pprint.pformat(parameters, width=88, compact=True, sort_dicts=False)
    if ast.literal_eval(literal) != parameters:  # the literal says exactly the values
        raise ValueError("the OpenDP program's parameters do not read back")
    header = HEADER.format(
        release_id=int(release.pk),
        version=OPENDP_VERSION,
        epsilon=fmt(release.epsilon),
        delta=fmt(release.delta),
        filename=program_filename(release),
    )
    imports, functions = _runner_parts()
    return (
        f"{header}{imports}\n\n# The release, from its approved specification.\n"
        f"RELEASE = {literal}\n\n\n{functions}\n\n\n"
        'if __name__ == "__main__":\n    sys.exit(main(sys.argv[1:], RELEASE))\n'
    )

"""A project's entry for the OpenDP Deployments Registry, made from its epsilon registry.

The OpenDP Deployments Registry (Nanayakkara, Ghazi, Vadhan, arXiv:2509.13509)
describes one deployment of differential privacy in a fixed schema
(budgets/schemas/deployments-registry.schema.json: its structure, with the source
it follows). `deployment_entry` fills that schema from what the project already
publishes, the document of `project_registry` (budgets.selectors.registry), so
that the entry states nothing the registry page does not: the same totals, the
same privacy unit, the same mechanisms and days.

`FIELD_SOURCES` maps every field of the schema to its source in dpportal (a test
fails when the schema gains a field that has no line there); `NO_COUNTERPART`
names the fields dpportal has no fact for, and `NOT_IN_REGISTRY` the public facts
of dpportal that the registry's schema has no place for.

The registry's schema asks for epsilon as a JSON number: the entry writes the
registry's exact decimal string as the nearest float (the same digits whenever the
decimal has at most 15 significant digits) and states the exact strings in
`privacy_parameters_details`. Delta may be a string there, so it stays exact. The
entry's texts are English, as the registry is; it is a draft (`status` "Draft")
for the project's owner to submit.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.urls import reverse

from budgets.models import Project
from budgets.selectors.registry import project_registry_cached
from dpportal.privacy.mechanism_records import MechanismRecord, merge_records
from dpportal.product import PRODUCT_NAME, product_version

__all__ = [
    "FIELD_SOURCES",
    "NOT_IN_REGISTRY",
    "NO_COUNTERPART",
    "deployment_entry",
    "deployment_entry_available",
    "deployment_entry_from_registry",
]

#: what an entry says in a required field that dpportal has no fact for
NOT_STATED = "Not stated in dpportal."

#: Each field of the registry's schema (its path, "/" between levels) -> where dpportal
#: takes it from. "registry" is the project's epsilon registry document
#: (budgets.selectors.registry.project_registry, served at /registry/<slug>.json).
FIELD_SOURCES: dict[str, str] = {
    "url_slug": "Project.slug (registry: project.slug)",
    "status": 'always "Draft": the registry\'s board decides the rest',
    "tier": "always 3: every tier-3 field dpportal has a fact for is filled",
    "deployment/basic/name": "Project.name (registry: project.name)",
    "deployment/basic/data_curators": "settings.DPPORTAL_DATA_CURATOR (environment); no "
    "project field names the publishing organisation",
    "deployment/basic/intended_use": "Project.description, the data use (registry: data_use)",
    "deployment/basic/data_product_type": 'always "Summary statistics": every kind in '
    "releases.kinds publishes noisy aggregates",
    "deployment/basic/data_product_region": "no counterpart (required: written as not stated)",
    "deployment/basic/description": "the published releases' number and titles "
    "(registry: releases[].title)",
    "deployment/basic/publication_date": "the first publication day (registry: "
    "releases[0].published_at)",
    "deployment/basic/data_product_sector": "no counterpart (left out)",
    "deployment/dp_variant/variant_name": '"Pure DP" when the stated delta is 0, else '
    '"Approximate DP" (registry: spend.delta, tight_accounting)',
    "deployment/dp_variant/data_domain": "the published datasets and the neighbouring "
    "relation (registry: privacy_unit.datasets[].name, privacy_unit.neighbouring)",
    "deployment/dp_variant/unprotected_quantities": "what dpportal publishes without noise: "
    "declared public domains, L, each release's cost and days (DESIGN.md, sections 2 and 5)",
    "deployment/privacy_loss/privacy_unit": "Project.privacy_unit_description "
    "(registry: privacy_unit.description)",
    "deployment/privacy_loss/privacy_unit_details": "each published dataset's unit and L "
    "(registry: privacy_unit.datasets, privacy_unit.max_rows_per_person, "
    "privacy_unit.neighbouring)",
    "deployment/privacy_loss/privacy_parameters/epsilon": "the spent epsilon the registry "
    "states (registry: spend.spent_epsilon; the basic sum spent.epsilon when there is none)",
    "deployment/privacy_loss/privacy_parameters/delta": "the delta it is stated at "
    "(registry: spend.delta, the cap's delta; spent.delta with the basic sum); left out at 0",
    "deployment/privacy_loss/privacy_parameters/rho": "no counterpart (dpportal states no "
    "project-wide rho; Gaussian records carry theirs in implementation/mechanisms)",
    "deployment/privacy_loss/privacy_parameters_details": "the exact strings of the spent "
    "loss by every bound and the caps (registry: spend, tight_accounting, spent, caps, "
    "unpublished_spent)",
    "deployment/deployment_model/model_name": 'always "Central": dpportal\'s server reads '
    "the data and adds the noise",
    "deployment/deployment_model/model_name_details": "how dpportal draws noise (DESIGN.md, "
    "section 3)",
    "deployment/deployment_model/actors": "dpportal's roles: data owner, reviewer, the "
    "server and its workers, the public (DESIGN.md, section 1)",
    "deployment/deployment_model/release_type": '"One release" or "Many releases" by the '
    "number of published releases (registry: releases)",
    "deployment/deployment_model/release_type_details": "the caps and the burn rate "
    "(registry: caps, burn_rate)",
    "deployment/deployment_model/data_source_type": 'always "Static": a release is computed '
    "once from an uploaded dataset and never changes",
    "deployment/deployment_model/data_source_type_details": "the published datasets "
    "(registry: privacy_unit.datasets[].name)",
    "deployment/deployment_model/access_type": 'always "Non-interactive": only reviewed, '
    "published releases reach the public",
    "deployment/deployment_model/access_type_details": "the review of every release's "
    "budget (DESIGN.md, section 2)",
    "deployment/accounting/post_processing": "what the public pages do after the noise "
    "(DESIGN.md, section 3: rounding, clamping at 0)",
    "deployment/accounting/composition": "the registry's rules and accountant "
    "(registry: accounting_rule, tight_accounting.rule, tight_accounting.accountant)",
    "deployment/implementation/preprocessing_and_hyperparameter_tuning": "declared public "
    "domains, private bounds charged like releases (DESIGN.md, section 3.2)",
    "deployment/implementation/mechanisms": "every mechanism with its exact parameters and "
    "its count, the product and its version (registry: releases[].mechanisms, "
    "unpublished_spent.mechanisms, mechanism_families; dpportal.product)",
    "deployment/implementation/justification": "no counterpart (left out)",
    "deployment/administrative/sources": "the addresses of the registry page, its JSON and "
    "each published release with its days (registry: releases[].id, approved_at, "
    "published_at)",
    "deployment/administrative/notes": "the product, its version and the day the entry was "
    "made (registry: version, generated_at; dpportal.product)",
    "deployment/administrative/registry_authors": "the product that wrote the entry "
    "(dpportal.product)",
}

#: Fields of the registry's schema with no fact in dpportal: left out where optional;
#: a required one says NOT_STATED (data_curators comes from a setting, empty by default).
NO_COUNTERPART: frozenset[str] = frozenset(
    {
        "deployment/basic/data_product_region",
        "deployment/basic/data_product_sector",
        "deployment/privacy_loss/privacy_parameters/rho",
        "deployment/implementation/justification",
    }
)

#: Public facts of dpportal's registry that the Deployments Registry has no field for
#: (named by their place in the registry document). Some are quoted in a text field.
NOT_IN_REGISTRY: dict[str, str] = {
    "caps": "the project's epsilon and delta caps (quoted in privacy_parameters_details)",
    "committed / remaining": "budget reserved for approved releases and what is left",
    "burn_rate": "epsilon spent in the last 30 days and per 30 days since the first approval",
    "group_privacy": "the loss for groups of 1, 2, 5 and 10 privacy units",
    "releases[].epsilon, releases[].delta": "each release's own cost (only the total has a field)",
    "releases[].approved_at, releases[].published_at": "each release's approval and "
    "publication days (only the first publication has a field; quoted in sources)",
    "unpublished_spent": "the number and cost of computed releases not published (quoted in "
    "privacy_parameters_details)",
    "tight_accounting.spent_pld_epsilon, spent_rdp_epsilon": "the loss by each bound (quoted "
    "in privacy_parameters_details)",
    "*_i18n": "the project's texts in Chinese (the registry is written in English)",
    "release pages": "each statistic's values, intervals and confidence levels",
}


def deployment_entry_available(*, registry: dict) -> bool:
    """Whether the project has a data product to register: at least one published release.

    The schema requires a publication date; a project with nothing published has none.
    """
    return any(r["published_at"] for r in registry["releases"])


def deployment_entry(*, project: Project, site_url: str = "") -> dict:
    """The project's entry for the OpenDP Deployments Registry, as a JSON-ready document.

    Built from the project's cached registry document (so it states its totals, to the
    digit); `site_url` ('https://host', no trailing slash) makes the sources absolute.
    Validates against budgets/schemas/deployments-registry.schema.json when the project
    has published a release (`deployment_entry_available`); raises ValueError otherwise.
    """
    registry, _ = project_registry_cached(project=project)
    if not deployment_entry_available(registry=registry):
        raise ValueError("a project with no published release has no deployment to register")
    return deployment_entry_from_registry(registry=registry, site_url=site_url)


def deployment_entry_from_registry(*, registry: dict, site_url: str = "") -> dict:
    """The entry of `deployment_entry`, from a registry document (project_registry)."""
    epsilon, delta = _stated_loss(registry)
    parameters: dict[str, object] = {"epsilon": float(Decimal(epsilon))}
    if Decimal(delta) != 0:
        parameters["delta"] = delta
    releases = registry["releases"]
    product = f"{PRODUCT_NAME} {product_version()}"
    return {
        "url_slug": registry["project"]["slug"],
        "status": "Draft",
        "tier": 3,
        "deployment": {
            "basic": {
                "name": registry["project"]["name"],
                "data_curators": [settings.DPPORTAL_DATA_CURATOR or NOT_STATED],
                "intended_use": registry["data_use"] or NOT_STATED,
                "data_product_type": "Summary statistics",
                "data_product_region": NOT_STATED,
                "description": _description(releases),
                "publication_date": min(r["published_at"] for r in releases if r["published_at"]),
            },
            "dp_variant": {
                "variant_name": "Pure DP" if Decimal(delta) == 0 else "Approximate DP",
                "data_domain": _data_domain(registry),
                "unprotected_quantities": UNPROTECTED,
            },
            "privacy_loss": {
                "privacy_unit": registry["privacy_unit"]["description"] or NOT_STATED,
                "privacy_unit_details": _unit_details(registry),
                "privacy_parameters": parameters,
                "privacy_parameters_details": _parameters_details(registry, epsilon, delta),
            },
            "deployment_model": {
                "model_name": "Central",
                "model_name_details": MODEL_DETAILS,
                "actors": ACTORS,
                "release_type": "Many releases" if len(releases) > 1 else "One release",
                "release_type_details": _release_type_details(registry),
                "data_source_type": "Static",
                "data_source_type_details": _datasets_text(registry),
                "access_type": "Non-interactive",
                "access_type_details": ACCESS_DETAILS,
            },
            "accounting": {
                "post_processing": POST_PROCESSING,
                "composition": _composition(registry),
            },
            "implementation": {
                "preprocessing_and_hyperparameter_tuning": PREPROCESSING,
                "mechanisms": _mechanisms(registry, product),
            },
            "administrative": {
                "sources": _sources(registry, site_url),
                "notes": (
                    f"Generated by {product} on {registry['generated_at']} from the project's "
                    f"epsilon registry (version {registry['version']}); every number is the "
                    "registry's."
                ),
                "registry_authors": [product],
            },
        },
    }


MODEL_DETAILS = (
    "Central differential privacy: dpportal's workers read the uploaded data and add the "
    "noise once per release. Integer results get exact discrete Laplace or discrete Gaussian "
    "noise from a cryptographic random source (Canonne, Kamath, Steinke 2020); real-valued "
    "sums are computed on a public grid, so no floating-point noise is ever added."
)
ACTORS = (
    "Data owners upload the data, declare each column's public domain and define releases; "
    "they see the data. Reviewers of the project approve each release's privacy budget and "
    "may not approve their own requests. dpportal's server and workers are the trusted "
    "curator. The public sees published releases and this registry only; computed results "
    "are seen by the project's members before publication."
)
ACCESS_DETAILS = (
    "Non-interactive: every release is a fixed set of statistics whose budget a reviewer "
    "approved before the data was read; the public reads published numbers and cannot query "
    "the data."
)
POST_PROCESSING = (
    "Published values are the noisy values. Pages may round them, clamp counts at zero and "
    "show a cross-tabulation's whole-number display; intervals always describe the noisy "
    "value before post-processing."
)
PREPROCESSING = (
    "Contribution bounding: with an ID column, at most L rows per person are kept (chosen "
    "at random); numeric values are clipped to declared public bounds. Domains (categories, "
    "bounds, bins) are declared by the owner as public facts; bounds, L and categories "
    "found from the data are found privately and charged like any release."
)
UNPROTECTED = (
    "No value computed from the data is published without noise. Public without "
    "protection: the declared domains (categories, bounds, bins, grids), the rows-per-person "
    "bound L, each release's specification, cost and approval and publication days, and the "
    "number and total cost of computed releases not published."
)


def _stated_loss(registry: dict) -> tuple[str, str]:
    """(epsilon, delta) as the registry states the spent loss: the spend figure, tight at
    the cap's delta; the basic sums when no finite tight epsilon exists."""
    spend = registry["spend"]
    if spend["spent_epsilon"] is not None:
        return spend["spent_epsilon"], spend["delta"]
    return registry["spent"]["epsilon"], registry["spent"]["delta"]


def _description(releases: list[dict]) -> str:
    titles = "; ".join(r["title"] for r in releases)
    noun = "release" if len(releases) == 1 else "releases"
    return f"{len(releases)} published {noun} of differentially private statistics: {titles}."


def _datasets_text(registry: dict) -> str:
    names = [d["name"] for d in registry["privacy_unit"]["datasets"]]
    if not names:
        return "Uploaded datasets, each read once per release."
    return "Uploaded datasets, each read once per release: " + "; ".join(names) + "."


def _data_domain(registry: dict) -> str:
    unit = registry["privacy_unit"]
    return (
        f"{_datasets_text(registry)} Neighbouring datasets: {unit['neighbouring']}. Each "
        "statistic's columns are read within their declared public domains (values outside "
        "them are clipped, or counted in an explicit Other or Missing cell)."
    )


def _unit_details(registry: dict) -> str:
    unit = registry["privacy_unit"]
    lines = [f"Neighbouring datasets: {unit['neighbouring']}."]
    for dataset in unit["datasets"]:
        if dataset["id_column"]:
            lines.append(
                f"{dataset['name']}: one person, identified by the column "
                f"{dataset['id_column']!r}; at most {dataset['max_rows_per_person']} rows per "
                "person are used, and every sensitivity is multiplied by that bound."
            )
        else:
            lines.append(f"{dataset['name']}: one row.")
    return " ".join(lines)


def _parameters_details(registry: dict, epsilon: str, delta: str) -> str:
    tight, spent, caps = registry["tight_accounting"], registry["spent"], registry["caps"]
    lines = [
        f"Spent, exactly as the project's epsilon registry states it: epsilon = {epsilon} at "
        f"delta = {delta}, the smallest of three valid bounds."
    ]
    if tight["spent_pld_epsilon"] is not None:
        lines.append(f"Privacy loss distributions: epsilon = {tight['spent_pld_epsilon']}.")
    if tight["spent_rdp_epsilon"] is not None:
        lines.append(f"Renyi DP: epsilon = {tight['spent_rdp_epsilon']}.")
    lines.append(
        f"Basic composition: epsilon = {spent['epsilon']}, delta = {spent['delta']}."
        f" Caps: epsilon = {caps['epsilon']}, delta = {caps['delta']}."
    )
    unpublished = registry["unpublished_spent"]
    if unpublished["count"]:
        lines.append(
            f"Spent includes {unpublished['count']} computed release(s) not published "
            f"(epsilon {unpublished['epsilon']}, delta {unpublished['delta']})."
        )
    return " ".join(lines)


def _release_type_details(registry: dict) -> str:
    caps, burn = registry["caps"], registry["burn_rate"]
    text = (
        f"Releases are published one by one under the project's caps (epsilon {caps['epsilon']}, "
        f"delta {caps['delta']}), composed sequentially; the budget never resets."
    )
    if burn["epsilon_per_month_since_first_approval"] is not None:
        text += (
            f" Since {burn['first_approved_at']}, epsilon has been spent at "
            f"{burn['epsilon_per_month_since_first_approval']} per {burn['window_days']} days."
        )
    return text


def _composition(registry: dict) -> str:
    tight = registry["tight_accounting"]
    accountant = tight["accountant"]
    return (
        f"{registry['accounting_rule']} {tight['rule']} Accountant: {accountant['name']}, "
        f"{accountant['library']} {accountant['version']} (discretisation "
        f"{accountant['discretisation']})."
    )


#: how each record kind (dpportal.privacy.mechanism_records) is named in the entry
RECORD_WORDS = {
    "discrete_laplace": "discrete Laplace",
    "discrete_gaussian": "discrete Gaussian",
    "zcdp_gaussian": "discrete Gaussian vector (zCDP)",
    "report_noisy_max": "Report Noisy Max",
    "permute_and_flip": "permute-and-flip selection",
    "generic_eps_delta": "generic (epsilon, delta) mechanism",
}


def _record_text(record: dict) -> str:
    """One merged mechanism record with its count and exact parameters."""
    words = RECORD_WORDS.get(record["kind"], record["kind"])
    parameters = [
        f"{name} {record[name]}"
        for name in ("sensitivity", "scale", "sigma", "rho", "epsilon", "delta")
        if record.get(name) is not None
    ]
    return f"{record['count']} × {words} ({', '.join(parameters)})"


def _mechanisms(registry: dict, product: str) -> str:
    records = [
        MechanismRecord.from_dict(m)
        for m in [
            *(m for r in registry["releases"] for m in r["mechanisms"]),
            *registry["unpublished_spent"]["mechanisms"],
        ]
    ]
    merged = [r.to_dict() for r in merge_records(records)]
    families = ", ".join(registry["mechanism_families"]) or "none"
    listed = "; ".join(_record_text(r) for r in merged) or "none"
    return (
        f"Implemented in {product} (exact samplers; accounting with "
        f"{registry['tight_accounting']['accountant']['library']}). Mechanism families: "
        f"{families}. Every noise mechanism of the spent releases, with its count and exact "
        f"parameters (sensitivity and scale or sigma in the units the noise was drawn in; "
        f"epsilon and delta charged per use): {listed}."
    )


def _sources(registry: dict, site_url: str) -> str:
    slug = registry["project"]["slug"]
    lines = [
        f"Epsilon registry: {site_url}{reverse('registry:project', kwargs={'slug': slug})}",
        "Machine-readable registry: "
        f"{site_url}{reverse('registry:project_json', kwargs={'slug': slug})}",
    ]
    lines += [
        f"Release {r['id']} ({r['title']}; approved {r['approved_at']}, published "
        f"{r['published_at']}): "
        f"{site_url}{reverse('public:release', kwargs={'slug': slug, 'release_id': r['id']})}"
        for r in registry["releases"]
    ]
    return "\n".join(lines)

"""The release builder: drafts, statistics, the epsilon split, the preview and the frozen spec.

Everything here works from PUBLIC parameters only (declared column domains,
privacy unit, epsilon/delta, the owner's planning guess of n for means): the
preview never opens the dataset. `release_save_draft` validates the whole
builder form first and writes nothing when any part is wrong.

Modules: `plan` (parsing the builder's input), `allocation` (the epsilon and
delta split), `preview` (accuracy preview and budget check), `drafts` (saving
drafts), `clone` (a rejected or withdrawn release as a new draft), `freeze` (the
frozen specification and its hash). The names below are the package's public
interface; callers import them from `releases.services`. One module is not
re-exported: `review` (a reviewer's decision on a budget request) calls the
lifecycle, which imports this package, so callers import `releases.services.review`.
"""

from releases.services.allocation import DELTA_QUANTUM, EPS_QUANTUM, allocate
from releases.services.clone import CLONABLE, release_clone
from releases.services.drafts import release_form_data, release_save_draft
from releases.services.freeze import FrozenRelease, release_freeze, release_spec_build, spec_hash
from releases.services.plan import (
    CONFIDENCES,
    KINDS,
    MAX_STATISTICS,
    ReleasePlan,
    StatisticPlan,
    plan_cell_limits,
    plan_cells_text,
    plan_check_cells,
    release_plan_parse,
)
from releases.services.preview import plan_preview, release_preview

__all__ = [
    "CLONABLE",
    "CONFIDENCES",
    "DELTA_QUANTUM",
    "EPS_QUANTUM",
    "KINDS",
    "MAX_STATISTICS",
    "FrozenRelease",
    "ReleasePlan",
    "StatisticPlan",
    "allocate",
    "plan_preview",
    "release_clone",
    "release_form_data",
    "release_freeze",
    "plan_cell_limits",
    "plan_cells_text",
    "plan_check_cells",
    "release_plan_parse",
    "release_preview",
    "release_save_draft",
    "release_spec_build",
    "spec_hash",
]

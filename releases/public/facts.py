"""The public facts of one published release, in words: its days, approval and privacy unit.

No compute time is public, not even `computed_at`: with the public approval time
it gives the compute duration, which depends on the noise the exact rejection
samplers drew (PRIVACY-TESTING.md, "Timing"). Approval and publication are shown
to the day only.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone
from django.utils.translation import gettext_noop

from dpportal.formatting import integer
from releases.models import Release
from releases.public import notes


def day_text(value: datetime | None) -> str:
    """A moment as its UTC calendar day ('2026-11-23'): public times are days only.

    Approval and publication are people's acts and public by design, to the day;
    anything finer, next to other public times, could time the computation.
    """
    return timezone.localdate(value, timezone=UTC).isoformat() if value else ""


def privacy_unit_records(*, release: Release) -> list[notes.Record]:
    """The privacy unit the release actually used, in the project's words and the dataset's,
    as message records (releases.public.notes): `privacy_unit_text` reads them in English,
    the page in the reader's language.

    The unit is the one frozen in the release's specification (the dataset's for a
    release without one). The text says it plainly: a person identified by an ID
    column with at most L rows used, or one row; and when the dataset's owner had
    not confirmed that unit before the release was submitted (releases from before
    confirmations existed), it says so instead of implying the project's description.
    """
    project, dataset = release.project, release.dataset
    frozen = (release.spec or {}).get("privacy_unit") or {}
    id_column = frozen.get("id_column", dataset.id_column) or ""
    bound = int(frozen.get("contribution_bound", dataset.contribution_bound) or 1)
    submitted_at = release.budget_request.requested_at if release.budget_request else None
    confirmed = (
        dataset.unit_confirmed_at is not None
        and (submitted_at is None or dataset.unit_confirmed_at <= submitted_at)
        and (dataset.id_column or "") == id_column
        and (not id_column or dataset.contribution_bound == bound)
    )
    words = project.privacy_unit_description.strip()
    records = [notes.note(gettext_noop("%(words)s."), words=words.rstrip("."))] if words else []
    if id_column:
        one = gettext_noop(
            "In this release: one person, identified by the column “%(column)s” of the dataset "
            "“%(dataset)s”; at most %(bound)s row per person was used."
        )
        many = gettext_noop(
            "In this release: one person, identified by the column “%(column)s” of the dataset "
            "“%(dataset)s”; at most %(bound)s rows per person were used."
        )
        records.append(
            notes.note(
                one if bound == 1 else many,
                column=id_column,
                dataset=dataset.name,
                bound=integer(bound),
            )
        )
        if not confirmed:
            records.append(
                notes.note(
                    gettext_noop(
                        "The dataset's owner had not confirmed this privacy unit before the "
                        "release."
                    )
                )
            )
        return records
    if confirmed:
        message = gettext_noop(
            "In this release: one row of the dataset “%(dataset)s”, as its owner confirmed "
            "(each row belongs to a different privacy unit)."
        )
    else:
        message = gettext_noop(
            "In this release: each row of the dataset “%(dataset)s” was protected on its own; "
            "its owner had not confirmed that one row is one privacy unit, so someone with "
            "several rows is protected less than this description says."
        )
    return [*records, notes.note(message, dataset=dataset.name)]


def privacy_unit_text(*, release: Release) -> str:
    """The privacy unit of `privacy_unit_records` in English (the API, downloads)."""
    return " ".join(notes.english(r) for r in privacy_unit_records(release=release))


#: who approved a published release, as public output states it (a role, never a name)
APPROVER_ROLE = "a reviewer of the project"


def release_approval(*, release: Release) -> dict[str, str] | None:
    """That a reviewer of the project approved the release's budget, and on which day
    (None when not recorded). The reviewer is named by role only: public output never
    carries a username, which would hand an attacker a login to guess or lock out."""
    request = release.budget_request
    if request is None or request.decided_by_id is None or request.status != "approved":
        return None
    return {"by": APPROVER_ROLE, "decided_at": day_text(request.decided_at)}

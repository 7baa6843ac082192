"""The user's complaint (``symptom.complaint``): the ``--symptom`` texts joined, classified into the symptom
classes of knowledge/data/symptoms.toml with the stage it happened at (parsers/symptom.py).

``{"classes": sorted class names, "stage": "startup" | "serving" | None, "text": the joined text, "source":
"--symptom"}`` (plus ``matched``: class -> the phrases that matched, and ``negated``: symptom phrases the text
negates). The text is what the user typed, cleaned of control characters; every report redacts it with the rest
of its strings. Checks read the classes; none parses the text."""

from __future__ import annotations

from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, provides
from spec_doctor.parsers.symptom import complaint_of


@provides("symptom.complaint")
def symptom_complaint(store: FactStore) -> dict[str, Any]:
    complaint = complaint_of(getattr(store.inputs, "symptoms", ()) or ())
    if complaint is None:
        raise FactUnavailable("no complaint given (--symptom)")
    return {"classes": sorted(complaint.classes), "stage": complaint.stage, "text": complaint.text,
            "source": "--symptom", "matched": {k: list(v) for k, v in complaint.matched.items()},
            "negated": list(complaint.negated)}

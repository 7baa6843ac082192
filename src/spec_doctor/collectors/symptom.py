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


@provides("symptom.errors")
def symptom_errors(store: FactStore) -> list[dict[str, Any]]:
    """The errors the complaint quotes (parsers/symptom.quoted_errors), each identified against vLLM's message
    catalogue as a log excerpt's quoted line is (collectors/logs.py): the shape of a logs.events traceback
    ({"source": "--symptom", "exc_type", "exc_msg", "site", "modules", "template", ...}), one per exception or
    identified message; argparse's refusal of the command line (`vllm serve: error: ...`) carries "argparse", read
    as logs.argparse reads a log's."""
    from spec_doctor.collectors.logs import EXCEPTION_KIND, QUOTED_MIN_FIXED, raising_module, template_dict
    from spec_doctor.knowledge.catalogue import fixed_chars, identify
    from spec_doctor.parsers.argparse_errors import error_in, read_message
    from spec_doctor.parsers.symptom import quoted_errors

    complaint = store.get("symptom.complaint")
    out: dict[tuple[str | None, str | None], dict[str, Any]] = {}
    for q in quoted_errors(str(complaint["text"])):
        quoted_argparse = error_in(q.message) if q.message else None
        if quoted_argparse is not None:
            # argparse's `PROG: error: MESSAGE` quoted: read as a log's would be (logs.argparse), not as a bare message
            prog, message = quoted_argparse
            out.setdefault(("argparse", message), {
                "source": "--symptom", "line": 0, "end_line": 0, "exc_type": None, "exc_msg": message, "site": None,
                "func": None, "frames": [], "modules": [], "one_line": True, "quoted": True, "template": None,
                "argparse": {"source": "--symptom", "prog": prog, "message": message, "usage_source": None,
                             "reading": read_message(message)}})
            continue
        tpl = identify(q.message) if q.message else None
        if tpl is not None and fixed_chars(tpl.template) < QUOTED_MIN_FIXED:
            tpl = None  # a short template matches any sentence
        if q.exc_type is None and tpl is None:
            continue
        module = raising_module(tpl) if tpl is not None else None
        # a message the catalogue knows as an exception's, quoted without its type, is that exception
        exc = q.exc_type or (tpl.kind if tpl is not None and EXCEPTION_KIND.match(tpl.kind) else None)
        key = (exc, tpl.template if tpl is not None else q.message)
        out.setdefault(key, {"source": "--symptom", "line": 0, "end_line": 0, "exc_type": exc, "exc_msg": q.message,
                             "site": module, "func": None, "frames": [], "modules": [module] if module else [],
                             "one_line": True, "quoted": True, "template": template_dict(tpl)})
    if not out:
        raise FactUnavailable("the complaint quotes no error")
    return list(out.values())


@provides("symptom.settings")
def symptom_settings(store: FactStore) -> dict[str, Any]:
    """The deployment settings the complaint names in prose (parsers/settings.py): ``{"args": {engine argument:
    value}, "phrases": {engine argument: the phrase that named it}, "families": model-family words named,
    "family_phrases", "models": words that can name the target, "method": the one speculative method named, "k": the
    one K stated, "k_phrase", "speculation": the phrase that names speculative decoding or its method, "negated":
    setting phrases the text negates (never used), "source": "--symptom"}``. Weaker facts than a command line's:
    checks use them where the deployment config is absent or silent, and quote the phrase."""
    from spec_doctor.parsers.settings import named_settings

    complaint = store.get("symptom.complaint")
    named = named_settings(str(complaint["text"]))
    if not named.settings and named.speculation is None and named.k is None:
        raise FactUnavailable("the complaint names no deployment setting")
    return {"args": named.args(), "phrases": {s.arg: s.phrase for s in named.settings if s.arg},
            "families": [str(s.value) for s in named.settings if not s.arg],
            "family_phrases": [s.phrase for s in named.settings if not s.arg],
            "models": list(named.models), "method": named.method, "k": named.k, "k_phrase": named.k_phrase,
            "speculation": named.speculation, "negated": list(named.negated), "source": "--symptom"}

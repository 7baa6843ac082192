"""What each input the user gave yielded: ``inputs.status``.

One row per input (``--log`` file, ``--metrics-url`` / ``--metrics-file``, ``--cmd`` / ``--config``,
``--target`` / ``--draft``, ``--server``, the probe,
the measured figures ``--throughput`` / ``--latency`` / ``--acceptance`` and each of them that could not be read,
``--vllm-version``, ``--gpu``, ``--symptom``): ``{"input", "kind", "ok", "speculation", "reason"}``.
``ok`` says the input could be read and is what it claims to be (None: no check of this run needed it); ``speculation`` says it carries evidence
about speculative decoding (a vLLM log, a vLLM /metrics page, a deployment config, a model pair, a probe).
The verdict is ``unknown`` when no row has ``speculation``; ``check`` exits 2 when inputs were given and none
is ``ok``; a failed input among working ones becomes a note of the report.

Only facts that the checks of this run already collected are read, so computing the status never starts a
scrape, a probe or a model load of its own.
"""

from __future__ import annotations

from typing import Any

from spec_doctor.collectors.core import declared_version
from spec_doctor.engine.facts import FactStore, FactUnavailable, provides


def _fact(store: FactStore, name: str) -> tuple[bool, Any, str | None]:
    """(collected, value, reason) of a fact this run already collected; never collects it."""
    seen = store.collected().get(name)
    if seen is None:
        return False, None, None
    if not seen["available"]:
        return True, None, seen["reason"]
    try:
        return True, store.get(name), None
    except FactUnavailable as exc:  # pragma: no cover - collected() said it was available
        return True, None, str(exc)


def _log_rows(store: FactStore) -> list[dict[str, Any]]:
    rows = []
    got, files, reason = _fact(store, "logs.files")
    if not got:
        return [{"input": f"--log {p}", "kind": "log", "ok": None, "speculation": False,
                 "reason": "not read (no check that reads logs ran)"} for p in store.inputs.logs]
    if files is None:
        return [{"input": f"--log {p}", "kind": "log", "ok": False, "speculation": False, "reason": reason}
                for p in store.inputs.logs]
    for lf in files:
        label = f"--log {lf.display}"
        if getattr(lf, "error", None):
            rows.append({"input": label, "kind": "log", "ok": False, "speculation": False, "reason": lf.error})
        elif not (lf.records or lf.signatures or lf.streams or lf.bench or lf.ev.tracebacks or lf.ev.events
                  or getattr(lf, "argparse", None)):
            # (a traceback, a CUDA device-side assert or argparse's refusal of the command line pasted without
            # log headers is vLLM output too)
            rows.append({"input": label, "kind": "log", "ok": False, "speculation": False,
                         "reason": f"no vLLM log line recognised in {lf.lines} line(s)"})
        else:
            rows.append({"input": label, "kind": "log", "ok": True, "speculation": True, "reason": None})
    return rows


def _prometheus_row(store: FactStore) -> dict[str, Any]:
    """--prometheus: used when the store answered with at least one vLLM server's series."""
    prom = store.inputs.prometheus
    label = f"--prometheus {prom.url if prom is not None else ''}"
    got, pairs, reason = _fact(store, "metrics.scrapes")
    if not got:
        return {"input": label, "kind": "metrics", "ok": None, "speculation": False,
                "reason": "not read (no check that reads /metrics ran)"}
    usable = [p for p in pairs or [] if p.after is not None]
    if not usable:
        why = reason or next((p.error for p in pairs or [] if p.error), None) or "no vLLM server in the answer"
        return {"input": label, "kind": "metrics", "ok": False, "speculation": False, "reason": why}
    return {"input": label, "kind": "metrics", "ok": True,
            "speculation": any(getattr(p.after, "has_vllm", True) for p in usable), "reason": None}


def _metrics_rows(store: FactStore) -> list[dict[str, Any]]:
    inputs = store.inputs
    if inputs.prometheus is not None:
        return [_prometheus_row(store)]
    given = [f"--metrics-url {u}" for u in inputs.metrics_urls] or [f"--metrics-file {p}"
                                                                     for p in inputs.metrics_baseline]
    if not given:
        return []
    got, pairs, reason = _fact(store, "metrics.scrapes")
    if not got:
        return [{"input": g, "kind": "metrics", "ok": None, "speculation": False,
                 "reason": "not read (no check that reads /metrics ran)"} for g in given]
    if pairs is None:
        return [{"input": g, "kind": "metrics", "ok": False, "speculation": False, "reason": reason} for g in given]
    rows = []
    for p in pairs:
        served = any(p.endpoint == f"{b.rstrip('/')}/metrics" for b in inputs.servers)
        label = (f"--server {p.endpoint}" if served else f"--metrics-url {p.endpoint}"
                 if p.endpoint in inputs.metrics_urls else f"--metrics-file {p.endpoint}")
        if p.error or p.after is None:
            rows.append({"input": label, "kind": "metrics", "ok": False, "speculation": False,
                         "reason": p.error or "no scrape"})
        else:
            # Read fine; a page without vLLM's engine metrics is a finding of its own (stats are off).
            rows.append({"input": label, "kind": "metrics", "ok": True,
                         "speculation": bool(getattr(p.after, "has_vllm", True)), "reason": None})
    return rows


def _simple_row(store: FactStore, label: str, kind: str, fact: str) -> dict[str, Any]:
    got, value, reason = _fact(store, fact)
    if not got:
        return {"input": label, "kind": kind, "ok": None, "speculation": False,
                "reason": f"not used (no check that needs {fact} ran)"}
    return {"input": label, "kind": kind, "ok": value is not None, "speculation": value is not None,
            "reason": reason}


def _config_rows(store: FactStore) -> list[dict[str, Any]]:
    """--cmd / --config: used when they made the deployment config. A --cmd with no vLLM invocation in it (a
    recipe runner, another program) is a row of its own that failed, whatever else made the config."""
    inputs = store.inputs
    if not (inputs.cmd or inputs.config):
        return []
    from spec_doctor.parsers.cmdline import not_vllm_reason

    unread = not_vllm_reason(inputs.cmd) if inputs.cmd and _fact(store, "config.deployment")[0] else None
    if unread is None:
        label = "--cmd" if inputs.cmd else f"--config {inputs.config}"
        return [_simple_row(store, label, "config", "config.deployment")]
    rows = [{"input": "--cmd", "kind": "config", "ok": False, "speculation": False, "reason": unread}]
    if inputs.config:
        rows.append(_simple_row(store, f"--config {inputs.config}", "config", "config.deployment"))
    return rows


def _models_row(store: FactStore, label: str) -> dict[str, Any]:
    """--target/--draft: used when a model could be read, or when the draft names a method (ngram, suffix, mtp,
    eagle3:PATH) that the speculation evidence took up."""
    seen = [_fact(store, name) for name in ("models.target", "models.draft", "models.pair", "config.deployment")]
    if not any(got for got, _, _ in seen):
        return {"input": label, "kind": "models", "ok": None, "speculation": False,
                "reason": "not used (no check that reads the models ran)"}
    models_ok = any(value is not None for _, value, _ in seen[:3])
    # --draft alone (a method such as suffix or ngram, or a draft model) makes the deployment config's
    # speculative settings, which the config checks judge.
    dep = seen[3][1]
    named = bool(store.inputs.draft) and getattr(dep, "speculative", None) is not None
    ok = models_ok or named
    reason = None if ok else next((r for _, _, r in seen[:3] if r), "not usable")
    # A target alone says nothing about speculation; a pair (or a draft method) does.
    spec = named or seen[2][1] is not None
    return {"input": label, "kind": "models", "ok": ok, "speculation": spec, "reason": reason}


@provides("inputs.status")
def inputs_status(store: FactStore) -> list[dict[str, Any]]:
    inputs = store.inputs
    rows = _log_rows(store) + _metrics_rows(store)
    rows += _config_rows(store)
    if inputs.target or inputs.draft:
        label = " ".join(f"--{k} {v}" for k, v in (("target", inputs.target), ("draft", inputs.draft)) if v)
        rows.append(_models_row(store, label))
    for url in inputs.servers:
        got, info, reason = _fact(store, "server.info")
        one = info.get(url) if isinstance(info, dict) else None
        ok = bool(one) and not (one or {}).get("error")
        rows.append({"input": f"--server {url}", "kind": "server", "ok": ok, "speculation": ok,
                     "reason": None if ok else ((one or {}).get("error") or reason or "not contacted")})
    if inputs.probe:
        rows.append(_simple_row(store, f"--probe {inputs.probe}", "probe", "probe.result"))
    if inputs.observed.figures:
        label = " ".join(f"{flag} {value}" for flag, value in inputs.observed.text.items())
        rows.append(_simple_row(store, label, "observed", "observed.figures"))
    # A figure that could not be read (parsers/observed.py) was left out: a note, or exit 2 when nothing else was
    # usable -- the same as an unreadable log.
    rows += [{"input": label, "kind": "observed", "ok": False, "speculation": False, "reason": reason}
             for label, reason in inputs.observed.unreadable.items()]
    return rows + _context_rows(store)


def _context_rows(store: FactStore) -> list[dict[str, Any]]:
    """--vllm-version, --gpu and --symptom: inputs the diagnosis uses (release bugs, the complaint's weight) that say
    nothing about speculation on their own, so they never make the verdict assessed."""
    inputs, rows = store.inputs, []
    if inputs.vllm_version:
        got, version, reason = _fact(store, "vllm.version")
        declared = got and str(getattr(version, "source", "")).startswith("--vllm-version")
        unreadable = not declared and declared_version(inputs.vllm_version) is None
        if unreadable:
            reason = (f"'{inputs.vllm_version}' names no vLLM release (e.g. 0.10.1, 0.8.x, >=0.9, main): "
                      "version-dependent rules use what the other inputs show")
        rows.append({"input": f"--vllm-version {inputs.vllm_version}", "kind": "version",
                     "ok": False if unreadable else declared if got else None, "speculation": False,
                     "reason": None if declared else (reason or "not used (no check that needs vllm.version ran)")})
    if getattr(inputs, "gpu", None) is not None:
        # --gpu TEXT, read as written (parsers/hardware.py; cheap, so read here even when no check needed it): what
        # could not be read from it is a note, never a stop.
        hw = store.maybe("inputs.hardware")
        problem = getattr(hw, "problem", None) or (None if hw is not None else "could not be read")
        read = f" (read: {hw.summary()})" if hw is not None and hw.read else ""
        rows.append({"input": f"--gpu {inputs.gpu}", "kind": "hardware", "ok": problem is None,
                     "speculation": False, "reason": f"{problem}{read}" if problem else None})
    if inputs.symptoms:
        got, complaint, reason = _fact(store, "symptom.complaint")
        rows.append({"input": "--symptom", "kind": "symptom", "ok": (complaint is not None) if got else None,
                     "speculation": False,
                     "reason": None if complaint is not None else (reason or "not used (no check that reads it ran)")})
    return rows

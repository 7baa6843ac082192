"""The live acceptance probe: send the prompt set to a running vLLM server (OpenAI API) at a pinned
temperature and read vLLM's own spec-decode counters from /metrics around every request.

Requests go one at a time and /metrics is scraped after each, so every prompt gets its own counter
delta (prompt-level bootstrap, early stop) and the totals are exactly vLLM's counters over our own
requests. Nothing is inferred from streamed chunks. Stdlib HTTP only; the scraper and the counter
deltas are parsers/promparse.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from spec_doctor.collectors.server import base_url, http_json, model_list
from spec_doctor.engine.facts import FactUnavailable
from spec_doctor.measure.probe.result import MIN_PROMPTS, TARGET_HALF_WIDTH, interval_dict, per_k_summary
from spec_doctor.measure.probe.simulate import Counters, bootstrap, ratio_stat
from spec_doctor.measure.probe.token_sampling import SamplingSpec

SETTLE_TIMEOUT_S = 5.0  # the counters are recorded just after the response is handed back


def _scrape(base: str):
    from spec_doctor.parsers.promparse import ScrapeError, scrape

    try:
        return scrape(base + "/metrics", timeout=10.0)
    except ScrapeError as exc:
        raise FactUnavailable(f"cannot read vLLM's counters: {exc}") from None


def _delta(before, after):
    from spec_doctor.parsers.promparse import counter_deltas, merge_deltas

    deltas = [d for d in counter_deltas(before, after).values() if d.has_spec_counters]
    return merge_deltas(deltas) if deltas else None


def _request_body(prompt: dict, model: str, spec: SamplingSpec, max_tokens: int, ignore_eos: bool,
                  seed: int | None) -> tuple[str, dict]:
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": spec.temperature,
                            "top_p": spec.top_p, "stream": False}
    if spec.top_k and spec.top_k > 0:
        body["top_k"] = spec.top_k
    if ignore_eos:
        body["ignore_eos"] = True
    if seed is not None:
        body["seed"] = seed
    if prompt.get("messages"):
        return "/v1/chat/completions", {**body, "messages": prompt["messages"]}
    if prompt.get("prompt_token_ids"):
        return "/v1/completions", {**body, "prompt": prompt["prompt_token_ids"]}
    return "/v1/completions", {**body, "prompt": prompt.get("text", "")}


def run_live(server: str, prompt_set, spec: SamplingSpec, *, max_new_tokens: int = 256,
             ignore_eos: bool = False, early_stop: bool = True, half_width: float = TARGET_HALF_WIDTH,
             min_prompts: int = MIN_PROMPTS, timeout_s: float = 120.0, seed: int | None = 0,
             on_progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Probe a running server. Raises FactUnavailable (one line) when it is not a vLLM server with
    speculation on."""
    base = base_url(server)
    ids = [m["id"] for m in model_list(http_json(base + "/v1/models", timeout=10.0))]
    if not ids:
        raise FactUnavailable(f"{base}/v1/models lists no model; is this an OpenAI-compatible server?")
    model = ids[0]
    before = _scrape(base)
    if not before.has_vllm:
        raise FactUnavailable(f"{base}/metrics has no vllm: metrics; the live probe needs a vLLM server")
    if not before.has_spec_decode:
        raise FactUnavailable(f"speculative decoding is off on {base}: /metrics has no vllm:spec_decode_* "
                              f"counters (start the server with --speculative-config)")
    per_prompt: list[Counters] = []
    k = None
    warnings: list[str] = []
    prev = before
    sent_tokens = 0
    t0 = time.perf_counter()
    plain_text = False  # set when the server has no chat template: prompts go to /v1/completions as text
    for i, prompt in enumerate(prompt_set.prompts):
        if plain_text and prompt.get("messages"):
            prompt = {"text": as_text(prompt["messages"])}
        path, body = _request_body(prompt, model, spec, max_new_tokens, ignore_eos, seed)
        try:
            resp = http_json(base + path, body, timeout=timeout_s)
        except FactUnavailable as exc:
            if path != "/v1/chat/completions" or "HTTP 400" not in str(exc):
                raise
            # A base model without a chat template answers 400; say what the server said and send text.
            plain_text = True
            warnings.append(f"chat request refused ({str(exc).split(': ', 1)[-1]}); the prompts were sent as "
                            "plain text to /v1/completions")
            path, body = _request_body({"text": as_text(prompt["messages"])}, model, spec, max_new_tokens,
                                       ignore_eos, seed)
            resp = http_json(base + path, body, timeout=timeout_s)
        usage = resp.get("usage") or {} if isinstance(resp, dict) else {}
        completion = int(usage.get("completion_tokens") or 0)
        sent_tokens += completion
        after, d = _settled(base, prev, completion)
        if d is None or d.legacy_v0:
            raise FactUnavailable("the server's spec-decode counters cannot be read per request "
                                  "(V0 engine counters are cumulative sums)")
        k = k or (d.summary().k if d.summary() else None) or len(d.accepted_per_pos) or None
        c = Counters(k or len(d.accepted_per_pos) or 1, d.num_drafts or 0.0, d.num_draft_tokens or 0.0,
                     d.num_accepted_tokens or 0.0,
                     list(d.accepted_per_pos) or [0.0] * (k or 1))
        c.num_emitted = float(completion)
        per_prompt.append(c)
        prev = after
        if on_progress:
            on_progress(i + 1, len(prompt_set.prompts))
        if early_stop and len(per_prompt) >= min_prompts and len(per_prompt) % 8 == 0:
            iv = bootstrap([p.as_row() for p in per_prompt], ratio_stat(3, 0), resamples=500)
            if iv is not None and iv.half_width <= half_width:
                break
    total = _delta(before, prev)
    if total is not None and total.generation_tokens is not None and total.generation_tokens > sent_tokens:
        warnings.append(f"other traffic reached the server during the probe ({total.generation_tokens:.0f} "
                        f"generated tokens counted, {sent_tokens} were ours); its drafts are in the counters")
    kk = k or 1
    # The counters are per position and prefix-accepted: a shorter K' keeps the first K' positions of every
    # draft, so the table for K' = 1..K comes from the same requests (longer K was not drafted).
    per_k = {str(j): per_k_summary([truncated(c, j) for c in per_prompt], j) for j in range(1, kk + 1)}
    rows = [p.as_row() for p in per_prompt]
    alpha = bootstrap(rows, ratio_stat(3, 0), resamples=1000) if rows else None  # position-1 acceptance
    return {
        "mode": "live", "method": "server", "source": f"vLLM /metrics deltas at {base} over our requests",
        "server": base, "model": model, "sampling": spec.to_dict(), "domain": prompt_set.name,
        "prompt_source": prompt_set.source, "partial": prompt_set.partial_note, "warnings": warnings,
        "prompts": len(per_prompt), "tokens": sent_tokens,
        "stopped_early": len(per_prompt) < len(prompt_set.prompts),
        "alpha": interval_dict(alpha), "alpha_definition": "position-1 acceptance (accepted_per_pos[0] / drafts)",
        "per_k": per_k, "configured_k": kk, "endpoint": path, "reference_t0": None, "cost": None,
        "counters_total": total.to_dict() if total is not None else None,
        "timing": {"probe_s": round(time.perf_counter() - t0, 3)},
    }


def as_text(messages: list[dict]) -> str:
    """A chat prompt as plain text for /v1/completions (no template): the contents, one per paragraph."""
    return "\n\n".join(str(m.get("content", "")) for m in messages if m.get("content"))


def truncated(c: Counters, k: int) -> Counters:
    """The counters as if every draft had been cut to its first k positions."""
    per_pos = list(c.accepted_per_pos[:k]) + [0.0] * max(0, k - len(c.accepted_per_pos))
    out = Counters(k, c.num_drafts, c.num_drafts * k, sum(per_pos), per_pos)
    out.num_emitted = c.num_emitted
    return out


def _settled(base: str, prev, completion_tokens: int):
    """Scrape until the counters include this request (its generated tokens are counted)."""
    deadline = time.perf_counter() + SETTLE_TIMEOUT_S
    while True:
        after = _scrape(base)
        d = _delta(prev, after)
        gen = d.generation_tokens if d is not None else None
        if gen is None or gen >= completion_tokens or time.perf_counter() > deadline:
            # one more short wait so that a step recorded after the tokens is not split across prompts
            return after, d
        time.sleep(0.05)

"""A bounded load generator for an OpenAI-compatible server (stdlib urllib + threads).

``run_load(base, model, workload)`` sends ``workload.num_requests`` streamed requests with at most
``workload.concurrency`` in flight and records, per request, the time to the first token (TTFT), the time
per output token after it (TPOT = (last - first token time) / (tokens - 1), `vllm bench serve`'s
definition) and the gaps between streamed chunks (``chunk_gap_ms``: with speculation one chunk carries
several tokens, so it is not a per-token latency and has no better/worse direction). Token counts come from the server's ``usage`` (``stream_options.include_usage``), else the
number of content chunks.

Streaming is used for *latency* only: acceptance comes from vLLM's /metrics counters (parsers/promparse.py),
never from chunks. The run is bounded three ways: the request count, a deadline, and a ``should_stop``
callback (early stopping) polled while it runs; it always returns what it measured.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_LINE_BYTES = 1 << 20


@dataclass(frozen=True)
class Workload:
    prompts: tuple[dict[str, Any], ...]  # prompt records as doctor/probe/prompts.py makes them
    concurrency: int = 4
    num_requests: int = 32
    max_tokens: int = 128
    temperature: float = 0.0
    ignore_eos: bool = True  # every request generates max_tokens: variants do the same work
    request_timeout_s: float = 300.0

    def body(self, i: int, model: str) -> tuple[str, dict[str, Any]]:
        prompt = self.prompts[i % len(self.prompts)]
        body: dict[str, Any] = {"model": model, "max_tokens": self.max_tokens, "temperature": self.temperature,
                                "stream": True, "stream_options": {"include_usage": True}}
        if self.ignore_eos:
            body["ignore_eos"] = True
        if self.temperature > 0:
            body["seed"] = 1000 + i
        if prompt.get("messages"):
            return "/v1/chat/completions", {**body, "messages": prompt["messages"]}
        if prompt.get("prompt_token_ids"):
            return "/v1/completions", {**body, "prompt": prompt["prompt_token_ids"]}
        return "/v1/completions", {**body, "prompt": prompt.get("text", "")}


@dataclass
class RequestRecord:
    index: int
    ok: bool = False
    status: int | None = None
    error: str | None = None
    start: float = 0.0  # monotonic
    end: float = 0.0
    ttft_s: float | None = None
    completion_tokens: int = 0
    prompt_tokens: int | None = None
    chunk_times: list[float] = field(default_factory=list)  # monotonic times of content chunks

    @property
    def latency_s(self) -> float:
        return self.end - self.start

    @property
    def tpot_s(self) -> float | None:
        if self.ttft_s is None or self.completion_tokens < 2 or not self.chunk_times:
            return None
        return (self.chunk_times[-1] - self.chunk_times[0]) / (self.completion_tokens - 1)

    @property
    def itl_s(self) -> list[float]:
        return [b - a for a, b in zip(self.chunk_times, self.chunk_times[1:])]


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    vals = sorted(values)
    pos = (len(vals) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000.0, 2)


@dataclass
class LoadResult:
    concurrency: int
    records: list[RequestRecord]
    wall_s: float
    stopped: str | None = None  # why the run ended before all requests were sent (early stop, deadline)
    not_sent: int = 0

    @property
    def ok(self) -> list[RequestRecord]:
        return [r for r in self.records if r.ok]

    def summary(self) -> dict[str, Any]:
        """Throughput (output tokens/s over the run's wall time), TTFT/TPOT/ITL in ms (p50 as the headline,
        mean and p90 beside it), request counts."""
        ok = self.ok
        tokens = sum(r.completion_tokens for r in ok)
        ttft = [r.ttft_s for r in ok if r.ttft_s is not None]
        tpot = [t for r in ok if (t := r.tpot_s) is not None]
        itl = [g for r in ok for g in r.itl_s]
        wall = max(self.wall_s, 1e-9)
        errors = sorted({r.error for r in self.records if r.error})[:3]
        return {
            "concurrency": self.concurrency, "requests": len(self.records), "completed": len(ok),
            "failed": len(self.records) - len(ok), "not_sent": self.not_sent, "wall_s": round(self.wall_s, 3),
            "output_tokens": tokens, "throughput": round(tokens / wall, 3) if ok else None,
            "request_throughput": round(len(ok) / wall, 4) if ok else None,
            "ttft_ms": _ms(_pct(ttft, 0.5)), "ttft_ms_mean": _ms(statistics.fmean(ttft) if ttft else None),
            "ttft_ms_p90": _ms(_pct(ttft, 0.9)),
            "tpot_ms": _ms(_pct(tpot, 0.5)), "tpot_ms_mean": _ms(statistics.fmean(tpot) if tpot else None),
            "tpot_ms_p90": _ms(_pct(tpot, 0.9)),
            "chunk_gap_ms": _ms(_pct(itl, 0.5)), "stopped": self.stopped, "errors": errors,
        }


def _opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _one_request(base: str, model: str, workload: Workload, i: int, cancel: threading.Event,
                 deadline: float | None) -> RequestRecord:
    rec = RequestRecord(index=i, start=time.monotonic())
    path, body = workload.body(i, model)
    timeout = workload.request_timeout_s
    if deadline is not None:
        timeout = max(1.0, min(timeout, deadline - time.monotonic() + 5.0))
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Accept": "text/event-stream",
                                          "User-Agent": "spec-doctor-loadgen"})
    chunks = 0
    try:
        with _opener().open(req, timeout=timeout) as resp:
            rec.status = int(resp.status)
            while not cancel.is_set():
                line = resp.readline(MAX_LINE_BYTES)
                if not line:
                    break
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    break
                try:
                    event = json.loads(payload)
                except ValueError:
                    continue
                if not isinstance(event, dict):
                    continue
                if event.get("error"):
                    rec.error = str(event["error"])[:200]
                    break
                if _has_content(event):
                    now = time.monotonic()
                    if rec.ttft_s is None:
                        rec.ttft_s = now - rec.start
                    rec.chunk_times.append(now)
                    chunks += 1
                usage = event.get("usage")
                if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
                    rec.completion_tokens = int(usage["completion_tokens"])
                    rec.prompt_tokens = usage.get("prompt_tokens")
            if cancel.is_set() and rec.error is None:
                rec.error = "cancelled"
    except urllib.error.HTTPError as exc:
        rec.status = exc.code
        rec.error = f"HTTP {exc.code} {exc.reason}"
    except urllib.error.URLError as exc:
        rec.error = f"cannot connect ({getattr(exc.reason, 'strerror', None) or exc.reason})"
    except TimeoutError:
        rec.error = f"no answer within {timeout:.0f} s"
    except (OSError, ValueError) as exc:
        rec.error = f"{type(exc).__name__}: {exc}"[:200]
    rec.end = time.monotonic()
    if rec.completion_tokens == 0:
        rec.completion_tokens = chunks
    rec.ok = rec.error is None and rec.status == 200 and rec.completion_tokens > 0
    if rec.error is None and not rec.ok:
        rec.error = "empty answer (no tokens streamed)"
    return rec


def _has_content(event: dict[str, Any]) -> bool:
    for choice in event.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        if choice.get("text"):
            return True
        delta = choice.get("delta")
        if isinstance(delta, dict) and (delta.get("content") or delta.get("reasoning_content")):
            return True
    return False


def run_load(base: str, model: str, workload: Workload, *, deadline: float | None = None,
             should_stop: Callable[[list[RequestRecord], float], str | None] | None = None,
             poll_s: float = 0.2) -> LoadResult:
    """Drive the workload against ``base`` (http://127.0.0.1:PORT). ``deadline`` is a time.monotonic()
    value; ``should_stop(finished_records, elapsed_s)`` returns a reason to stop early, or None.
    KeyboardInterrupt cancels the in-flight requests and propagates."""
    if workload.concurrency < 1 or workload.num_requests < 1 or not workload.prompts:
        raise ValueError("a workload needs concurrency >= 1, num_requests >= 1 and at least one prompt")
    cancel = threading.Event()
    lock = threading.Lock()
    pending = list(range(workload.num_requests))
    done: list[RequestRecord] = []
    stopped: list[str] = []

    def worker() -> None:
        while not cancel.is_set():
            with lock:
                if not pending:
                    return
                if deadline is not None and time.monotonic() >= deadline:
                    return
                i = pending.pop(0)
            rec = _one_request(base, model, workload, i, cancel, deadline)
            with lock:
                done.append(rec)

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, name=f"loadgen-{n}", daemon=True)
               for n in range(min(workload.concurrency, workload.num_requests))]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            time.sleep(poll_s)
            now = time.monotonic()
            if deadline is not None and now >= deadline + 5.0 and not cancel.is_set():
                stopped.append("deadline")
                cancel.set()
            if should_stop is not None and not cancel.is_set():
                with lock:
                    snapshot = list(done)
                reason = should_stop(snapshot, now - t0)
                if reason:
                    stopped.append(reason)
                    cancel.set()
    except BaseException:
        cancel.set()
        raise
    wall = time.monotonic() - t0
    if not stopped and pending and deadline is not None:
        stopped.append("deadline")
    for t in threads:
        t.join(timeout=1.0)
    with lock:
        records = sorted((r for r in done if r.error != "cancelled"), key=lambda r: r.index)
        not_sent = len(pending) + sum(1 for r in done if r.error == "cancelled")
    return LoadResult(workload.concurrency, records, wall, stopped[0] if stopped else None, not_sent)

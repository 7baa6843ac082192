"""Benchmark invocations wherever they appear -- a `--cmd`, a log line, a complaint: `vllm bench serve|throughput|
latency ...`, `benchmarks/benchmark_{serving,throughput,latency}.py ...` (knowledge/data/benchmarks.toml [[tool]]),
and the argparse `Namespace(...)` a benchmark prints of its own arguments -- read into their workload settings
(dataset, prompt and output lengths, prompts, concurrency, rate, temperature, --ignore-eos, warm-up).

Read as written, never run. A flag is kept under its argparse destination (`--max-concurrency` and
`--max_concurrency` are `max_concurrency`); a flag with no value is True."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from spec_doctor.engine.model import clip
from spec_doctor.knowledge.benchmarks import SERVER_DEFAULT, Tool, dataset_kind, datasets_source, tools

MAX_RUNS = 10
MAX_TEXT = 4000
# The settings that make two runs the same workload (what a benchmark sends), by argparse destination. The server,
# port, model and output files are not the workload.
WORKLOAD = ("dataset_name", "dataset_path", "num_prompts", "max_concurrency", "request_rate", "random_input_len",
            "random_output_len", "random_prefix_len", "random_range_ratio", "input_len", "output_len",
            "sharegpt_output_len", "custom_output_len", "sonnet_input_len", "sonnet_output_len", "hf_output_len",
            "spec_bench_output_len", "spec_bench_category", "temperature", "top_p", "top_k", "ignore_eos", "batch_size",
            "seed", "n", "burstiness", "skip_chat_template")
# A Namespace dump: the subcommand's own name for the tool.
_NAMESPACE = re.compile(r"Namespace\((?=[^)]{0,400}?\b(?:bench_type|dataset_name|num_prompts)=)", re.I)
_NS_ITEM = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,()\[\]{}]+)")
# Lines that may hold an invocation (a cheap test before the patterns; logparse uses it on every plain line).
HINT = re.compile(r"bench|Namespace\(", re.I)


@dataclass(frozen=True)
class BenchRun:
    """One benchmark invocation: the tool (benchmarks.toml name), where it was read, its text, and its settings."""

    tool: str
    source: str
    text: str
    flags: dict[str, Any] = field(default_factory=dict)
    # An argparse Namespace dump lists every option (None: not set); None here when read from a command line. A
    # dump cut off before an option says nothing of its default.
    listed: frozenset[str] | None = None

    def knows(self, key: str) -> bool:
        """Whether the run shows this option's value, given or by default (a cut-off dump may not)."""
        return self.listed is None or key in self.listed

    def get(self, key: str, default: Any = None) -> Any:
        return self.flags.get(key, default)

    def workload(self) -> dict[str, Any]:
        """The workload settings given (absent ones are the tool's defaults)."""
        return {k: self.flags[k] for k in WORKLOAD if k in self.flags}


def _number(value: str) -> Any:
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_").lower()


def flags_of(argv: list[str]) -> dict[str, Any]:
    """`--flag value`, `--flag=value`, `--flag` (True) -> {destination: value}; positional words are skipped."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok.startswith("--") and len(tok) > 2:
            if "=" in tok:
                key, _, value = tok.partition("=")
                out[_dest(key)] = _number(value)
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--") and argv[i + 1] not in ("\\", "|", "&&", ";"):
                out[_dest(tok)] = _number(argv[i + 1])
                i += 1
            else:
                out[_dest(tok)] = True
        elif tok in ("|", "&&", ";", "||"):
            break  # the next command on the line
        i += 1
    return out


def _namespace_value(raw: str) -> Any:
    raw = raw.strip()
    if raw[:1] in "'\"" and raw[-1:] == raw[:1]:
        return _number(raw[1:-1])
    if raw == "True":
        return True
    if raw in ("False", "None"):
        return None  # not given (argparse's default of an option that was not set)
    return _number(raw)


def _tool_at(text: str) -> list[tuple[int, Tool]]:
    found: list[tuple[int, Tool]] = []
    for t in tools():
        for m in t.pattern.finditer(text):
            found.append((m.end(), t))
    return sorted(found, key=lambda x: x[0])


def _namespace_tool(items: dict[str, Any]) -> Tool | None:
    kind = str(items.get("bench_type") or "").lower()
    names = {"serve": "vllm bench serve", "throughput": "vllm bench throughput", "latency": "vllm bench latency"}
    if kind in names:
        return next(t for t in tools() if t.name == names[kind])
    if "max_concurrency" in items or "request_rate" in items:
        return next(t for t in tools() if t.name == "benchmarks/benchmark_serving.py")
    return None


def runs_in_text(text: str, source: str) -> list[BenchRun]:
    """Every benchmark invocation in ``text`` (a command line, a log excerpt, a complaint), in order."""
    if not text or not HINT.search(text):
        return []
    # A command continued over lines with `\` is one command.
    joined = re.sub(r"\\\r?\n", " ", text)
    runs: list[BenchRun] = []
    for end, t in _tool_at(joined):
        line_end = joined.find("\n", end)
        rest = joined[end: line_end if line_end >= 0 else len(joined)][:MAX_TEXT]
        try:
            argv = shlex.split(rest, comments=False)
        except ValueError:
            argv = rest.split()
        start = joined.rfind("\n", 0, end) + 1
        runs.append(BenchRun(t.name, source, joined[start: end + len(rest)].strip()[:MAX_TEXT], flags_of(argv)))
        if len(runs) >= MAX_RUNS:
            return runs
    for m in _NAMESPACE.finditer(joined):
        body = joined[m.end(): m.end() + 20000]
        items = {k: _namespace_value(v) for k, v in _NS_ITEM.findall(body)}
        nt = _namespace_tool(items)
        if nt is None:
            continue
        flags = {k: v for k, v in items.items() if v is not None and k in WORKLOAD + ("model", "num_warmups")}
        runs.append(BenchRun(nt.name, source, joined[m.start(): m.start() + 400], flags, frozenset(items)))
        if len(runs) >= MAX_RUNS:
            break
    return runs


def differences(a: BenchRun, b: BenchRun, defaults: dict[str, Any] | None = None) -> list[tuple[str, Any, Any]]:
    """The workload settings in which two runs of one tool differ: [(setting, a's, b's)]. A setting given in one
    run only counts when it differs from ``defaults`` (the tool's own default) for the other."""
    defaults = defaults or {}
    wa, wb = a.workload(), b.workload()
    out = []
    for key in WORKLOAD:
        va = wa.get(key, defaults.get(key))
        vb = wb.get(key, defaults.get(key))
        if key not in wa and key not in wb:
            continue
        same = va == vb or (isinstance(va, (int, float)) and isinstance(vb, (int, float)) and float(va) == float(vb))
        if not same:
            out.append((key, va, vb))
    return out


# -- what keeps a run from carrying a verdict (knowledge/data/benchmarks.toml [pitfall.*]) -------------------------
NATURAL = ("--dataset-name sharegpt", "--dataset-path ShareGPT_V3_unfiltered_cleaned_split.json")
# The lines of a `vllm bench serve` result block (logparse BENCH_FIELD keys) that say what workload ran: the same
# prompts give the same input token total (speculation changes no prompt; a tokenizer's rounding aside).
RESULT_WORKLOAD = (("successful_requests", "successful requests"), ("maximum_request_concurrency", "maximum request "
                   "concurrency"), ("request_rate_configured_rps", "request rate"), ("total_input_tokens", "total input "
                   "tokens"))
RESULT_TOLERANCE = 0.01
_KEEP_FLAGS = ("model", "base_url", "host", "port", "endpoint", "backend", "tokenizer", "max_concurrency",
               "request_rate", "seed")


@dataclass(frozen=True)
class Flaw:
    """One pitfall a run shows: the run (None for a result block), what shows it (source, detail) and the tool's own
    source for the default it relies on."""

    pitfall: str
    run: BenchRun | None
    source: str
    detail: str
    basis: tuple[tuple[str, str], ...] = ()  # (source, detail) of the default or comparison relied on
    share: float = 1.0  # the share of the possible releases it holds for (an unknown release)


def comparable_command(run: BenchRun, min_prompts: int) -> str:
    """The run's benchmark as one that can carry a verdict: `vllm bench serve` on natural text at temperature 0,
    without --ignore-eos, with at least ``min_prompts`` prompts (else vLLM's default 1,000), against the same server,
    concurrency, rate and seed; run it against the server with and without --speculative-config."""
    parts = ["vllm bench serve"]
    for key in _KEEP_FLAGS:
        if key in run.flags and run.flags[key] is not True:
            parts.append(f"--{key.replace('_', '-')} {shlex.quote(str(run.flags[key]))}")
    parts += list(NATURAL)
    out_len = next((run.flags[k] for k in ("random_output_len", "output_len", "sharegpt_output_len")
                    if isinstance(run.flags.get(k), int)), None)
    if out_len:
        parts.append(f"--sharegpt-output-len {out_len}")
    prompts = run.flags.get("num_prompts")
    parts.append(f"--num-prompts {max(prompts, min_prompts) if isinstance(prompts, int) and prompts > 0 else 1000}")
    parts.append("--temperature 0")
    return " ".join(parts)


def _synthetic(run: BenchRun, tool: Tool) -> tuple[str, str] | None:
    """(source, why) when the run's prompts are synthetic (random tokens), else None. A run read without any flag
    (the tool named in prose) says nothing about its prompts."""
    if not run.flags or not run.knows("dataset_name"):
        return None
    name = run.get("dataset_name")
    if tool.name == "vllm bench latency":
        return tool.dataset_source.split("; ")[0], "vllm bench latency always prompts with random token ids"
    if tool.kind == "offline":
        if name and dataset_kind(str(name)) == "synthetic":
            return datasets_source().split("; ")[0], f"--dataset-name {name}"
        return None if run.get("dataset_path") else (tool.dataset_source.split("; ")[0],
                                                     f"{tool.name} without --dataset-path samples random token ids")
    if name is None:
        if dataset_kind(tool.dataset_default) != "synthetic":
            return None
        return tool.dataset_source.split("; ")[0], f"no --dataset-name: {tool.name} defaults to '{tool.dataset_default}'"
    return (datasets_source().split("; ")[0], f"--dataset-name {name}") if dataset_kind(str(name)) == "synthetic" \
        else None


def _hot(run: BenchRun, tool: Tool, version: Version | None) -> tuple[str, str, float] | None:
    """(source, detail, share of the possible releases) when the run samples hot by its tool's default."""
    if not run.flags or "temperature" in run.flags or not run.knows("temperature"):
        return None
    rows = tool.sampling(version)
    hot = [s for s in rows if s.value == SERVER_DEFAULT or float(s.value) > 0.0]
    if not hot:
        return None
    s = hot[0]
    detail = (f"no --temperature: {tool.name} of this release sends none, so the model's default sampling applies"
              if s.value == SERVER_DEFAULT else f"{tool.name} samples at temperature {float(s.value):g}")
    return s.source.split(" (")[0], detail, len(hot) / len(rows)


def flaws(runs: list[BenchRun], results: list[dict[str, Any]], version: Version | None,
          min_prompts: float) -> list[Flaw]:
    """Every pitfall the runs and result blocks show, at most one per pitfall (the first run that shows it)."""
    found: dict[str, Flaw] = {}

    def add(f: Flaw) -> None:
        found.setdefault(f.pitfall, f)

    by_name = {t.name: t for t in tools()}
    for run in runs:
        t = by_name[run.tool]
        shown = clip(run.text, 240)
        why = _synthetic(run, t)
        if why:
            add(Flaw("random-prompts", run, run.source, shown, (why,)))
        hot = _hot(run, t, version)
        if hot:
            add(Flaw("sampling", run, run.source, shown, ((hot[0], hot[1]),), hot[2]))
        if run.get("ignore_eos") is True or (t.ignore_eos == "always" and run.flags):
            add(Flaw("ignore-eos", run, run.source, shown))
        prompts = run.get("num_prompts")
        if t.kind == "serve" and isinstance(prompts, int) and 0 < prompts < min_prompts:
            add(Flaw("few-prompts", run, run.source, shown,
                     (("--num-prompts", f"{prompts} prompts (below {min_prompts:g}; {t.name} defaults to "
                                        f"{t.prompts_default})"),)))
        if t.warmup_flag and t.kind == "offline" and run.get(_dest(t.warmup_flag)) == 0:
            add(Flaw("no-warmup", run, run.source, shown,
                     ((str(t.warmup_source).split(" (")[0], f"{t.warmup_flag} 0 (default {t.warmup_default})"),)))
    for r in results:
        n = r.get("successful_requests")
        if isinstance(n, (int, float)) and 0 < n < min_prompts:
            add(Flaw("few-prompts", None, str(r.get("source")), f"Successful requests: {n:g}"))
    # Two result blocks pasted side by side (with and without speculation): the same prompts give the same input
    # token total whatever the server does (speculation changes no prompt), and the load is printed in the block.
    blocks = [r for r in results if r.get("successful_requests") or r.get("total_input_tokens")]
    for a_res, b_res in zip(blocks, blocks[1:], strict=False):
        changed: list[str] = []
        for key, label in RESULT_WORKLOAD:
            va, vb = a_res.get(key), b_res.get(key)
            if va is not None and vb is not None and abs(va - vb) > RESULT_TOLERANCE * max(abs(va), abs(vb)):
                changed.append(f"{label}: {va:g} vs {vb:g}")
        if changed:
            add(Flaw("unequal-runs", None, str(a_res.get("source")), "a benchmark result block",
                     ((str(b_res.get("source")), "another result block"), ("the two results", "differ in "
                                                                          + "; ".join(changed))),
                     share=min(1.0, 0.25 * len(changed) + 0.25)))
            break
    for i, a in enumerate(runs):
        if "unequal-runs" in found or not a.flags:
            break
        t = by_name[a.tool]
        defaults = {"dataset_name": t.dataset_default, "num_prompts": t.prompts_default}
        for b in runs[i + 1:]:
            if not b.flags or by_name[b.tool].kind != t.kind or b.text == a.text:
                continue
            diff = differences(a, b, defaults)
            if diff:
                shown = "; ".join(f"{k.replace('_', '-')}: {'(default)' if va is None else va} vs "
                                  f"{'(default)' if vb is None else vb}" for k, va, vb in diff[:6])
                add(Flaw("unequal-runs", a, a.source, clip(a.text, 160),
                         ((b.source, clip(b.text, 160)), ("the two runs", f"differ in {shown}")),
                         share=min(1.0, 0.25 * len(diff))))
                break
    return list(found.values())

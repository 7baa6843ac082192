"""The user's complaint (``--symptom``) as a differential diagnosis: for each symptom class it names (fact
``symptom.complaint``), the taxonomy category that class most often means with this setup, told apart by the facts
already collected (knowledge/data/symptoms.toml: each class's rules, in order, each with its reasoning and source).

A complaint is what the user saw, never a cause, so a finding from it alone is a low-confidence pointer ("your
complaint with this setup most often means X; to confirm, run Y"). When another check already reports a category
the complaint points at, the complaint corroborates that finding instead of adding one of its own: each finding
carries ``data["corroborates"]`` (every category that would explain the complaint) and report/merge.py folds it
into the best such finding, raising its rank. A complaint never affirms health, and a crash, wrong output, a hang
or running out of memory keeps the verdict from being healthy (report/merge.py keeps the corroborated finding at
the complaint's severity at least).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from packaging.version import Version

from spec_doctor.engine.model import SERVING, Category, Evidence, Finding, Fix, Severity, clip
from spec_doctor.engine.registry import check
from spec_doctor.knowledge import complaint_prior
from spec_doctor.knowledge.data import threshold
from spec_doctor.knowledge.deployment import speculative_config_flag
from spec_doctor.knowledge.inactive import silent_release
from spec_doctor.knowledge.models import DRAFT_MODEL, method_family
from spec_doctor.knowledge.observed import (
    collapsed_under,
    judge_acceptance,
    run_figures,
    speed_verdict,
    verification_bound,
)
from spec_doctor.knowledge.specdata import method_support
from spec_doctor.knowledge.symptoms import CLASSES, SYMPTOMS_FILE, SymptomClass, rule_confidence_gain, symptom_classes
from spec_doctor.knowledge.symptoms import table as symptom_table
from spec_doctor.knowledge.temperature import HOT_TEMPERATURE
from spec_doctor.parsers.promparse import per_model
from spec_doctor.parsers.symptom import classify, matches

_OFF = "remove --speculative-config (plain decoding)"
# The complaints that are never a healthy run.
_NEVER_HEALTHY = ("crash", "startup", "wrong-output", "hang", "memory")

Condition = Callable[["_Setup"], Evidence | None]


# The source of a benchmark pitfall read from the complaint's own words about how it measured.
_MEASURED_IN_PROSE = "--symptom (how the complaint says it measured)"


class _Setup:
    """What the fact store already knows about the deployment, read once for every condition."""

    def __init__(self, facts: Mapping[str, Any], complaint: Mapping[str, Any]) -> None:
        self.facts = facts
        self.complaint = complaint
        self.dep = facts.get("config.deployment")
        self.spec = getattr(self.dep, "speculative", None)
        models_spec = facts.get("models.spec")
        pair = facts.get("models.pair")
        self.pair = pair
        self.method: str | None = (getattr(self.spec, "method", None) or getattr(models_spec, "method", None)
                                   or getattr(pair, "method", None))
        self.method_source = str(getattr(self.spec, "source", None) or getattr(models_spec, "source", None)
                                 or "config")
        self.figures = facts.get("observed.figures") or {}
        run = run_figures(self.figures, self.spec, facts.get("metrics.deltas"), facts.get("logs.acceptance"))
        self.k, self.k_source, self.acceptance_source = run.k, run.k_source, run.acceptance_source
        # What the complaint's prose names (fact symptom.settings), where no input shows it: weaker facts, quoted.
        named = facts.get("symptom.settings") or {}
        # (a benchmark pitfall named only in the complaint's words is such a fact too: _bench_flawed)
        self.prose_sources: set[str] = {_MEASURED_IN_PROSE}
        if self.method is None and named.get("method"):
            self.method = str(named["method"])
            self.method_source = f"--symptom (the complaint names {self.method})"
            self.prose_sources.add(self.method_source)
        if self.k is None and named.get("k"):
            self.k, self.k_source = int(named["k"]), f"--symptom (\"{named.get('k_phrase') or named['k']}\")"
            self.prose_sources.add(self.k_source)
        self.judgement = judge_acceptance(run.rate, run.length, run.k, self.method) if run.acceptance_source else None
        temp = getattr(self.dep, "temperature", None)
        self.temperature = float(temp) if isinstance(temp, (int, float)) else None
        self.temperature_source = (getattr(self.dep, "sources", {}) or {}).get("temperature", "config")
        target = facts.get("models.target")
        self.target = target if getattr(target, "param_count", None) else None
        version = facts.get("vllm.version")
        value = getattr(version, "value", version)
        self.version = value if isinstance(value, Version) else None
        self.version_source = str(getattr(version, "source", "vllm.version"))


def prior_features(text: str, classes: Any = None) -> list[str]:
    """The complaint prior's features of a complaint: its words and its symptom classes (as the complaint parser
    reads them; ``classes`` when already known). Not the setup's method: the texts of the no-complaint class carry
    none, so a method would read as a complaint by itself."""
    found = classify(text).classes if classes is None else classes
    return [*complaint_prior.words(text), *(f"class:{c}" for c in found)]


@functools.cache
def prior_model() -> complaint_prior.Model | None:
    """The complaint prior fitted on every labelled report of knowledge/data/rootcauses.jsonl and the texts of
    knowledge/data/complaints.jsonl that state no problem (its no-complaint class), once per process."""
    rows = (*complaint_prior.rows(), *complaint_prior.neutral_rows())
    if not rows:
        return None
    return complaint_prior.fit([(prior_features(r.text), r.category) for r in rows])


def _prior_why(cat: str, share: float) -> str:
    model = prior_model()
    support = dict(model.support) if model else {}
    neutral = support.pop(complaint_prior.NO_COMPLAINT, 0)
    return (f"reports worded like yours most often turned out to be {cat} (p={share:.2f} by a word model fitted on "
            f"{sum(support.values())} labelled public reports, {support.get(cat, 0)} of them {cat}, and {neutral} "
            f"texts that state no problem; knowledge/data/{complaint_prior.DATA_FILE})")


def _acceptance_zero(s: _Setup) -> Evidence | None:
    """Not one draft token accepted, or (a head trained for the target) under the collapse floor no working one goes
    below (knowledge/acceptance.collapse_floor): both a broken draft path."""
    j = s.judgement
    if j is None or (j.status != "zero" and collapsed_under(j, s.method) is None):
        return None
    return Evidence(str(s.acceptance_source), f"{j.shown}: {j.why}")


def _acceptance_low(s: _Setup) -> Evidence | None:
    j = s.judgement
    return Evidence(str(s.acceptance_source), f"{j.shown}: {j.why}") if j is not None and j.status == "low" else None


def _measured_paying(s: _Setup) -> Evidence | None:
    """A speedup the user measured (--throughput / --latency) that pays off, against a complaint that it does not."""
    speedup = s.figures.get("speedup")
    if speedup is None or speed_verdict(float(speedup)) != "paying":
        return None
    return Evidence(str(s.figures.get("speed_source") or "--throughput"),
                    f"measured {float(speedup):.2f}x with speculation (faster than without it)")


def _temperature_hot(s: _Setup) -> Evidence | None:
    if s.temperature is not None and s.temperature >= HOT_TEMPERATURE:
        return Evidence(str(s.temperature_source), f"temperature {s.temperature:g} (>= {HOT_TEMPERATURE:g})")
    return None


def _concurrency_high(s: _Setup) -> Evidence | None:
    conc = s.figures.get("concurrency")
    if not conc:
        return None
    gpu = s.figures.get("gpu")
    bound, why = verification_bound(int(conc), s.k, gpu)
    if bound or conc >= threshold("high_concurrency"):
        return Evidence(f"--concurrency {conc}", why)
    return None


def _target_small(s: _Setup) -> Evidence | None:
    t = s.target
    if t is not None and t.param_count < threshold("small_target_params"):
        return Evidence(str(getattr(t, "param_source", None) or "models.target"),
                        f"target {t.name}: ~{t.param_count / 1e9:.2f}B parameters "
                        f"(below ~{threshold('small_target_params') / 1e9:g}B)")
    return None


def _k_large(s: _Setup) -> Evidence | None:
    if s.k and s.k > threshold("observed_usual_max_k") and method_family(s.method) != "model-free":
        return Evidence(str(s.k_source), f"K={s.k}, above the {threshold('observed_usual_max_k'):g} users usually run")
    return None


def _what_it_saw(s: _Setup) -> str:
    """The complaint's text less the phrases that describe how it measured (benchmarks.toml pitfalls it names):
    "end-to-end latency including prefill" says what the figure holds, not that the prefill got worse."""
    text = str(s.complaint.get("text") or "")
    for _, phrase in (s.facts.get("observed.bench") or {}).get("named") or ():
        text = text.replace(phrase, " ")
    return text


def _first_token_worse(s: _Setup) -> Evidence | None:
    cls = symptom_classes()["latency"]
    text = _what_it_saw(s)
    if matches(text, cls.first_token_patterns) and matches(text, cls.worse_patterns):
        return Evidence("--symptom", "the complaint is that the time to the first token (prefill) got worse")
    return None


def _long_prompts(s: _Setup) -> Evidence | None:
    if matches(str(s.complaint.get("text") or ""), symptom_classes()["latency"].long_prompt_patterns):
        return Evidence("--symptom", "the complaint describes long prompts")
    return None


def _complaint_high_load(s: _Setup) -> Evidence | None:
    """The complaint says the run was at high concurrency (the workload the user describes, not a cause)."""
    if matches(str(s.complaint.get("text") or ""), symptom_classes()["slowdown"].load_patterns):
        return Evidence("--symptom", "the complaint describes a high-concurrency workload")
    return None


def _no_metrics_too(s: _Setup) -> Evidence | None:
    """The complaint also says the speculative-decoding metrics lines are missing (its no-metrics class)."""
    if "no-metrics" in (s.complaint.get("classes") or ()):
        return Evidence("--symptom", "the complaint also says the log has no speculative-decoding metrics")
    return None


def _draft_other_family(s: _Setup) -> Evidence | None:
    """A separate draft model whose files show another vocabulary or model type than the target's."""
    p = s.pair
    if p is None or getattr(p, "family", None) != DRAFT_MODEL or p.draft is None:
        return None
    if p.verdict == "incompatible" or (p.config_vocab_differs and not p.padding_only):
        return Evidence(p.draft.config_source, f"draft {p.draft.name} and target {p.target.name}: vocabularies differ")
    t, d = p.target.model_type, p.draft.model_type
    if t and d and t != d:
        return Evidence(p.draft.config_source, f"draft model_type '{d}' vs target '{t}'")
    return None


def _separate_draft_model(s: _Setup) -> Evidence | None:
    if method_family(s.method) == DRAFT_MODEL:
        return Evidence(s.method_source, f"method {s.method}: a separate draft model")
    return None


def _method_not_in_release(s: _Setup) -> Evidence | None:
    """The release refuses the method at config validation; a complaint about serving is not that."""
    if not s.method or s.version is None or s.complaint.get("stage") == SERVING:
        return None
    support = method_support(s.method, s.version)
    if support.cannot_run:
        return Evidence(support.source or "knowledge/data/methods.toml",
                        f"vLLM {s.version} and method {s.method}: {support.status}")
    return None


def _draft_large(s: _Setup) -> Evidence | None:
    from spec_doctor.knowledge.models import knowledge

    p = s.pair
    ratio = getattr(p, "param_ratio", None)
    if ratio is not None and ratio > knowledge()["sizing"]["draft_ratio_max"]:
        return Evidence(str(getattr(p, "ratio_basis", None) or "models.pair"),
                        f"draft / target parameters {ratio:.2f} (above {knowledge()['sizing']['draft_ratio_max']:g})")
    return None


def _request_params(s: _Setup) -> Evidence | None:
    """The complaint names a request parameter the speculative path does not run (symptoms.toml [request_params])."""
    row = symptom_table()["request_params"]
    text = str(s.complaint.get("text") or "")
    for pattern in row["patterns"]:
        m = re.search(pattern, text, re.I)
        if m:
            return Evidence("--symptom", f"the requests ask for '{m.group(0)}': {row['source'].split(' (', 1)[0]} "
                                         "(knowledge/data/symptoms.toml [request_params])")
    return None


def _bench_flawed(s: _Setup) -> Evidence | None:
    """The benchmark behind the complaint cannot carry its verdict: its invocation shows a pitfall of
    knowledge/data/benchmarks.toml (random-token prompts, --ignore-eos, few prompts, no warm-up, two runs of different
    workloads), or the complaint's own words name a reading that counts something else (the peak throughput or the
    ITL per streamed chunk, a client counting chunks as tokens, the engine's 10-second throughput line, a baseline
    slow too). A benchmark's hot default sampling is the temperature's (high-temperature), not this."""
    from spec_doctor.knowledge.benchmarks import pitfall
    from spec_doctor.parsers.bench import flaws

    bench = s.facts.get("observed.bench")
    if not bench:
        return None
    classes = set(s.complaint.get("classes") or ())
    found = [f for f in flaws(list(bench["runs"]), list(bench["results"]), s.version, threshold("bench_min_prompts"))
             if f.pitfall != "sampling" and (not pitfall(f.pitfall).needs or classes & set(pitfall(f.pitfall).needs))]
    if found:
        f = found[0]
        return Evidence(f.source, f"{pitfall(f.pitfall).title}: {clip(f.detail, 160)}")
    for pid, phrase in bench.get("named") or ():
        p = pitfall(pid)
        if pid != "sampling" and (not p.needs or classes & set(p.needs)):
            # the complaint's description of how it measured, not the benchmark itself: a weaker fact (half the gain)
            return Evidence(_MEASURED_IN_PROSE, f"{p.title}: \"{clip(phrase, 120)}\"")
    return None


def _spec_unconfirmed(s: _Setup) -> Evidence | None:
    """Speculation is configured, yet the run the user gave shows it serving without speculating: a log with stats
    windows that generated and no spec-decode line, a log whose engine started with speculative_config=None, or
    /metrics without spec-decode counters or with none drafted while tokens were generated -- in a release that
    prints them (knowledge/data/inactive.toml [[evidence]])."""
    if s.spec is None:
        return None
    v1_quiet = silent_release("v1", s.version) is not None
    for f in s.facts.get("logs.files") or []:
        if getattr(f, "spec_off", None):
            return Evidence(str(f.spec_off), "the engine started with speculative_config=None")
    files = list(s.facts.get("logs.files") or [])
    traffic = sum(st.traffic_windows for f in files for st in f.stats_streams)
    if files and traffic >= threshold("inactive_min_traffic_windows") and not v1_quiet \
            and not any(f.spec_streams or getattr(f, "spec_timing", None) for f in files):
        return Evidence("; ".join(st.lines_range() for f in files for st in f.stats_streams),
                        f"{traffic} stats windows that generated tokens and no spec-decode metrics line")
    for w in s.facts.get("metrics.deltas") or []:
        if not getattr(w, "has_vllm", False):
            continue
        for d in per_model(w):
            if not d.has_spec_counters and not v1_quiet:
                return Evidence(w.after_source, "/metrics has no vllm:spec_decode_* counter")
            drafts = d.num_drafts if d.num_drafts is not None else d.num_draft_tokens
            if d.has_spec_counters and drafts == 0 and (d.generation_tokens or 0) >= threshold("min_generation_tokens"):
                return Evidence(w.after_source, f"0 drafts while {d.generation_tokens:.0f} tokens were generated")
    return None


CONDITIONS: dict[str, Condition] = {
    "acceptance-zero": _acceptance_zero, "acceptance-low": _acceptance_low, "temperature-hot": _temperature_hot,
    "measured-paying": _measured_paying,
    "concurrency-high": _concurrency_high, "target-small": _target_small, "k-large": _k_large,
    "first-token-worse": _first_token_worse, "long-prompts": _long_prompts,
    "complaint-high-load": _complaint_high_load, "draft-other-family": _draft_other_family,
    "separate-draft-model": _separate_draft_model, "method-not-in-release": _method_not_in_release,
    "draft-large": _draft_large, "request-params": _request_params, "bench-flawed": _bench_flawed,
    "spec-unconfirmed": _spec_unconfirmed, "no-metrics-too": _no_metrics_too,
}


def _classes_to_judge(complaint: Mapping[str, Any]) -> list[str]:
    """The complaint's classes; a crash at start-up is judged as a start-up failure (its own differential)."""
    classes = [c for c in CLASSES if c in complaint["classes"]]
    if "crash" in classes and ("startup" in classes or complaint.get("stage") == "startup"):
        classes = [c for c in classes if c != "crash"]
        if "startup" not in classes:
            classes.insert(0, "startup")
    return classes


def _pick(cls: SymptomClass, setup: _Setup) -> tuple[Category, str, Evidence | None, str | None]:
    """(category, why, the fact that decided, the rule's condition) for one class."""
    for rule in cls.rules:
        ev = CONDITIONS[rule.when](setup)
        if ev is not None:
            return rule.category, rule.why, ev, rule.when
    words = _words_pick(cls, setup)
    if words is not None:
        return words
    return cls.default, cls.why, None, None


def _words_pick(cls: SymptomClass, setup: _Setup) -> tuple[Category, str, Evidence, str] | None:
    """With no rule of the class decided, whether the complaint's words move the diagnosis off the class's default
    to another category the class points at: the complaint prior's likelihood of the words under each (a flat prior:
    the default already is the class's base rate), among categories the labelled reports name often enough
    (complaint_prior_min_support; the default too -- words cannot be weighed against a category they never saw), the
    other at least complaint_prior_pick_min of the share and complaint_prior_pick_ratio times the default's."""
    model = prior_model()
    if model is None:
        return None
    floor = threshold("complaint_prior_min_support")
    among = [c for c in dict.fromkeys((cls.default.value, *(c.value for c in cls.points_at)))
             if model.support.get(c, 0) >= floor]
    if cls.default.value not in among or len(among) < 2:
        return None
    # the words alone: the class itself is what the default already stands for
    shares = model.likelihood_shares(complaint_prior.words(str(setup.complaint.get("text") or "")), among)
    if not shares:
        return None
    top, share = next(iter(shares.items()))
    base = shares.get(cls.default.value, 0.0)
    if top == cls.default.value or share < threshold("complaint_prior_pick_min") \
            or share < threshold("complaint_prior_pick_ratio") * base:
        return None
    cat = Category(top)
    why = (f"reports worded like yours most often turned out to be {top} rather than {cls.default.value}, this "
           f"complaint's usual cause (likelihood share {share:.2f} against {base:.2f} among the {len(among)} causes "
           f"it points at that the labelled reports name at least {floor:g} times)")
    return cat, why, Evidence(
        f"knowledge/data/{complaint_prior.DATA_FILE}", f"{why}; {model.support.get(top, 0)} of the "
        f"{sum(v for k, v in model.support.items() if k != complaint_prior.NO_COMPLAINT)} labelled public reports "
        f"are {top}"), "complaint-words"


def _commands(cat: Category, cls: SymptomClass, setup: _Setup) -> tuple[str, ...]:
    spec = setup.spec
    if cat is Category.K_TOO_LARGE and spec is not None and setup.k and setup.k > 1:
        return (speculative_config_flag(spec, max(1, setup.k // 2)),)
    if cat is Category.HIGH_TEMPERATURE:
        return ("spec-doctor probe --target <target> --draft <draft> --temperature 0",)
    if cat in (Category.HIGH_CONCURRENCY, Category.TARGET_TOO_SMALL):
        return (_OFF,)
    return cls.commands


def _categories() -> list[str]:
    """Every problem category: the classes' candidates and, through the complaint prior, any other."""
    return sorted(c.value for c in Category if c is not Category.HEALTHY)


@check("symptom.differential", categories=_categories(), needs=["symptom.complaint"],
       wants=["config.deployment", "models.spec", "models.pair", "models.target", "observed.figures",
              "logs.acceptance", "logs.files", "metrics.deltas", "vllm.version", "observed.bench", "symptom.settings"],
       findings={**{f"symptom.{c}": f"the complaint ({c}) with this setup most often means this" for c in CLASSES},
                 "symptom.words": "a complaint no symptom class matches: its likely cause by the complaint prior"},
       sources=[f"knowledge/data/{SYMPTOMS_FILE}", "knowledge/data/taxonomy.md",
                "https://github.com/vllm-project/vllm/blob/main/.github/ISSUE_TEMPLATE/400-bug-report.yml"])
def differential(facts: Mapping[str, Any]) -> list[Finding]:
    """What the user's complaint (--symptom) most often means with this setup.

    Per symptom class, the taxonomy category its rules pick from the facts already collected (or the class's most
    common cause), at low confidence; a finding another check already makes in a category the complaint points at
    is corroborated instead (report/merge.py)."""
    complaint = facts["symptom.complaint"]
    classes = _classes_to_judge(complaint)
    if not classes:
        return _from_words(complaint)
    setup = _Setup(facts, complaint)
    quote = Evidence("--symptom", f"\"{clip(str(complaint['text']), 240)}\" (classes: "
                                  f"{', '.join(complaint['classes'])}"
                                  + (f"; stage: {complaint['stage']}" if complaint.get("stage") else "") + ")")
    # One finding per category the classes lead to: two classes that mean the same thing are one diagnosis.
    groups: dict[Category, list[tuple[SymptomClass, str, Evidence | None, str | None]]] = {}
    for name in classes:
        cls = symptom_classes()[name]
        cat, why, ev, when = _pick(cls, setup)
        groups.setdefault(cat, []).append((cls, why, ev, when))
    out: list[Finding] = []
    for cat, members in groups.items():
        lead, why, _, _ = members[0]
        names = [m[0].name for m in members]
        decided = [m[2] for m in members if m[2] is not None]
        corroborates = sorted({c.value for m in members for c in (*m[0].points_at, cat)})
        severity = max((Severity(m[0].severity) for m in members), key=lambda s: s.rank)
        confirm = "; ".join(dict.fromkeys(m[0].confirm for m in members))
        fix_text = next((m[0].fix for m in members if m[0].fix), "")
        out.append(Finding(
            f"symptom.{lead.name}", cat, severity,
            # how sure the complaint alone makes it (symptoms.toml: per class; more when a fact of this setup decided,
            # half as much when only a setting the complaint names in prose decided)
            round(max(m[0].confidence for m in members) + _gain(decided, setup), 3),
            f"Your complaint ({', '.join(names)}) with this setup most often means {cat.value}"
            + ("" if decided else " (from the complaint alone)"),
            (quote, *decided, Evidence(f"knowledge/data/{SYMPTOMS_FILE} [class.{lead.name}]", why)),
            Fix((f"{fix_text}. " if fix_text else "") + f"To confirm: {confirm}", _commands(cat, lead, setup)),
            impact=("A pointer from the complaint and the facts above" if decided else
                    "A pointer from the complaint alone") + "; confirm it before acting on it.",
            impact_score=0.5,
            data={"classes": names, "stage": complaint.get("stage"), "corroborates": corroborates,
                  "complaint": True, "never_healthy": any(n in _NEVER_HEALTHY for n in names),
                  "rules": [m[3] for m in members if m[3]]}))
    return out


def _gain(decided: list[Evidence], setup: _Setup) -> float:
    """The confidence a deciding fact adds: the full gain from an input, half from the complaint's prose alone."""
    if not decided:
        return 0.0
    prose_only = all(e.source in setup.prose_sources for e in decided)
    return rule_confidence_gain() * (0.5 if prose_only else 1.0)


def _from_words(complaint: Mapping[str, Any]) -> list[Finding]:
    """A complaint whose words match no symptom class: the likely cause by the complaint prior alone, when its first
    category is a problem the labelled reports name often enough (complaint_prior_min_support) and is probable enough
    (complaint_prior_words_min); corroborating what other checks found in any category the prior finds plausible."""
    model = prior_model()
    if model is None:
        return []
    prior = model.posterior(prior_features(str(complaint.get("text") or ""), ()))
    if not prior:
        return []
    top, p = next(iter(prior.items()))  # the posterior comes most probable first
    allowed = {c.value for c in Category if c is not Category.HEALTHY}
    if top not in allowed or p < threshold("complaint_prior_words_min") \
            or model.support.get(top, 0) < threshold("complaint_prior_min_support"):
        return []
    cat = Category(top)
    plausible = sorted(c for c, q in prior.items() if c in allowed and q >= threshold("complaint_prior_plausible"))
    return [Finding(
        # a note, not a warning: the prior names the right cause only about two times in five (its holdout)
        "symptom.words", cat, Severity.INFO, threshold("complaint_prior_confidence"),
        f"Your complaint's words most often mean {cat.value} (no symptom class matched them)",
        (Evidence("--symptom", f"\"{clip(str(complaint['text']), 240)}\" (no symptom class)"),
         Evidence(f"knowledge/data/{complaint_prior.DATA_FILE}", _prior_why(top, p))),
        Fix("Check this cause first; give spec-doctor the server log (--log) or the command line (--cmd) to confirm "
            "it", ()),
        impact="A pointer from the complaint's words alone; confirm it before acting on it.", impact_score=0.5,
        data={"classes": [], "stage": complaint.get("stage"), "corroborates": sorted({top, *plausible}),
              "complaint": True, "never_healthy": False, "rules": ["complaint-prior"]})]

"""Known speculative-decoding bugs of vLLM releases (data/release_bugs.toml, the one table of them), and which of them
a deployment or a symptom seen in a run points to.

Each row names the methods it needs, the conditions it needs (flags, parallelism, KV-cache dtype, target family),
the symptom it shows (a crash with its exception class / message, zero or collapsing acceptance, a slowdown, wrong
output, a hang, memory), the releases it affects and the first release containing its fix, with the fix's PR and
how that release was determined (`fixed_basis`):

- "git-tag": the first release tag (vX.Y.Z, no rc/dev) whose history contains the fix commit, as `git tag
  --contains` lists it (scripts/mine_release_bugs.py; exact, where the mirror mined has the tag);
- "advisory": the PyPA/OSV advisory's affected range ("introduced"/"fixed" events);
- "release-notes": the release's notes list the fix PR;
- "catalogue": the fix added or changed a message, and knowledge/data/catalogue.json says which release first has it;
- "pr-date": the fix PR's merge (or last dated activity) against the release dates in [releases] (the first
  main-line release published at least `branch_margin_days` after it; see `release_after`);
- "issue-comment": a maintainer or reporter said in the issue thread which release fixed it (or that the latest
  release they tried still has it: then no `fixed_in`);
- "release-source": the bug's code is in every release tag from `affected_from` to the one before `fixed_in`;
- "plugin-tag": a platform plugin's bug (vllm-ascend): the first plugin tag containing the fix commit
  (`fixed_note`), and `fixed_in` the vLLM release that plugin release runs on (its compatibility matrix).

`match(bug, deployment)` is pure: the check (checks/release_bugs.py) builds the `Deployment` from its facts; it
reports the rows that need a known release (`for_release`). Rows marked `by_symptom` are named by the check that
sees their symptom (`symptom_bugs`, `crash_bug`: checks/logs.py, checks/crash.py), also when the release is unknown.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from packaging.version import InvalidVersion, Version

from spec_doctor.knowledge.data import load
from spec_doctor.knowledge.specdata import is_mtp_method

# The complaint classes of SYMPTOM.md (knowledge/data/symptoms.toml) plus "tail-zero", a log pattern, not a complaint.
SYMPTOMS = ("crash", "memory", "slowdown", "latency", "low-acceptance", "zero-acceptance", "wrong-output", "hang",
            "no-metrics", "preemption", "unsupported", "tail-zero")
BASES = ("git-tag", "advisory", "release-notes", "catalogue", "pr-date", "issue-comment", "release-source",
         "plugin-tag")
CATEGORIES = ("engine-bug", "env-version", "config-unsupported-combo", "quantization", "cuda-graph")
ANY = "any"
# Method aliases vLLM accepts (config/speculative.py): every per-model MTP name is MTP; eagle-family heads.


def normalize_method(method: str | None) -> str | None:
    if not method:
        return None
    m = method.strip().lower().replace("-", "_")
    if is_mtp_method(m):
        return "mtp"
    if m in ("[ngram]",):
        return "ngram"
    return m


# How an advisory (a known bug of the release that nothing in the inputs shows, checks/release_bugs.py release) begins
# its title; report/build.py says it once when it lists several.
ADVISORY_TITLE = "Known bug in your release for this configuration"

# A row title that places the crash before serving: loading, initialisation, start-up, a refusal at start.
_STARTUP_TITLE = re.compile(r"\b(?:fails? (?:to (?:load|initiali[sz]e|start)|at (?:start-?up|engine initiali[sz]ation))"
                            r"|refused at start-?up|at start-?up|weight loading|weights? fail to load|fail to load"
                            r"|load(?:s|ing)? (?:its |the )?[\w-]* ?weights)", re.I)


@dataclass(frozen=True)
class KnownBug:
    id: str
    title: str
    methods: tuple[str, ...]
    when: dict[str, Any]
    symptom: str
    exceptions: tuple[str, ...]
    texts: tuple[re.Pattern[str], ...]
    sites: tuple[re.Pattern[str], ...]
    affected_from: Version | None
    fixed_in: Version | None  # None: no release the sources examined has the fix
    fixed_basis: str
    pr_date: str | None
    source: str
    also: tuple[str, ...]
    message: str | None
    category: str
    fix: str
    workaround: str
    by_symptom: bool = False  # the symptom alone names it: reported by the check that sees the symptom
    meaning: str = ""
    commands: tuple[str, ...] = ()
    fixed_note: str = ""  # what the sources say about the fix, where the release alone does not say it

    @property
    def at_startup(self) -> bool:
        """A crash that happens before the server serves: the row's title says it fails to load, initialise or
        start, or is refused at start-up (vLLM loads weights, initialises the engine, profiles memory and captures
        CUDA graphs before it takes a request). Such a bug cannot be what a complaint about a running server saw."""
        return self.symptom == "crash" and bool(_STARTUP_TITLE.search(self.title))

    def affects(self, version: Version) -> bool:
        v = Version(version.base_version)
        return (self.fixed_in is None or v < self.fixed_in) and (self.affected_from is None or v >= self.affected_from)

    def affected_label(self) -> str:
        lo = str(self.affected_from) if self.affected_from else "earlier releases"
        return f"{lo} up to (not including) {self.fixed_in}" if self.fixed_in else f"{lo} on"

    def fixed_label(self) -> str:
        return self.fixed_note or (str(self.fixed_in) if self.fixed_in else "not in any release examined")

    def versions_label(self) -> str:
        """The affected releases as a PEP 440 range (">=0.16.0,<0.33.0")."""
        parts = [f">={self.affected_from}"] if self.affected_from else []
        return ",".join(parts + ([f"<{self.fixed_in}"] if self.fixed_in else [])) or "any release"


@dataclass
class Deployment:
    """What the inputs show about the deployment, in the terms of the rows' conditions."""

    method: str | None = None
    k: int | None = None
    args: dict[str, Any] = field(default_factory=dict)
    families: tuple[str, ...] = ()  # target architectures / model_type / model id, lower-case
    quantized: bool | None = None
    device: str | None = None
    spec: dict[str, Any] = field(default_factory=dict)  # the speculative config's keys as given
    env: dict[str, str] = field(default_factory=dict)  # VAR=value set on the command line
    draft_quantized: bool | None = None
    platform: str = "vllm"  # a platform plugin the inputs show (deploy.platform: "ascend"), else vLLM's own
    # What the complaint names in prose (fact symptom.settings), as a deployment of its own: read only for a
    # condition the inputs above cannot tell, and only when it shows the condition holding; `said_phrases`: engine
    # argument (or "k", "family:WORD") -> the phrase that named it.
    said: Deployment | None = None
    said_phrases: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Match:
    bug: KnownBug
    satisfied: tuple[str, ...]  # conditions the deployment shows
    unknown: tuple[str, ...]  # conditions the inputs cannot tell
    named: tuple[str, ...] = ()  # conditions only the complaint's prose shows (with the phrase that named each)


def _v(text: str | None) -> Version | None:
    return Version(text) if text else None


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    return load("release_bugs.toml")


def _affected_from(row: dict[str, Any]) -> Version | None:
    """The row's `affected_from`, raised to the first release that reads an environment variable its `when.env`
    needs ([env_since]): a bug that needs VLLM_USE_V2_MODEL_RUNNER=1 cannot affect a release without Model Runner
    V2."""
    floors = [_v(row.get("affected_from"))] + [
        _v(table().get("env_since", {}).get(var, {}).get("since")) for var in (row.get("when") or {}).get("env", {})]
    known = [v for v in floors if v is not None]
    return max(known) if known else None


@lru_cache(maxsize=1)
def bugs() -> tuple[KnownBug, ...]:
    out = []
    for r in table()["bug"]:
        out.append(KnownBug(
            id=r["id"], title=r["title"], methods=tuple(normalize_method(m) or m for m in r["methods"]),
            when=dict(r.get("when", {})), symptom=r["symptom"], exceptions=tuple(r.get("exceptions", ())),
            texts=tuple(re.compile(t, re.I) for t in r.get("texts", ())),
            sites=tuple(re.compile(t) for t in r.get("sites", ())), affected_from=_affected_from(r),
            fixed_in=_v(r.get("fixed_in")), fixed_basis=r["fixed_basis"], pr_date=r.get("pr_date"),
            source=r["source"], also=tuple(r.get("also", ())), message=r.get("message"), category=r["category"],
            fix=r["fix"], workaround=r.get("workaround", ""), by_symptom=bool(r.get("by_symptom", False)),
            meaning=r.get("meaning", ""), commands=tuple(r.get("commands", ())), fixed_note=r.get("fixed_note", "")))
    return tuple(out)


def for_release() -> tuple[KnownBug, ...]:
    """The rows the release-bug checks judge by the release and configuration (not `by_symptom`)."""
    return tuple(b for b in bugs() if not b.by_symptom)


def generic_bug(name: str) -> dict[str, Any]:
    """What a symptom or metric pattern means when no row names it ([generic.NAME]: meaning, fix, commands, source;
    the moved log-pattern rows also category, versions, title), with its `id`."""
    row: dict[str, Any] = table().get("generic", {}).get(name, {})
    return {"id": name, **row} if row else {}


def release_dates() -> dict[str, dt.date]:
    return {v: dt.date.fromisoformat(d) for v, d in table()["releases"]["dates"].items()}


def is_mainline(version: str) -> bool:
    """A release cut from main (not a hotfix carrying cherry-picks only)."""
    try:
        v = Version(version)
    except InvalidVersion:
        return False
    return not v.is_postrelease and len(v.release) == 3 and version not in table()["releases"]["hotfix"]


def release_after(merged: str) -> str | None:
    """The first main-line release published at least `branch_margin_days` after a fix merged on `merged`
    (ISO date): the release a merge date places the fix in. None when no release examined is that late."""
    margin = dt.timedelta(days=int(table()["releases"]["branch_margin_days"]))
    day = dt.date.fromisoformat(merged) + margin
    for v, published in sorted(release_dates().items(), key=lambda kv: kv[1]):
        if published >= day and is_mainline(v):
            return v
    return None


# -- conditions ------------------------------------------------------------------------------------------------
_FALSE = (False, "false", "0", "no", "off", "none", "")


def _flag(args: dict[str, Any], key: str) -> Any:
    return args.get(key)


def _truthy(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and value.strip().lower() in _FALSE) and value is not False


def _cond(name: str, want: Any, d: Deployment) -> bool | None:
    """True / False when the deployment shows whether condition `name` holds; None when the inputs cannot tell."""
    a = d.args
    if name == "tp_min":
        tp = a.get("tensor_parallel_size")
        return None if tp is None and not a else int(tp or 1) >= int(want)
    if name == "pp_min":
        pp = a.get("pipeline_parallel_size")
        return None if pp is None and not a else int(pp or 1) >= int(want)
    if name == "cuda_graphs":
        eager = a.get("enforce_eager")
        if eager is None:
            return None if not a else bool(want)  # CUDA graphs are on unless --enforce-eager
        return (not _truthy(eager)) == bool(want)
    if name == "kv_cache_dtype":
        kv = str(a.get("kv_cache_dtype") or "")
        if not kv:
            return None if not a else False
        return kv.lower().startswith(str(want).lower())
    if name == "quantized":
        return None if d.quantized is None else d.quantized == bool(want)
    if name == "flags_set":
        vals = [_flag(a, f) for f in want]
        if all(v is None for v in vals):
            return None if not a else False
        return all(_truthy(v) for v in vals)
    if name == "flag_prefix":
        for key, prefix in dict(want).items():
            v = a.get(key)
            if v is None:
                return None if not a else False
            if not str(v).lower().startswith(str(prefix).lower()):
                return False
        return True
    if name == "flag_not_prefix":  # the flag is absent (its default) or set to something else
        if not a:
            return None
        return not any(str(a.get(k) or "").lower().startswith(str(p).lower()) for k, p in dict(want).items())
    if name == "flag_false":
        v = a.get(want)
        return None if v is None else not _truthy(v)
    if name in ("family", "family_not"):
        if not d.families:
            return None
        pat = re.compile(str(want), re.I)
        hit = any(pat.search(f) for f in d.families)
        return hit if name == "family" else not hit
    if name == "dp_min":
        dp = a.get("data_parallel_size")
        return None if dp is None and not a else int(dp or 1) >= int(want)
    if name == "device":
        return None if d.device is None else d.device == want
    if name == "k_min":
        return None if d.k is None else d.k >= int(want)
    if name == "env":
        if not a and not d.env:
            return None
        return all(str(d.env.get(k, "")).strip().lower() == str(v).lower() for k, v in dict(want).items())
    if name == "spec_key":
        return None if not d.spec and not a else (want in d.spec) or (f"speculative_{want}" in a)
    if name == "spec_min":
        for key, low in dict(want).items():
            v = d.spec.get(key, a.get(f"speculative_{key}"))
            if v is None:
                return None if not d.spec and not a else False
            try:
                if float(v) < float(low):
                    return False
            except (TypeError, ValueError):
                return None
        return True
    if name == "draft_quantized":
        return None if d.draft_quantized is None else d.draft_quantized == bool(want)
    if name == "prefix_caching":
        v = a.get("enable_prefix_caching")
        return None if v is None else _truthy(v) == bool(want)
    if name == "platform":
        return d.platform == want  # a plugin's platform is shown, never assumed
    if name == "cudagraph_mode":
        mode = _cudagraph_mode(a)
        if mode is None:
            return None if not a else False  # the default mode is not FULL in the releases that have the setting
        return mode.upper() == str(want).upper()
    raise KeyError(f"unknown condition {name!r}")


CONDITIONS = ("tp_min", "pp_min", "cuda_graphs", "kv_cache_dtype", "quantized", "flags_set", "flag_prefix",
              "flag_not_prefix", "flag_false", "family", "family_not", "device", "k_min", "prefix_caching",
              "cudagraph_mode", "dp_min", "spec_key", "spec_min", "draft_quantized", "env", "platform")


def _cudagraph_mode(args: dict[str, Any]) -> str | None:
    """compilation_config.cudagraph_mode as given (a dict, a JSON string or a dotted flag), else None."""
    import json

    direct = args.get("compilation_config.cudagraph_mode") or args.get("cudagraph_mode")
    if direct:
        return str(direct)
    cc = args.get("compilation_config")
    if isinstance(cc, str):
        try:
            cc = json.loads(cc)
        except ValueError:
            return None
    if isinstance(cc, dict) and cc.get("cudagraph_mode"):
        return str(cc["cudagraph_mode"])
    return None


def _flags(names: Any) -> str:
    return ", ".join(f"--{str(f).replace('_', '-')}" for f in names)


def _pairs(want: Any, sep: str, suffix: str = "") -> str:
    return ", ".join(f"{k}{sep}{v}{suffix}" for k, v in dict(want).items())


# How each condition reads in evidence (`want` is the row's value for it).
_DESCRIBE: dict[str, Any] = {
    "tp_min": lambda w: f"tensor parallel size >= {w}",
    "pp_min": lambda w: f"pipeline parallel size >= {w}",
    "dp_min": lambda w: f"data parallel size >= {w}",
    "k_min": lambda w: f"num_speculative_tokens >= {w}",
    "cuda_graphs": lambda w: "CUDA graphs on (no --enforce-eager)" if w else "--enforce-eager",
    "kv_cache_dtype": lambda w: f"--kv-cache-dtype {w}*",
    "quantized": lambda w: "a quantized model or KV cache",
    "draft_quantized": lambda w: "a quantized drafter" if w else "an unquantized drafter",
    "flags_set": lambda w: "set: " + _flags(w),
    "flag_prefix": lambda w: _pairs({f"--{str(k).replace('_', '-')}": v for k, v in dict(w).items()}, " ", "*"),
    "flag_not_prefix": lambda w: ", ".join(f"--{str(k).replace('_', '-')} not {v}*" for k, v in dict(w).items()),
    "flag_false": lambda w: "--no-" + str(w).replace("_", "-"),
    "family": lambda w: f"a target of the family /{w}/",
    "family_not": lambda w: f"a target outside the family /{w}/",
    "device": lambda w: f"the {w} backend",
    "prefix_caching": lambda w: "prefix caching on" if w else "prefix caching off",
    "spec_key": lambda w: f"{w} in --speculative-config",
    "spec_min": lambda w: _pairs(w, " >= "),
    "env": lambda w: _pairs(w, "="),
    "cudagraph_mode": lambda w: f"cudagraph_mode {w}",
    "platform": lambda w: f"the {w} platform plugin",
}


def describe_condition(name: str, want: Any) -> str:
    fn = _DESCRIBE.get(name)
    return str(fn(want)) if fn else name


# The engine arguments a condition reads (the prose of a complaint shows a condition only when it names all of them):
# fixed per condition, or named by the condition's own value.
_COND_ARGS: dict[str, tuple[str, ...]] = {
    "tp_min": ("tensor_parallel_size",), "pp_min": ("pipeline_parallel_size",), "dp_min": ("data_parallel_size",),
    "cuda_graphs": ("enforce_eager",), "kv_cache_dtype": ("kv_cache_dtype",),
    "prefix_caching": ("enable_prefix_caching",), "device": ("device",), "k_min": ("k",),
}
_COND_ARGS_OF_WANT: dict[str, Any] = {
    "flags_set": tuple, "flag_false": lambda w: (w,), "flag_prefix": lambda w: tuple(dict(w)),
}


def _said(name: str, want: Any, d: Deployment) -> str | None:
    """The phrase(s) of the complaint that show condition `name` holding (d.said, the complaint's prose), or None:
    the prose never rules a row out, and a condition it cannot read (a negative one, one whose arguments it does not
    all name) stays unknown."""
    said = d.said
    if said is None:
        return None
    if name == "family":
        pat = re.compile(str(want), re.I)
        return next((d.said_phrases.get(f"family:{f}", f) for f in said.families if pat.search(f)), None)
    if name == "quantized":
        keys: tuple[str, ...] = tuple(k for k in ("quantization", "kv_cache_dtype") if k in d.said_phrases)
        return d.said_phrases[keys[0]] if keys and said.quantized and bool(want) else None
    keys = _COND_ARGS.get(name) or (_COND_ARGS_OF_WANT[name](want) if name in _COND_ARGS_OF_WANT else ())
    if not keys or not all(k in d.said_phrases for k in keys):
        return None
    if not _cond(name, want, said):
        return None
    return "; ".join(dict.fromkeys(d.said_phrases[k] for k in keys))


def match(bug: KnownBug, d: Deployment) -> Match | None:
    """The row applies to this deployment's method and conditions (the version is the caller's business):
    None when the method differs or a condition is shown not to hold; conditions the inputs cannot tell are
    returned as `unknown`, or as `named` where the complaint's prose shows them holding (d.said)."""
    method = normalize_method(d.method)
    if ANY not in bug.methods and (method is None or method not in bug.methods):
        return None
    sat: list[str] = []
    unk: list[str] = []
    named: list[str] = []
    for name, want in bug.when.items():
        got = _cond(name, want, d)
        if got is False:
            return None
        if got:
            sat.append(describe_condition(name, want))
            continue
        phrase = _said(name, want, d)
        if phrase is not None:
            named.append(f'{describe_condition(name, want)} ("{phrase}")')
        else:
            unk.append(describe_condition(name, want))
    return Match(bug, tuple(sat), tuple(unk), tuple(named))


def exception_matches(bug: KnownBug, exc_type: str | None, message: str | None,
                      where: list[str] | tuple[str, ...] = ()) -> str | None:
    """How specifically a traceback is this row's: "exact" when the message matches one of the row's texts (and the
    class is one the row names, when it names any), "class" when only a named exception class matches; None
    otherwise. `where`: the traceback's vLLM modules / frames, which must match the row's `sites` when it has any.
    A row naming neither exception nor text matches no traceback."""
    if not bug.exceptions and not bug.texts:
        return None
    if bug.sites and not any(p.search(w) for p in bug.sites for w in where):
        return None
    short = (exc_type or "").rsplit(".", 1)[-1]
    if bug.exceptions and short not in bug.exceptions:
        return None
    if bug.texts:
        return "exact" if any(p.search(message or "") for p in bug.texts) else None
    return "class"


def text_matches(bug: KnownBug, line: str) -> bool:
    return any(p.search(line) for p in bug.texts)


# -- which releases the inputs allow, against a row's -----------------------------------------------------------
@dataclass(frozen=True)
class ReleaseSpan:
    """The releases the inputs allow: one (a stated version) or an inferred range [low, high] (`high_open`: nothing
    bounded it from above)."""

    low: Version
    high: Version
    inferred: bool
    high_open: bool
    source: str
    label: str


def _base(value: Any) -> Version | None:
    try:
        return Version(Version(str(value).lstrip("v")).base_version)
    except InvalidVersion:
        return None  # not a release spec-doctor can place: judged as unknown


def release_span(version: Any = None, release_range: Any = None) -> ReleaseSpan | None:
    """The one reader of a collected vllm.version fact (a stated Sourced value or an InferredVersion), a bare
    Version, or an inferred ReleaseRange (vllm.version_range, used when no version is given): None when nothing
    places the release."""
    if version is not None:
        value = getattr(version, "value", version)
        source = str(getattr(version, "source", "vllm.version"))
        if getattr(version, "inferred", False):
            span = _range_span(getattr(version, "low", None), getattr(version, "high", None) or value,
                               bool(getattr(version, "high_open", False)), source)
            if span is not None:
                label = version.label() if hasattr(version, "label") else span.label
                return ReleaseSpan(span.low, span.high, True, span.high_open, source, label)
        else:
            base = _base(value)
            if base is not None:
                return ReleaseSpan(base, base, False, False, source, str(value))
    span = _range_span(getattr(release_range, "low", None), getattr(release_range, "high", None),
                       bool(getattr(release_range, "high_open", False)), "vllm.version_range")
    if span is None or not hasattr(release_range, "label"):
        return span
    return ReleaseSpan(span.low, span.high, True, span.high_open, span.source, release_range.label())


_EARLIEST = Version("0")


def _range_span(low: Any, high: Any, high_open: bool, source: str) -> ReleaseSpan | None:
    """An inferred range; a missing end is unbounded (no low: any earlier release; no high: open upwards)."""
    if low is None and high is None:
        return None
    lo = _base(low) if low is not None else _EARLIEST
    hi = _base(high) if high is not None else lo
    if lo is None or hi is None:
        return None
    return ReleaseSpan(lo, hi, True, high_open or high is None, source, f"{low or '?'}-{high or '?'}")


def coverage(bug: KnownBug, span: ReleaseSpan) -> str | None:
    """"all" when every release the span allows is affected, "part" when some are, None when none is. The affected
    releases are one interval [affected_from, fixed_in), so the span's ends decide; a span open upwards is never
    wholly inside a bounded interval."""
    if bug.affects(span.low) and bug.affects(span.high) and not (span.high_open and bug.fixed_in is not None):
        return "all"
    before_fix = bug.fixed_in is None or span.low < bug.fixed_in
    after_start = bug.affected_from is None or span.high_open or span.high >= bug.affected_from
    return "part" if before_fix and after_start else None


# -- rows named by their symptom -------------------------------------------------------------------------------
def symptom_bugs(symptom: str, method: str | None, version: Any = None,
                 release_range: Any = None) -> list[tuple[KnownBug, bool]]:
    """The `by_symptom` rows that show this symptom for this method, each with whether the release is known to be
    affected (`version`: a release or the collected vllm.version fact; `release_range`: the inferred one) -- True:
    the version, or the whole inferred range, is affected; False: no release is known, or the range only overlaps.
    A row whose releases exclude the known version or range is left out. For "crash" an unknown method does not
    rule a row out (crash_bug matches the traceback)."""
    span = release_span(version, release_range)
    m = normalize_method(method)
    out = []
    for bug in bugs():
        if not bug.by_symptom or bug.symptom != symptom:
            continue
        unknown_crash_method = m is None and symptom == "crash"
        if ANY not in bug.methods and not unknown_crash_method and m not in bug.methods:
            continue
        cover = "part" if span is None else coverage(bug, span)  # no release known: possibly
        if cover is not None:
            out.append((bug, cover == "all"))
    return out


def crash_bug(exc_type: str | None, message: str | None, modules: list[str], method: str | None,
              version: Any = None, release_range: Any = None) -> tuple[KnownBug, bool] | None:
    """The `by_symptom` crash row this traceback is (its exception class, message and vLLM frames, the method and
    the release), with whether the release is known to be affected; None when none matches."""
    for bug, sure in symptom_bugs("crash", method, version, release_range):
        if exception_matches(bug, exc_type, message, modules):
            return bug, sure
    return None

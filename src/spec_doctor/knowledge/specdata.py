"""vLLM version knowledge for the config checks, read from knowledge/data/flags.toml and methods.toml.

The data files hold the facts (with a source per row); this module only answers questions about them:
which release has a flag, what replaced it, which methods a release supports, which combination rules
apply. Version arguments are packaging Versions (or None = unknown).
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from spec_doctor.knowledge.data import load

NEWEST_EXAMINED = Version("0.33.0")


@functools.cache
def _load(name: str) -> dict[str, Any]:
    return load(name)


def flags_data() -> dict[str, Any]:
    return _load("flags.toml")


def methods_data() -> dict[str, Any]:
    return _load("methods.toml")


def _v(text: str | None) -> Version | None:
    return Version(text) if text else None


# -- flags ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FlagInfo:
    name: str
    first: Version | None
    last: Version | None
    spec_key: str | None
    row: dict[str, Any]

    def present_in(self, version: Version) -> bool:
        base = Version(version.base_version)
        if self.first and base < Version(self.first.base_version):
            return False
        return not (self.last and base > self.last)

    @property
    def legacy_spec(self) -> bool:
        """A removed V0 spec-decode flag (replaced by a --speculative-config key)."""
        return bool(self.spec_key) and not self.row.get("shortcut")


@functools.cache
def _flag_index() -> dict[str, FlagInfo]:
    index: dict[str, FlagInfo] = {}
    for row in flags_data()["flag"]:
        info = FlagInfo(row["name"], _v(row.get("first")), _v(row.get("last")), row.get("spec_key"), row)
        index[row["name"]] = info
    return index


@functools.cache
def _alias_index() -> dict[str, str]:
    aliases: dict[str, str] = {}
    for row in flags_data()["flag"]:
        for alias in row.get("aliases", []):
            aliases[alias["name"]] = row["name"]
    return aliases


def flag_info(flag: str) -> FlagInfo | None:
    return _flag_index().get(canonical_flag(flag))


def all_flags() -> list[FlagInfo]:
    return list(_flag_index().values())


def canonical_flag(flag: str) -> str:
    """`-tp` -> `--tensor-parallel-size`; other names unchanged."""
    return _alias_index().get(flag, flag)


def alias_first(alias: str) -> Version | None:
    for row in flags_data()["flag"]:
        for a in row.get("aliases", []):
            if a["name"] == alias:
                return _v(a.get("first"))
    return None


@functools.cache
def boolean_flags() -> frozenset[str]:
    names = set(flags_data()["parser"]["boolean_flags"])
    names |= {row["name"] for row in flags_data()["flag"] if row.get("boolean")}
    return frozenset(names)


@functools.cache
def json_flags() -> frozenset[str]:
    return frozenset(row["name"] for row in flags_data()["flag"] if row.get("json"))


def legacy_spec_flags() -> dict[str, FlagInfo]:
    """dest name (`speculative_model`) -> info, for the removed V0 spec flags."""
    return {f.name.lstrip("-").replace("-", "_"): f for f in all_flags() if f.legacy_spec}


# -- speculative-config keys --------------------------------------------------------------------

@functools.cache
def spec_keys() -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in flags_data()["spec_key"]}


def spec_key_status(key: str, version: Version | None) -> tuple[str, dict[str, Any] | None]:
    """('ok'|'invalid'|'removed'|'not-yet'|'noop'|'unknown', row) for a --speculative-config key."""
    row = spec_keys().get(key)
    if row is None:
        return "unknown", None
    if row.get("invalid"):
        return "invalid", row
    if version is None:
        return "ok", row
    base = Version(version.base_version)
    first, last = _v(row.get("first")), _v(row.get("last"))
    if first and base < first:
        return "not-yet", row
    if last and base > last:
        return "removed", row
    if row.get("noop") and base in SpecifierSet(row["noop"]):
        return "noop", row
    return "ok", row


def unknown_keys_rejected(version: Version) -> bool:
    return Version(version.base_version) >= Version(flags_data()["spec_keys"]["unknown_rejected_from"])


# -- methods -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MethodSupport:
    method: str
    status: str  # supported | v0-fallback | v1-opt-in | unsupported | removed | not-yet | no-data | unknown-method
    row: dict[str, Any]  # the support row (empty when derived)
    method_row: dict[str, Any]
    first_supported: Version | None  # the first release where the method runs on the default engine (latest window)
    source: str

    @property
    def label(self) -> str:
        return self.method_row.get("label", self.method)

    @property
    def cannot_run(self) -> bool:
        """The release cannot run the method at all: not supported, removed, or it predates the method."""
        return self.status in ("unsupported", "removed", "not-yet")


@functools.cache
def _methods() -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in methods_data()["method"]}


@functools.lru_cache(maxsize=64)
def _mtp_alias(name: str) -> dict[str, Any] | None:
    """A method row for a model-specific MTP type written as the method (`"method": "glm4_moe_mtp"`) that
    methods.toml has no row of its own for. vLLM takes its MTP drafters' model types as method names (MTPModelTypes in
    vllm/config/speculative.py) and from 0.11.0 rewrites every one to 'mtp' ("method `%s` is deprecated and replaced
    with mtp."); the type exists from its drafter module's first release (knowledge/data/model_support.json
    drafters). Before 0.11.0 which types the method list took is not mined: no data there."""
    if not name.endswith(methods_data()["inference"]["mtp_model_type_suffix"]):
        return None
    from spec_doctor.knowledge.model_support import mtp_model_type

    drafter = mtp_model_type(name)
    if drafter is None:
        return None
    first = Version(drafter["ranges"][0][0])
    rename = Version(methods_data()["inference"].get("mtp_rename_version", "0.11.0"))
    since = max(first, rename)
    return {"name": name, "label": f"{name} (the model's own MTP layers; vLLM runs it as 'mtp')", "renamed_to": "mtp",
            "renamed_from_version": str(rename),
            "rename_source": "vllm/config/speculative.py@v0.11.0 (\"method `%s` is deprecated and replaced with mtp.\")",
            "support": ([{"versions": f">={first},<{rename}", "status": "no-data",
                          "source": f"{drafter['source']} (drafter module; the method names of these releases are "
                                    "not mined)"}] if first < rename else [])
            + [{"versions": f">={since}", "status": "supported", "engine": "V1",
                         "source": f"{drafter['source']} (drafter module); vllm/config/speculative.py@v0.11.0 "
                                   "(MTPModelTypes taken as method names, rewritten to 'mtp')"}],
            "derived": True}


def known_method(name: str) -> bool:
    return name in _methods() or _mtp_alias(name) is not None


def method_row(name: str) -> dict[str, Any] | None:
    return _methods().get(name) or _mtp_alias(name)


def is_mtp_method(name: str | None) -> bool:
    if not name:
        return False
    return name == "mtp" or name.endswith(methods_data()["inference"]["mtp_model_type_suffix"])


def _first_current_support(row: dict[str, Any]) -> Version | None:
    """Start of the newest 'supported' window (the release to upgrade to)."""
    best: Version | None = None
    for s in row.get("support", []):
        if s["status"] != "supported":
            continue
        lows = [Version(p.version) for p in SpecifierSet(s["versions"]) if p.operator in (">=", "==")]
        highs = [p for p in SpecifierSet(s["versions"]) if p.operator in ("<", "<=")]
        if lows and not highs:
            best = lows[0]
    return best


def method_support(method: str, version: Version | None) -> MethodSupport:
    row = method_row(method)
    if row is None:
        return MethodSupport(method, "unknown-method", {}, {}, None, "knowledge/data/methods.toml")
    first = _first_current_support(row)
    if version is None:
        return MethodSupport(method, "no-data", {}, row, first, "")
    base = Version(version.base_version)
    for s in row.get("support", []):
        if base in SpecifierSet(s["versions"]):
            return MethodSupport(method, s["status"], s, row, first, s["source"])
    lows = [Version(p.version) for s in row.get("support", []) for p in SpecifierSet(s["versions"])
            if p.operator in (">=", "==")]
    if lows and base < min(lows):
        src = row["support"][0]["source"]
        return MethodSupport(method, "not-yet", {}, row, first, src)
    return MethodSupport(method, "no-data", {}, row, first, "")


def renamed_method(method: str, version: Version | None) -> tuple[str, dict[str, Any]] | None:
    """(new name, row) when vLLM rewrites this method name (deepseek_mtp -> mtp from 0.11.0)."""
    row = method_row(method)
    if not row or not row.get("renamed_to"):
        return None
    if version is not None and Version(version.base_version) < Version(row["renamed_from_version"]):
        return None
    return row["renamed_to"], row


def inference_rules() -> dict[str, Any]:
    return methods_data()["inference"]


# -- combination rules ---------------------------------------------------------------------------

def rules(rule_id: str) -> list[dict[str, Any]]:
    return [r for r in methods_data()["rule"] if r["id"] == rule_id]


def rule_ids() -> set[str]:
    return {r["id"] for r in methods_data()["rule"]}


def applicable_rules(rule_id: str, version: Version | None, method: str | None = None) -> list[dict[str, Any]]:
    """Rules with this id that apply to the version (all of them when the version is unknown) and method.
    Method-specific rules come first (they are more precise)."""
    found = []
    for r in rules(rule_id):
        if r.get("methods") and method not in r["methods"]:
            continue
        if version is not None and Version(version.base_version) not in SpecifierSet(r["versions"]):
            continue
        found.append(r)
    return sorted(found, key=lambda r: not r.get("methods"))


def ever_applies(rule_id: str, method: str | None = None) -> bool:
    return bool(applicable_rules(rule_id, None, method))


# -- method inference (mirrors SpeculativeConfig.__post_init__) ------------------------------------

def infer_method(model: str | None) -> tuple[str | None, str]:
    """The method vLLM picks when the config names none: (method, why)."""
    rules = inference_rules()
    if model is None:
        return None, "no method and no model"
    low = str(model).lower()
    if low in rules["ngram_models"]:
        return "ngram", f"inferred: model {model!r} means ngram"
    for pat in rules["name_patterns"]:
        if pat["contains"] in low:
            return pat["method"], f"inferred: the draft name contains {pat['contains']!r}"
    return "draft_model", ("inferred: no method given, so vLLM treats the model as a separate draft model "
                           "(unless the draft's config.json model_type is medusa, mlp_speculator or an MTP type)")


def detected_by_config(model: str | None, version: Version | None) -> tuple[str, dict[str, Any], bool] | None:
    """A drafter checkpoint that vLLM, given no method, runs by its config.json model_type rather than as a draft
    model (methods.toml [[inference.checkpoint_types]], judged by its name): (method, row, whether the release does
    so; True where the release is unknown), or None."""
    if not model:
        return None
    low = str(model).lower().rstrip("/")
    for row in inference_rules().get("checkpoint_types", []):
        if re.search(row["name_pattern"], low):
            applies = version is None or Version(version.base_version) in SpecifierSet(row["versions"])
            return row["method"], row, applies
    return None


def looks_like_ngram_typo(model: str | None) -> bool:
    """`[gram]`, `[ngrams]`, `n-gram`: a misspelled `[ngram]` rather than a model name."""
    if not model or not isinstance(model, str):
        return False
    low = model.lower().strip()
    if low in inference_rules()["ngram_models"]:
        return False
    if "/" in low or "\\" in low:
        return False
    core = low.strip("[]")
    bracketed = low.startswith("[") or low.endswith("]")
    close = difflib.SequenceMatcher(None, core, "ngram").ratio() >= 0.6
    return (bracketed and close) or (close and core.replace("-", "").replace("_", "") in ("ngram", "ngrams", "gram"))

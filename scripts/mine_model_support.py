#!/usr/bin/env python3
"""Mine which model architectures, and which speculative drafters per architecture, each vLLM release has.

Reads vLLM's release sources -- never imports or runs them: each file is parsed with `ast` -- from the same sources
as scripts/mine_catalogue.py (its source classes and downloader are reused here):

  --download DIR   fetch the release sdists DIR lacks from PyPI first (sha256 checked against the index)
  --sdists DIR     a folder of release sdists vllm-X.Y.Z.tar.gz (wheels for releases published without one)
  --git DIR        a vLLM git directory with its release tags (with --sdists: the sdists serve releases it lacks)

  python scripts/mine_model_support.py --sdists /work/cache/vllm-sdists [--download /work/cache/vllm-sdists]

Per release it extracts

  registry   architecture name -> (module, class) from vllm/model_executor/models/registry.py (`_TEXT_GENERATION_MODELS`,
             `_MULTIMODAL_MODELS`, `_SPECULATIVE_DECODING_MODELS`, ...) or, before the registry module existed,
             vllm/model_executor/models/__init__.py (`_MODELS`, `_GENERATION_MODELS`, ...), with its group
             (GROUPS: generative / multimodal / speculative / pooling / transformers);
  drafters   the drafter model modules (`*_mtp.py`, `*eagle*.py`, `*dflash*.py`, medusa, mlp_speculator, ...);
  mtp        the target -> MTP mapping of the speculative config's `hf_config_override` (vllm/config/speculative.py,
             earlier vllm/config/__init__.py or vllm/config.py): each `if` on the target's model_type / architectures[0] that rewrites the
             model_type to an MTP type and/or sets the MTP architecture; chains (deepseek_v3 -> deepseek_mtp ->
             DeepSeekMTPModel) are followed. Conditions it cannot read (a computed flag) are left out: a target
             matched only by such a condition is not in the table, and the module names stay the only record;
  eagle      the classes implementing `SupportsEagle3` / `SupportsEagle` (vllm/model_executor/models/interfaces.py),
             followed through the model files' class bases and imports, mapped to the registry's architectures;
             and the speculative config's EAGLE-3 target allow-list (`eagle3_target_supported`, or the older
             `"llama" not in ...model_type` test), a list of model_type substrings.

Writes src/spec_doctor/knowledge/data/model_support.json (or --out): every row as release ranges [[first, last], ...]
(several ranges: a gap) over the releases mined, with `source` = path@tag of its first release.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mine_catalogue import (  # noqa: E402 - the sibling script's sources and release order
    MIN_VERSION,
    ChainSource,
    GitSource,
    SdistSource,
    Source,
    download_sdists,
    ranges,
    vkey,
)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "src" / "spec_doctor" / "knowledge" / "data" / "model_support.json"
MODELS_DIR = "vllm/model_executor/models/"
REGISTRY_FILES = (MODELS_DIR + "registry.py", MODELS_DIR + "__init__.py")
SPEC_CONFIG_FILES = ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py")
INTERFACES = MODELS_DIR + "interfaces.py"

# Registry dict name -> group. Aggregates (`_VLLM_MODELS = {**a, **b}`), removed-model notes
# (`_PREVIOUSLY_SUPPORTED_MODELS`) and out-of-tree lists are not architectures a release loads itself.
GROUPS: list[tuple[re.Pattern[str], str | None]] = [(re.compile(p), g) for p, g in [
    (r"^_(?:VLLM|PREVIOUSLY_SUPPORTED|OOT_SUPPORTED)_MODELS$", None),
    (r"^_(?:TEXT_)?GENERATION_MODELS$|^_MODELS$|^_CONDITIONAL_GENERATION_MODELS$", "generative"),
    (r"^_MULTIMODAL_MODELS$|^_MULTIMODAL_\w*MODELS$", "multimodal"),
    (r"^_SPECULATIVE_DECODING_MODELS$", "speculative"),
    (r"^_TRANSFORMERS\w*_MODELS$", "transformers"),
    (r"^_(?:EMBEDDING|CROSS_ENCODER|REWARD|TOKEN_CLASSIFICATION|SEQUENCE_CLASSIFICATION|LATE_INTERACTION|"
     r"POOLING|CLASSIFICATION|SCORING)\w*_MODELS$", "pooling"),
    (r"^_\w+_MODELS$", "other"),
]]
# Drafter modules by kind (the module file's stem).
DRAFTER_KINDS: list[tuple[str, re.Pattern[str]]] = [(k, re.compile(p)) for k, p in [
    ("mtp", r"_mtp$|^mtp_"),
    ("eagle3", r"eagle3"),
    ("eagle", r"eagle(?!2_5_vl)"),  # eagle2_5_vl is NVIDIA's Eagle 2.5 VLM, a target, not a drafter
    ("dflash", r"dflash"),
    ("dspark", r"dspark"),
    ("medusa", r"^medusa$"),
    ("mlp_speculator", r"^mlp_speculator$"),
    ("arctic_speculator", r"^arctic_speculator$"),
]]
INTERFACE_NAMES = ("SupportsEagle3", "SupportsEagle")
TARGET_GROUPS = ("generative", "multimodal")  # what a drafter speculates for (the drafters subclass targets too)


def wanted(path: str) -> bool:
    return (path.startswith(MODELS_DIR) and path.count("/") == 3) or path in SPEC_CONFIG_FILES


def group_of(name: str) -> str | None:
    for rx, group in GROUPS:
        if rx.search(name):
            return group
    return None


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _strs(node: ast.AST | None) -> list[str]:
    """A string constant, or the string constants of a tuple/list/set literal (a parenthesised single string too)."""
    one = _str(node)
    if one is not None:
        return [one]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts if (s := _str(e)) is not None]
    return []


# --------------------------------------------------------------------------------------------------------------
# Registry
def parse_registry(text: str) -> dict[str, tuple[str, str, str]]:
    """architecture -> (group, module, class) from a registry module's `_..._MODELS = {...}` dicts."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    out: dict[str, tuple[str, str, str]] = {}
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        if target is None or not isinstance(value, ast.Dict):
            continue
        group = group_of(target)
        if group is None:
            continue
        for k, v in zip(value.keys, value.values, strict=True):
            arch = _str(k) if k is not None else None  # None: a `**other` unpacking
            if arch is None:
                continue
            parts = _strs(v) if isinstance(v, (ast.Tuple, ast.List)) else \
                [s for a in v.args if (s := _str(a)) is not None] if isinstance(v, ast.Call) else []
            if len(parts) >= 2:
                out.setdefault(arch, (group, parts[0], parts[1]))
    return out


# --------------------------------------------------------------------------------------------------------------
# MTP: the speculative config's hf_config_override
_MODEL_TYPE = re.compile(r"(?:^|\.)model_type$")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Subscript):
        return f"{_dotted(node.value)}[]"
    return ""


def _subject(node: ast.AST, arch_names: set[str]) -> str | None:
    """'model_type' / 'arch' for an expression that reads the target's model type / (first) architecture."""
    if isinstance(node, ast.NamedExpr):
        arch_names.add(node.target.id)
        node = node.value
    d = _dotted(node)
    if _MODEL_TYPE.search(d):
        return "model_type"
    if d.endswith("architectures[]") or d.endswith("architectures") or d in arch_names:
        return "arch"
    return None


def _conditions(test: ast.AST, arch_names: set[str]) -> list[tuple[str, str]] | None:
    """The (kind, value) pairs an `if` test matches the target by: ('model_type', 'deepseek_v3'), ('arch',
    'MiMoForCausalLM'), ('model_type~', 'exaone4_5') for a substring test. None when any part of it is unreadable
    (an `and`, a computed flag): such a branch is left out rather than read wrongly."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        out: list[tuple[str, str]] = []
        for v in test.values:
            got = _conditions(v, arch_names)
            if got is None:
                return None
            out += got
        return out
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq):
            for a, b in ((left, right), (right, left)):
                kind = _subject(a, arch_names)
                if kind and (s := _str(b)) is not None:
                    return [(kind, s)]
        if isinstance(op, ast.In):
            kind = _subject(right, arch_names)
            if kind and (s := _str(left)) is not None:  # "X" in model_type / "X" in architectures
                return [(kind + "~" if kind == "model_type" else kind, s)]
            kind = _subject(left, arch_names)
            if kind and (vals := _strs(right)):
                return [(kind, s) for s in vals]
    return None


def _branch_effect(body: list[ast.stmt]) -> tuple[str | None, list[str]]:
    """(MTP model_type it sets, MTP architectures it sets) in one branch's statements (nested ifs included)."""
    mtype, archs = None, []
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Assign) and any(_MODEL_TYPE.search(_dotted(t)) and _dotted(t).startswith("hf_config")
                                                for t in node.targets):
            mtype = mtype or _str(node.value)
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if k is not None and _str(k) == "architectures":
                    archs += [s for sub in ast.walk(v) if (s := _str(sub)) is not None]
        if isinstance(node, ast.Call) and _dotted(node.func).endswith(".update"):
            for kw in node.keywords:
                if kw.arg == "architectures":
                    archs += [s for sub in ast.walk(kw.value) if (s := _str(sub)) is not None]
    return mtype, list(dict.fromkeys(archs))


def _arch_maps(body: list[ast.stmt]) -> dict[str, str]:
    """Dict literals of architecture -> architecture inside a branch (`mtp_arch_maps = {...}`)."""
    out: dict[str, str] = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if (a := _str(k)) and (b := _str(v)) and a[:1].isupper() and b[:1].isupper():
                    out[a] = b
    return out


def _function(tree: ast.AST, name: str) -> ast.FunctionDef | None:
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)


def parse_mtp_override(text: str) -> dict[str, dict[str, Any]]:
    """'kind:value' -> {"mtp_model_type": ..., "draft_architectures": [...]} for every target the speculative
    config's hf_config_override rewrites to an MTP draft. Targets whose MTP type gets its architectures in a later
    branch (`if model_type == "deepseek_mtp": ...architectures...`) are chained to them."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    fn = _function(tree, "hf_config_override")
    if fn is None:
        return {}
    arch_names = {n.targets[0].id for n in ast.walk(fn) if isinstance(n, ast.Assign) and len(n.targets) == 1
                  and isinstance(n.targets[0], ast.Name) and _dotted(n.value).endswith("architectures[]")}
    branches: list[tuple[list[tuple[str, str]], str | None, list[str]]] = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.If):
            continue
        conds = _conditions(node.test, arch_names)
        if not conds:
            continue
        mtype, archs = _branch_effect(node.body)
        maps = _arch_maps(node.body)
        for cond in conds:
            if cond[0] == "arch" and cond[1] in maps:
                branches.append(([cond], mtype, [maps[cond[1]]]))
            else:
                branches.append(([cond], mtype, [a for a in archs if a not in maps] or archs))
    by_mtp_type: dict[str, list[str]] = {}
    for conds, mtype, archs in branches:
        for kind, value in conds:
            if kind == "model_type" and mtype is None and archs:
                by_mtp_type.setdefault(value, []).extend(a for a in archs if a not in by_mtp_type.get(value, []))
    out: dict[str, dict[str, Any]] = {}
    for conds, mtype, archs in branches:
        if mtype is None and not archs:
            continue
        for kind, value in conds:
            if kind == "model_type" and mtype is None and value.endswith("_mtp"):
                continue  # the MTP type's own branch (its architectures were chained above)
            got = archs or by_mtp_type.get(mtype or "", [])
            if value in got or not (mtype or "").endswith("_mtp") and not any("mtp" in a.lower() for a in got):
                continue  # the MTP architecture's own branch, or a rewrite to another drafter (an EAGLE head)
            row = out.setdefault(f"{kind}:{value}", {"mtp_model_type": mtype, "draft_architectures": []})
            row["mtp_model_type"] = row["mtp_model_type"] or mtype
            row["draft_architectures"] += [a for a in got if a not in row["draft_architectures"]]
    return out


# --------------------------------------------------------------------------------------------------------------
# EAGLE: the allow-list and the interfaces
_EAGLE3_REFUSAL = re.compile(r"^Eagle3 is only supported for", re.I)


def parse_eagle3_allowlist(text: str) -> list[str] | None:
    """The model_type substrings the speculative config accepts as EAGLE-3 targets, or None when it has no list
    (every target the model code supports is accepted)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        lists = {n.targets[0].id: _strs(n.value) for n in ast.walk(fn) if isinstance(n, ast.Assign)
                 and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.List)}
        for node in ast.walk(fn):
            if not isinstance(node, ast.If) or not _raises_eagle3_refusal(node.body):
                continue
            found: list[str] = []
            for sub in ast.walk(node.test):
                if isinstance(sub, ast.Compare) and len(sub.ops) == 1 and isinstance(sub.ops[0], ast.NotIn) \
                        and _MODEL_TYPE.search(_dotted(sub.comparators[0])) and (s := _str(sub.left)):
                    found.append(s)
                if isinstance(sub, ast.Name) and sub.id in lists:
                    found += lists[sub.id]
            if found:
                return list(dict.fromkeys(found))
    return None


def _raises_eagle3_refusal(body: list[ast.stmt]) -> bool:
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Raise) and node.exc is not None:
            for sub in ast.walk(node.exc):
                s = _str(sub)
                if s is not None and _EAGLE3_REFUSAL.search(s):
                    return True
                if isinstance(sub, ast.JoinedStr) and sub.values and (s := _str(sub.values[0])) \
                        and _EAGLE3_REFUSAL.search(s):
                    return True
    return False


@dataclass
class ModuleClasses:
    """One model module's classes: name -> base names, and its `from .x import Name` map."""

    bases: dict[str, list[str]] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # local name -> module stem it came from


def parse_classes(text: str) -> ModuleClasses:
    out = ModuleClasses()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            stem = node.module.rsplit(".", 1)[-1]
            for a in node.names:
                out.imports[a.asname or a.name] = stem
        elif isinstance(node, ast.ClassDef):
            names = []
            for b in node.bases:
                # as_seq_cls_model(LlamaForCausalLM): the wrapped class is a base
                for d in ([_dotted(a) for a in b.args] if isinstance(b, ast.Call) else [_dotted(b)]):
                    if d:
                        names.append(d.rsplit(".", 1)[-1])
            # SupportsEagle3 is a runtime-checkable Protocol: a class with its method passes supports_eagle3()
            # without naming the interface among its bases.
            if any(isinstance(b, ast.FunctionDef) and b.name == "set_aux_hidden_state_layers" for b in node.body):
                names.append("SupportsEagle3")
            out.bases[node.name] = names
    return out


def implements(modules: dict[str, ModuleClasses], stem: str, cls: str, interface: str) -> bool:
    """Whether class `cls` of module `stem` has `interface` among its bases, followed through the module's imports
    (a class of another model module) and, for a name no import explains, any module defining it."""
    seen: set[tuple[str, str]] = set()
    todo = [(stem, cls)]
    while todo:
        s, c = todo.pop()
        if (s, c) in seen:
            continue
        seen.add((s, c))
        mod = modules.get(s)
        if mod is None or c not in mod.bases:
            where = mod.imports.get(c) if mod is not None else None
            if where and where != s:
                todo.append((where, c))
            continue
        for b in mod.bases[c]:
            if b == interface:
                return True
            where = mod.imports.get(b)
            todo.append((where, b) if where and where in modules else (s, b))
    return False


# --------------------------------------------------------------------------------------------------------------
@dataclass
class Release:
    version: str
    registry: dict[str, tuple[str, str, str]]
    registry_path: str | None
    drafters: dict[str, str]  # module stem -> kind
    mtp: dict[str, dict[str, Any]]
    spec_config_path: str | None
    eagle3_allowlist: list[str] | None
    interfaces: dict[str, list[str]]  # interface -> architectures implementing it (empty: no such interface)


def drafter_kind(stem: str) -> str | None:
    return next((k for k, rx in DRAFTER_KINDS if rx.search(stem)), None)


def mine_release(version: str, files: Iterable[tuple[str, str]],
                 cache: dict[str, Any] | None = None) -> Release:
    """One release from its files (path, text): what parse_* read, cached by the file's text."""
    cache = {} if cache is None else cache

    def cached(kind: str, text: str, fn: Callable[[str], Any]) -> Any:
        key = kind + hashlib.sha1(text.encode()).hexdigest()
        if key not in cache:
            cache[key] = fn(text)
        return cache[key]

    texts = dict(files)
    reg_path = next((p for p in REGISTRY_FILES if p in texts and "_MODELS" in texts[p]), None)
    registry = cached("reg", texts[reg_path], parse_registry) if reg_path else {}
    spec_path = next((p for p in SPEC_CONFIG_FILES if p in texts and "class SpeculativeConfig" in texts[p]), None)
    mtp = cached("mtp", texts[spec_path], parse_mtp_override) if spec_path else {}
    allow = cached("e3", texts[spec_path], parse_eagle3_allowlist) if spec_path else None
    stems = {p[len(MODELS_DIR):-3]: t for p, t in texts.items() if p.startswith(MODELS_DIR)}
    drafters = {s: k for s in stems if (k := drafter_kind(s))}
    interfaces: dict[str, list[str]] = {}
    iface_text = texts.get(INTERFACES, "")
    present = [i for i in INTERFACE_NAMES if re.search(rf"^class {i}\b", iface_text, re.M)]
    if present:
        modules = {s: cached("cls", t, parse_classes) for s, t in stems.items()}
        for iface in present:
            interfaces[iface] = sorted(a for a, (group, mod, cls) in registry.items()
                                       if group in TARGET_GROUPS and implements(modules, mod, cls, iface))
    return Release(version, registry, reg_path, drafters, mtp, spec_path, allow, interfaces)


def mine(source: Source, min_version: str = MIN_VERSION, max_version: str | None = None,
         log: bool = True) -> list[Release]:
    versions = [v for v in source.versions() if vkey(v) >= vkey(min_version)
                and (max_version is None or vkey(v) <= vkey(max_version))]
    cache: dict[str, Any] = {}
    out = []
    for v in versions:
        t0 = time.time()
        rel = mine_release(v, source.files(v, wanted), cache)
        out.append(rel)
        if log:
            print(f"{v}: {len(rel.registry)} architectures, {len(rel.drafters)} drafter modules, "
                  f"{len(rel.mtp)} MTP targets, eagle3 {len(rel.interfaces.get('SupportsEagle3', []))} "
                  f"allow-list {rel.eagle3_allowlist} ({time.time() - t0:.1f}s)", file=sys.stderr)
    return out


# --------------------------------------------------------------------------------------------------------------
def _rows(present: dict[str, list[str]], versions: list[str], first_path: dict[str, str],
          extra: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """key -> {ranges, source (path@tag of its first release), **extra[key]}; keys sorted."""
    out = {}
    for key in sorted(present):
        vs = present[key]
        out[key] = {**(extra or {}).get(key, {}), "ranges": ranges(vs, versions),
                    "source": f"{first_path[key]}@v{vs[0]}"}
    return out


def build(releases: list[Release], origin: str, command: str, seconds: float) -> dict[str, Any]:
    versions = [r.version for r in releases]
    arch_in: dict[str, list[str]] = {}
    arch_path: dict[str, str] = {}
    arch_info: dict[str, dict[str, Any]] = {}
    drafter_in: dict[str, list[str]] = {}
    drafter_info: dict[str, dict[str, Any]] = {}
    mtp_in: dict[str, list[str]] = {}
    mtp_path: dict[str, str] = {}
    mtp_info: dict[str, dict[str, Any]] = {}
    iface_in: dict[str, dict[str, list[str]]] = {i: {} for i in INTERFACE_NAMES}
    iface_rel: dict[str, list[str]] = {}
    allow_in: dict[str, list[str]] = {}
    allow_path: dict[str, str] = {}
    for r in releases:
        for arch, (group, mod, cls) in r.registry.items():
            arch_in.setdefault(arch, []).append(r.version)
            arch_path.setdefault(arch, r.registry_path or "")
            arch_info[arch] = {"group": group, "module": mod, "class": cls}  # the newest release's
        for stem, kind in r.drafters.items():
            drafter_in.setdefault(stem, []).append(r.version)
            drafter_info[stem] = {"kind": kind}
        for key, row in r.mtp.items():
            mtp_in.setdefault(key, []).append(r.version)
            mtp_path.setdefault(key, r.spec_config_path or "")
            mtp_info[key] = dict(row)
        for iface, archs in r.interfaces.items():
            iface_rel.setdefault(iface, []).append(r.version)
            for a in archs:
                iface_in[iface].setdefault(a, []).append(r.version)
        if r.eagle3_allowlist is not None:
            key = ",".join(r.eagle3_allowlist)
            allow_in.setdefault(key, []).append(r.version)
            allow_path.setdefault(key, r.spec_config_path or "")
    drafter_paths = {s: f"{MODELS_DIR}{s}.py" for s in drafter_in}
    eagle: dict[str, Any] = {}
    for iface in INTERFACE_NAMES:
        rel = iface_rel.get(iface, [])
        eagle[iface] = {
            "interface": {"ranges": ranges(rel, versions), "source": f"{INTERFACES}@v{rel[0]}"} if rel else None,
            "targets": _rows(iface_in[iface], versions, {a: INTERFACES for a in iface_in[iface]}),
        }
    mtp_types = sorted({row["mtp_model_type"] for row in mtp_info.values() if row.get("mtp_model_type")})
    counts = {
        "releases": len(versions), "architectures": len(arch_in),
        "per_group": {g: sum(1 for a in arch_info.values() if a["group"] == g)
                      for g in sorted({a["group"] for a in arch_info.values()})},
        "drafter_modules": {k: sorted(s for s, i in drafter_info.items() if i["kind"] == k)
                            for k in sorted({i["kind"] for i in drafter_info.values()})},
        "mtp_targets": len(mtp_in), "mtp_model_types": mtp_types,
        "eagle3_targets": len(iface_in["SupportsEagle3"]), "eagle_targets": len(iface_in["SupportsEagle"]),
    }
    header = {
        "what": "vLLM model registry, drafter modules, MTP target mapping and EAGLE/EAGLE-3 target support per "
                "release, mined from vLLM's source (scripts/mine_model_support.py)",
        "releases": versions, "source_kind": origin, "command": command, "mine_seconds": round(seconds, 1),
        "counts": counts,
        "notes": [
            "ranges: [[first, last], ...] over `releases` (two ranges: a gap); source: path@tag of the first release",
            "architectures: the registry's groups (generative, multimodal, speculative, pooling, transformers); "
            "an architecture outside the registry may still load through the Transformers backend where the "
            "release has one (group transformers present)",
            "mtp: keys 'model_type:X' / 'arch:X' / 'model_type~X' (substring) as the speculative config's "
            "hf_config_override tests them; a target matched only by a test the miner cannot read (a computed "
            "flag, an `and`) is absent -- drafters.mtp lists the modules in every case",
            "eagle.SupportsEagle3.targets: registry architectures whose class implements the interface (followed "
            "through bases and imports); eagle3_allowlist: model_type substrings the speculative config accepts",
        ],
    }
    return {
        "header": header,
        "architectures": _rows(arch_in, versions, arch_path, arch_info),
        "drafters": _rows(drafter_in, versions, drafter_paths, drafter_info),
        "mtp": _rows(mtp_in, versions, mtp_path, mtp_info),
        "eagle": eagle,
        "eagle3_allowlist": [{"model_types": k.split(","), "ranges": ranges(vs, versions),
                              "source": f"{allow_path[k]}@v{vs[0]}"} for k, vs in allow_in.items()],
    }


def write(data: dict[str, Any], out: Path) -> None:
    """One row per line: small diffs when a release is added."""
    out.parent.mkdir(parents=True, exist_ok=True)
    parts = ["{\"header\": " + json.dumps(data["header"], ensure_ascii=False)]
    for section in ("architectures", "drafters", "mtp"):
        rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}"
                          for k, v in data[section].items())
        parts.append(f"\"{section}\": {{\n{rows}\n}}")
    parts.append("\"eagle\": " + json.dumps(data["eagle"], separators=(",", ":")))
    parts.append("\"eagle3_allowlist\": " + json.dumps(data["eagle3_allowlist"], separators=(",", ":")))
    out.write_text(",\n".join(parts) + "}\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--git", help="a vLLM git directory with its release tags")
    ap.add_argument("--sdists", help="a folder of release sdists (with --git: for releases the git tags lack)")
    ap.add_argument("--download", metavar="DIR", help="fetch the release sdists DIR lacks from PyPI first")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--min-version", default=MIN_VERSION)
    ap.add_argument("--max-version")
    args = ap.parse_args(argv)
    if args.download:
        got = download_sdists(args.download, args.min_version)
        print(f"downloaded {len(got)} sdists: {', '.join(got)}", file=sys.stderr)
        args.sdists = args.sdists or args.download
    if not args.sdists and not args.git:
        ap.error("give --git DIR or --sdists DIR")
    t0 = time.time()
    source: Source = (ChainSource(GitSource(args.git), SdistSource(args.sdists)) if args.git and args.sdists
                      else GitSource(args.git) if args.git else SdistSource(args.sdists))
    releases = mine(source, args.min_version, args.max_version)
    if not releases:
        print("no releases found in the source", file=sys.stderr)
        return 2
    command = "python scripts/mine_model_support.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in (("git", args.git), ("sdists", args.sdists),
                                                    ("max_version", args.max_version)) if v)
    data = build(releases, source.origin, command, time.time() - t0)
    write(data, Path(args.out))
    c = data["header"]["counts"]
    print(f"{c['releases']} releases {releases[0].version}..{releases[-1].version}: {c['architectures']} "
          f"architectures, {c['mtp_targets']} MTP targets, {c['eagle3_targets']} EAGLE-3 targets; "
          f"{time.time() - t0:.0f}s -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

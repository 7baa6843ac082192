#!/usr/bin/env python3
"""Mine, per vLLM release, the CUDA-graph support level of every V1 attention backend and the default cudagraph_mode.

Reads a vLLM git directory's release tags -- never imports or runs vLLM: each file is parsed with `ast`:

  python scripts/mine_cudagraph.py --git /path/to/vllm.git [--out src/spec_doctor/knowledge/data/cudagraph_support.json]

Per release (0.10.1, where `AttentionCGSupport` and `cudagraph_mode` appear, onwards) it extracts

  backends      backend name -> the `AttentionCGSupport` levels its metadata builder can report: the class attribute
                `cudagraph_support` / `_cudagraph_support`, or every level a `get_cudagraph_support` classmethod can
                return (two levels: the backend decides at start-up, e.g. FlashInfer's TRT-LLM decode path);
                a builder without its own attribute takes its base class's (followed by class name across the
                release's backend modules), else the base `AttentionMetadataBuilder` default. The name is the
                backend enum's (`AttentionBackendEnum` in .../backends/registry.py; releases before that registry
                take the module -> name map of the oldest release that has it);
  default_mode  the cudagraph_mode vLLM sets when the user sets none (the `if ...cudagraph_mode is None:` block of
                VllmConfig.__post_init__ in vllm/config/vllm.py, earlier vllm/config/__init__.py): the first
                `CUDAGraphMode.X` assigned there.

Writes every row as release ranges [[first, last], ...] over the releases mined, with `source` = path@tag:line of
its first release. Consumed by spec_doctor.knowledge.cudagraph.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mine_catalogue import GitSource, ranges, vkey  # noqa: E402 - the sibling script's git reader and release order

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src/spec_doctor/knowledge/data/cudagraph_support.json"
FIRST = "0.10.1"  # AttentionCGSupport (vllm/v1/attention/backends/utils.py) and CUDAGraphMode first appear here
BACKENDS_DIR = "vllm/v1/attention/backends/"
REGISTRIES = ("vllm/v1/attention/backends/registry.py", "vllm/attention/backends/registry.py")
# where backend, builder and base classes live (the MLA common classes moved to model_executor/layers in 0.15)
SEARCHED = ("vllm/v1/attention/", "vllm/model_executor/layers/attention/", "vllm/attention/")
SUPPORT_ATTRS = ("cudagraph_support", "_cudagraph_support")
LEVELS = ("NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS")


def _levels(node: ast.AST) -> list[str]:
    """Every `AttentionCGSupport.X` named in `node`, weakest first."""
    found = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
             and n.value.id == "AttentionCGSupport" and n.attr in LEVELS}
    return sorted(found, key=LEVELS.index)


def _registry(src: str) -> dict[tuple[str, str], str]:
    """(module, class) -> enum name from the backend registry's `NAME = "vllm.v1...module.Class"` members."""
    out: dict[tuple[str, str], str] = {}
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.ClassDef) and node.name.endswith("Enum"):
            for b in node.body:
                if isinstance(b, ast.Assign) and isinstance(b.targets[0], ast.Name):
                    val = b.value
                    text = val.value if isinstance(val, ast.Constant) else "".join(
                        p.value for p in ast.walk(val) if isinstance(p, ast.Constant) and isinstance(p.value, str))
                    if isinstance(text, str) and text.startswith("vllm.") and "." in text:
                        mod, _, cls = text.rpartition(".")
                        out[(mod, cls)] = b.targets[0].id
    return out


def _base_names(c: ast.ClassDef) -> list[str]:
    out = []
    for b in c.bases:
        node = b.value if isinstance(b, ast.Subscript) else b  # Generic[...] bases
        if isinstance(node, ast.Name):
            out.append(node.id)
        elif isinstance(node, ast.Attribute):
            out.append(node.attr)
    return out


def mine_release(src: GitSource, version: str, fallback_names: dict[str, str]) -> tuple[dict, dict, dict | None]:
    tag = src.tags[version]
    registry: dict[tuple[str, str], str] = {}
    for p in REGISTRIES:
        text = src.read(version, p)
        if text:
            registry = _registry(text)
            break
    classes: dict[str, tuple[ast.ClassDef, str]] = {}  # class name -> (node, path)
    found = sorted(src.files(version, want=lambda p: p.startswith(SEARCHED)),
                   key=lambda pt: next(i for i, d in enumerate(SEARCHED) if pt[0].startswith(d)))  # V1's first
    for path, text in found:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, (node, path))

    def own(c: ast.ClassDef) -> tuple[list[str], int] | None:
        for b in c.body:
            target = None
            if isinstance(b, ast.Assign) and isinstance(b.targets[0], ast.Name) and b.targets[0].id in SUPPORT_ATTRS:
                target = b.value
            elif isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name) and b.target.id in SUPPORT_ATTRS \
                    and b.value is not None:
                target = b.value
            elif isinstance(b, ast.FunctionDef) and b.name == "get_cudagraph_support":
                target = b
            if target is not None and _levels(target):
                return _levels(target), b.lineno
        return None

    def resolve(name: str, seen: frozenset = frozenset()) -> tuple[list[str], str] | None:
        if name in seen or name not in classes:
            return None
        c, path = classes[name]
        got = own(c)
        if got is not None:
            return got[0], f"{path}@{tag}:{got[1]}"
        for base in _base_names(c):
            r = resolve(base, seen | {name})
            if r is not None:
                return r
        return None

    def builder_of(backend_cls: str) -> str | None:
        c = classes.get(backend_cls, (None, ""))[0]
        if c is None:
            return None
        for b in c.body:
            if isinstance(b, ast.FunctionDef) and b.name == "get_builder_cls":
                for r in ast.walk(b):
                    if isinstance(r, ast.Return) and isinstance(r.value, ast.Name):
                        return r.value.id
        for base in _base_names(c):
            got = builder_of(base)
            if got:
                return got
        return None

    names = {f"{mod.replace('.', '/')}.py": (cls, name) for (mod, cls), name in registry.items()}
    backends: dict[str, dict] = {}
    for path, (cls, name) in sorted(names.items()):
        if not path.startswith(BACKENDS_DIR):
            continue
        builder = builder_of(cls)
        r = resolve(builder) if builder else None
        if r is not None:
            backends[name] = {"levels": r[0], "source": r[1], "builder": builder}
    if not registry:  # before the registry: the module's *Backend class, named as the oldest registry names it
        for cname, (c, path) in classes.items():
            if not cname.endswith("Backend") or path not in fallback_names:
                continue
            builder = builder_of(cname)
            r = resolve(builder) if builder else None
            if r is not None:
                backends.setdefault(fallback_names[path], {"levels": r[0], "source": r[1], "builder": builder})
    module_names = {path: name for path, (_cls, name) in names.items()}
    return backends, module_names, _default_mode(src, version)


def _default_mode(src: GitSource, version: str) -> dict | None:
    """The CUDAGraphMode assigned first under `if self.compilation_config.cudagraph_mode is None:`."""
    for path in ("vllm/config/vllm.py", "vllm/config/__init__.py"):
        text = src.read(version, path)
        if not text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and \
                    isinstance(node.test.ops[0], ast.Is) and "cudagraph_mode" in ast.unparse(node.test.left):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Attribute) and \
                            isinstance(sub.value.value, ast.Name) and sub.value.value.id == "CUDAGraphMode":
                        return {"mode": sub.value.attr, "source": f"{path}@{src.tags[version]}:{sub.lineno}"}
        got = _optimization_levels(ast.parse(text))
        if got is not None:
            levels, default, line = got
            return {"mode": levels[default][0], "levels": {k: v[0] for k, v in sorted(levels.items())},
                    "default_level": default, "source": f"{path}@{src.tags[version]}:{levels[default][1]} "
                    f"(optimization level {default}, the default at line {line})"}
    return None


def _optimization_levels(tree: ast.Module) -> tuple[dict[str, tuple[str, int]], str, int] | None:
    """0.12+: the module-level `OPTIMIZATION_LEVEL_0N = {"compilation_config": {"cudagraph_mode": CUDAGraphMode.X}}`
    dicts and VllmConfig's `optimization_level: OptimizationLevel = OptimizationLevel.ON` default."""
    levels: dict[str, tuple[str, int]] = {}
    default = None
    line = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and \
                node.targets[0].id.startswith("OPTIMIZATION_LEVEL_0"):
            for k, v in ((k, v) for d in ast.walk(node.value) if isinstance(d, ast.Dict)
                         for k, v in zip(d.keys, d.values, strict=True)):
                if isinstance(k, ast.Constant) and k.value == "cudagraph_mode" and isinstance(v, ast.Attribute):
                    levels["O" + node.targets[0].id[-1]] = (v.attr, v.lineno)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                node.target.id == "optimization_level" and isinstance(node.value, ast.Attribute):
            default, line = node.value.attr, node.lineno
    if default is None or default not in levels:
        return None
    return levels, default, line


def _rows(per_release: dict[str, Any], releases: list[str]) -> list[dict]:
    """{version: {"levels"/"mode", "source"}} -> rows of equal value with their release ranges."""
    groups: dict[str, list[str]] = {}
    first: dict[str, dict] = {}
    for v in releases:
        row = per_release.get(v)
        if row is None:
            continue
        key = json.dumps({k: row[k] for k in row if k not in ("source", "builder")}, sort_keys=True)
        groups.setdefault(key, []).append(v)
        first.setdefault(key, row)
    out = []
    for key, present in groups.items():
        row = dict(json.loads(key))
        row["ranges"] = ranges(present, releases)
        row["source"] = first[key]["source"]
        out.append(row)
    return sorted(out, key=lambda r: vkey(r["ranges"][0][0]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--git", required=True, help="a vLLM git directory with its release tags")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    src = GitSource(args.git)
    releases = [v for v in src.versions() if vkey(v) >= vkey(FIRST)]
    t0 = time.time()
    per_backend: dict[str, dict[str, dict]] = {}
    defaults: dict[str, dict] = {}
    fallback: dict[str, str] = {}
    # the oldest registry's module -> name map serves the releases before it (read newest-first once)
    for v in releases:
        for p in REGISTRIES:
            text = src.read(v, p)
            if text:
                fallback = {f"{m.replace('.', '/')}.py": n for (m, _c), n in _registry(text).items()}
                break
        if fallback:
            break
    for v in releases:
        backends, _names, default = mine_release(src, v, fallback)
        for name, row in backends.items():
            per_backend.setdefault(name, {})[v] = row
        if default:
            defaults[v] = default
        print(f"{v}: {len(backends)} backends, default {default and default['mode']}", file=sys.stderr)
    doc = {
        "header": {
            "about": "CUDA-graph support of vLLM's V1 attention backends (AttentionCGSupport) and the default "
                     "cudagraph_mode, per release; mined from vLLM's source with ast (never run).",
            "made_by": "scripts/mine_cudagraph.py",
            "source": src.origin,
            "made_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "levels": "weakest first: " + ", ".join(LEVELS) + " (vllm/v1/attention/backends/utils.py "
                      "AttentionCGSupport; spec decode needs UNIFORM_BATCH or ALWAYS for full decode graphs)",
            "fields": {"levels": "every level the builder can report; two: it depends on the run (see "
                                 "knowledge/data/cudagraph.toml [[conditional]])",
                       "ranges": "runs of releases with this value", "source": "path@tag:line of the first"},
            "releases": releases,
            "seconds": round(time.time() - t0, 1),
        },
        "backends": {name: _rows(rows, releases) for name, rows in sorted(per_backend.items())},
        "default_mode": _rows(defaults, releases),
    }
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}: {len(doc['backends'])} backends over {len(releases)} releases", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Turn what the user gave (a command line, a vLLM YAML config, the config lines of a log) into one
normalized DeploymentConfig, keeping the source of every field.

Log payloads are Python reprs (`non-default args: {...}`, `args: Namespace(...)`, engine-config
`model='...', speculative_config=SpeculativeConfig(method='eagle3', ...), ...`). They are parsed with
`ast.literal_eval` per value (never `eval`), tolerating lines cut off mid-value.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig
from spec_doctor.knowledge.specdata import infer_method, legacy_spec_flags
from spec_doctor.parsers.cmdline import MALFORMED_KEY, ParsedCommand, coerce, parse_json_value

_SPEC_INT_KEYS = ("num_speculative_tokens", "draft_tensor_parallel_size", "disable_by_batch_size",
                  "prompt_lookup_max", "prompt_lookup_min", "max_model_len")


# -- tolerant repr parsing ------------------------------------------------------------------------

def outside_quotes(text: str, start: int = 0) -> Iterable[tuple[int, str]]:
    """(index, char) of the characters of a Python repr that are not inside a string literal."""
    quote: str | None = None
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        else:
            yield i, ch
        i += 1


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside quotes and brackets. An unterminated tail is returned as the last item."""
    items: list[str] = []
    depth = 0
    start = 0
    for i, ch in outside_quotes(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [s.strip() for s in items if s.strip()]


def _closing(text: str, open_at: int) -> int:
    """Index of the bracket closing the one at open_at, or len(text) when the text is cut off."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack: list[str] = []
    for i, ch in outside_quotes(text, open_at):
        if ch in pairs:
            stack.append(pairs[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
            if not stack:
                return i
    return len(text)


def parse_repr_value(text: str) -> Any:
    """A Python repr value: literals via ast.literal_eval, `Name(k=v, ...)` -> dict with '__type__',
    anything else (enum reprs, cut-off values) -> the text."""
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        pass
    head, paren, _ = text.partition("(")
    if paren and head.replace(".", "").replace("_", "").isalnum() and head[:1].isalpha():
        inner_end = _closing(text, len(head))
        fields = parse_kwargs(text[len(head) + 1:inner_end])
        fields["__type__"] = head
        return fields
    if text.startswith("{"):
        return parse_dict_repr(text)
    return text


def parse_kwargs(text: str) -> dict[str, Any]:
    """`a=1, b='x', c=Foo(d=2)` -> dict. Items without `=` (a cut-off tail) are dropped."""
    out: dict[str, Any] = {}
    for item in _split_top(text):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            continue
        out[key] = parse_repr_value(value)
    return out


def parse_dict_repr(text: str) -> dict[str, Any]:
    """`{'model': 'x', 'speculative_config': {...}}` (possibly cut off) -> dict."""
    text = text.strip()
    try:
        value = ast.literal_eval(text)
        if isinstance(value, dict):
            return value
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        pass
    end = _closing(text, 0) if text.startswith("{") else len(text)
    body = text[1:end] if text.startswith("{") else text
    out: dict[str, Any] = {}
    items = _split_top(body)
    if end >= len(text) and items:
        items = items[:-1]  # the dump was cut off: its last value is incomplete ('/home/user/ai...)
    for item in items:
        key, colon, value = item.partition(":")
        if not colon:
            continue
        try:
            k = ast.literal_eval(key.strip())
        except (ValueError, SyntaxError):
            continue
        if isinstance(k, str):
            out[k] = parse_repr_value(value)
    return out


def parse_log_payload(text: str) -> dict[str, Any]:
    """Any of the log's config payloads -> dict of Python argument names to values."""
    t = text.strip()
    if t.startswith("args:"):
        t = t[5:].strip()
    if t.startswith("non-default args:"):
        t = t[len("non-default args:"):].strip()
    if t.startswith("{"):
        return parse_dict_repr(t)
    if t.startswith("Namespace("):
        end = _closing(t, len("Namespace"))
        body = t[len("Namespace("):end]
        if end >= len(t):  # cut off: drop the incomplete last value
            commas = [i for i, ch in outside_quotes(body) if ch == ","]
            body = body[:commas[-1]] if commas else ""
        return parse_kwargs(body)
    if "with config:" in t:
        t = t.split("with config:", 1)[1]
    return parse_kwargs(t)


# -- building the DeploymentConfig -----------------------------------------------------------------

def _to_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):  # None, "five", NaN, Infinity
        return None


def build_spec(raw: dict[str, Any], *, source: str, legacy: bool) -> SpecConfig:
    raw = dict(raw)
    method = raw.get("method")
    model = raw.get("model")
    origin = "explicit"
    if isinstance(method, str) and method.strip():
        method = method.strip().lower()
    else:
        method, origin = infer_method(model if isinstance(model, str) else None)
    spec = SpecConfig(method=method, model=model if isinstance(model, str) else None, raw=raw, source=source,
                      legacy=legacy, method_origin=origin)
    spec.num_speculative_tokens = _to_int(raw.get("num_speculative_tokens"))
    spec.draft_tensor_parallel_size = _to_int(raw.get("draft_tensor_parallel_size"))
    spec.disable_by_batch_size = _to_int(raw.get("disable_by_batch_size"))
    spec.prompt_lookup_max = _to_int(raw.get("prompt_lookup_max"))
    spec.prompt_lookup_min = _to_int(raw.get("prompt_lookup_min"))
    spec.max_model_len = _to_int(raw.get("max_model_len"))
    q = raw.get("quantization")
    spec.quantization = q if isinstance(q, str) else None
    ee = raw.get("enforce_eager")
    spec.enforce_eager = ee if isinstance(ee, bool) else None
    return spec


def normalize(args: dict[str, Any], *, origin: str, source: str, written: dict[str, str] | None = None,
              program: str | None = None, env: dict[str, str] | None = None, raw_text: str | None = None,
              drop_unset: bool = False) -> DeploymentConfig:
    """Build a DeploymentConfig from argument names -> values.

    drop_unset: the args are a full dump (argparse Namespace) where None/False means "not given".
    """
    written = dict(written or {})
    if drop_unset:
        args = {k: v for k, v in args.items() if v is not None and v is not False}
    cfg = DeploymentConfig(origin=origin, program=program, raw_text=raw_text, env=dict(env or {}),
                           written=written)
    cfg.args = dict(args)
    cfg.sources = {k: source for k in args}
    model = args.get("model")
    cfg.model = model if isinstance(model, str) else None

    legacy = legacy_spec_flags()
    legacy_raw: dict[str, Any] = {}
    for dest, info in legacy.items():
        if dest in args:
            cfg.legacy_flags.append((written.get(dest, info.name), source))
            assert info.spec_key is not None  # legacy_spec_flags() keeps only flags with a spec key
            legacy_raw[info.spec_key] = args[dest]
    if "use_v2_block_manager" in args and not drop_unset:
        cfg.legacy_flags.append((written.get("use_v2_block_manager", "--use-v2-block-manager"), source))

    modern = args.get("speculative_config")
    if isinstance(modern, str):
        modern = parse_json_value("--speculative-config", modern)
    modern_raw: dict[str, Any] = dict(modern) if isinstance(modern, dict) else {}
    modern_raw.pop("__type__", None)
    for key, value in list(cfg.args.items()):
        if isinstance(value, dict) and MALFORMED_KEY in value:
            cfg.malformed[key] = str(value[MALFORMED_KEY])
            cfg.args[key] = {k: v for k, v in value.items() if k != MALFORMED_KEY}
    modern_raw.pop(MALFORMED_KEY, None)
    for flag_dest, key in (("spec_method", "method"), ("spec_model", "model"), ("spec_tokens",
                                                                                  "num_speculative_tokens")):
        if args.get(flag_dest) is not None:
            modern_raw.setdefault(key, args[flag_dest])

    if modern_raw:
        raw = dict(modern_raw)
        for k, v in legacy_raw.items():  # legacy flags given alongside: vLLM 0.8.2 merged, later rejected
            raw.setdefault(k, v)
        cfg.speculative = build_spec(raw, source=source, legacy=False)
    elif legacy_raw.get("model") is not None or legacy_raw.get("num_speculative_tokens") is not None:
        cfg.speculative = build_spec(legacy_raw, source=source, legacy=True)
    for key in _SPEC_INT_KEYS:
        if cfg.speculative and key in cfg.speculative.raw and isinstance(cfg.speculative.raw[key], str):
            cfg.speculative.raw[key] = coerce(cfg.speculative.raw[key])

    gen = args.get("override_generation_config")
    if isinstance(gen, str):
        try:
            gen = parse_json_value("--override-generation-config", gen)
        except Exception:  # a log repr we cannot read: not the user's input to reject
            gen = None
    if isinstance(gen, dict) and isinstance(gen.get("temperature"), (int, float)):
        cfg.temperature = float(gen["temperature"])
        cfg.sources["temperature"] = f"{source} (override_generation_config)"
    return cfg


def from_parsed(pc: ParsedCommand, *, origin: str = "cmd", source: str = "--cmd") -> DeploymentConfig:
    return normalize(pc.args, origin=origin, source=source, written=pc.written, program=pc.program,
                     env=pc.env, raw_text=pc.text)


def _engine_spec(value: Any, source: str) -> SpecConfig | None:
    """`SpeculativeConfig(method='eagle3', model='...', num_spec_tokens=3)` (0.8.3+) or
    `SpeculativeConfig(draft_model='...', num_spec_tokens=5)` (<=0.8.2) -> SpecConfig."""
    if not isinstance(value, dict):
        return None
    raw: dict[str, Any] = {}
    if value.get("method"):
        raw["method"] = value["method"]
    model = value.get("model", value.get("draft_model"))
    if model is not None:
        raw["model"] = model
    if value.get("num_spec_tokens") is not None:
        raw["num_speculative_tokens"] = value["num_spec_tokens"]
    spec = build_spec(raw, source=source, legacy="draft_model" in value)
    if "method" in raw:
        spec.method_origin = "engine"
    return spec


def from_log_lines(lines: Iterable[dict[str, Any]]) -> DeploymentConfig | None:
    """From `logs.config_lines`: the first argument dump (non-default args / Namespace), completed by the
    first engine-config line (which shows the method vLLM actually resolved)."""
    cfg: DeploymentConfig | None = None
    engine: tuple[dict[str, Any], str] | None = None
    base: tuple[dict[str, Any], str, bool] | None = None  # (args, source, is a full Namespace dump)
    fragments: dict[str, tuple[Any, str]] = {}
    for line in lines:
        if not isinstance(line, dict) or not isinstance(line.get("text"), str):
            continue
        text, src, kind = line["text"], str(line.get("source") or "log"), line.get("kind")
        payload = parse_log_payload(text)
        if not payload:
            continue
        if kind == "engine-config" or "speculative_config" in payload and isinstance(
                payload.get("speculative_config"), dict) and payload["speculative_config"].get("__type__"):
            if engine is None:
                engine = (payload, src)
        elif kind == "args-fragment":
            # A piece of a Namespace dump that lost its header (wrapped or split when pasted): it only
            # fills in what the dump itself does not show.
            for key, value in payload.items():
                fragments.setdefault(key, (value, src))
        elif base is None:
            base = (payload, src, text.lstrip().startswith(("Namespace(", "args: Namespace(")))
    if base is not None or fragments:
        args, src, full = base if base is not None else ({}, next(iter(fragments.values()))[1], True)
        args = dict(args)
        added = {k: v for k, v in fragments.items() if k not in args}
        args.update({k: v for k, (v, _) in added.items()})
        cfg = normalize(args, origin="log", source=src, drop_unset=full)
        cfg.sources.update({k: s for k, (_, s) in added.items() if k in cfg.sources})
        cfg.legacy_flags = [(w, cfg.sources.get(w.lstrip("-").replace("-", "_"), s)) for w, s in cfg.legacy_flags]
        if cfg.speculative is not None and cfg.speculative.legacy:
            cfg.speculative.source = cfg.sources.get("speculative_model", cfg.speculative.source)
    if engine is not None:
        payload, src = engine
        spec_value = payload.get("speculative_config")
        engine_spec = _engine_spec(spec_value, src)
        if cfg is None:
            fields = {k: v for k, v in payload.items() if k != "speculative_config" and not isinstance(v, dict)}
            cfg = normalize(fields, origin="log", source=src)
            cfg.speculative = engine_spec
        elif engine_spec is not None:
            if cfg.speculative is None:
                cfg.speculative = engine_spec
            elif cfg.speculative.method_origin != "explicit" and engine_spec.method_origin == "engine":
                cfg.speculative.method = engine_spec.method
                cfg.speculative.method_origin = "engine"
        for key in ("enforce_eager", "enable_chunked_prefill", "enable_prefix_caching"):
            if key in payload and key not in cfg.args and isinstance(payload[key], bool):
                cfg.args[key] = payload[key]
                cfg.sources[key] = src
    return cfg


_COMPARED = ("model", "tensor_parallel_size", "pipeline_parallel_size", "max_num_seqs", "max_model_len",
             "gpu_memory_utilization", "enforce_eager", "max_num_batched_tokens")


def compare(given: DeploymentConfig, log: DeploymentConfig) -> list[dict[str, Any]]:
    """Fields where --cmd/--config and the log disagree (both sides known)."""
    out: list[dict[str, Any]] = []

    def add(key: str, a: Any, b: Any, src: str) -> None:
        if a is None or b is None or str(a) == str(b):
            return
        if "$" in str(a) or "$" in str(b):
            return  # an unexpanded shell variable ($MODELS/target) cannot be compared
        if key.endswith("model") and str(a).rstrip("/").rsplit("/", 1)[-1] == str(b).rstrip("/").rsplit("/", 1)[-1]:
            return  # the same model by another path (relative vs absolute, mounted elsewhere)
        out.append({"key": key, "given": a, "log": b, "log_source": src})

    for key in _COMPARED:
        if key in given.args and key in log.args:
            add(key, given.args[key], log.args[key], log.source_of(key))
    gs, ls = given.speculative, log.speculative
    if (gs is None) != (ls is None):
        out.append({"key": "speculative_config", "given": "set" if gs else "not set",
                    "log": "set" if ls else "not set", "log_source": ls.source if ls else log.origin})
    elif gs and ls:
        add("speculative.model", gs.model, ls.model, ls.source)
        add("speculative.num_speculative_tokens", gs.num_speculative_tokens, ls.num_speculative_tokens, ls.source)
        if gs.method_origin == "explicit" or ls.method_origin in ("explicit", "engine"):
            add("speculative.method", gs.method, ls.method, ls.source)
    return out

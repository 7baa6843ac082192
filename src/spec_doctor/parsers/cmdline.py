"""Parse a vLLM launch command line the way vLLM's own parser would, without importing vLLM.

Handles `vllm serve MODEL ...`, `python -m vllm.entrypoints.openai.api_server ...`, docker `vllm-openai`
images (the words after the image are vLLM's; `-e K=V` its environment), the same behind a launcher (`env`,
`sudo`, `nohup ... &`, `uv run`, `srun`, `ray job submit --`, `docker exec`, `kubectl exec --`, `bash -c "..."`,
redirections dropped), leading `VAR=value` environment assignments, shell quoting, `\\` line continuations (also the
pasted-on-one-line ` \\ ` form), `--flag=value`, `--flag value`, `--no-flag`, underscores in flag names
(vLLM's FlexibleArgumentParser turns `--max_num_seqs` into `--max-num-seqs`), dotted JSON keys
(`--speculative-config.num_speculative_tokens 5`) and short aliases (`-tp 4`, `-O3`, `-sc '{...}'`).

The result is plain data (`ParsedCommand`); turning it into a DeploymentConfig is confignorm's job.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from spec_doctor.engine.facts import InputError
from spec_doctor.knowledge.specdata import boolean_flags, canonical_flag, json_flags

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")
_API_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
# Short options that are followed directly by their value (-O3).
_ATTACHED_SHORT = {"-O": "--compilation-config"}


@dataclass
class ParsedCommand:
    """One parsed vLLM command line."""

    program: str  # "vllm serve" | "python -m vllm.entrypoints.openai.api_server" | "flags only" | ...
    model: str | None = None
    # Normalized name (underscores, as vLLM's Python attribute) -> value (typed: int/float/bool/dict/str).
    args: dict[str, Any] = field(default_factory=dict)
    # Normalized name -> the flag as the user wrote it ("--speculative_model", "-tp").
    written: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # leading VAR=value assignments
    positional: list[str] = field(default_factory=list)  # extra positional words (unexpected)
    text: str = ""


def _strip_continuations(text: str) -> str:
    """Join `\\`-newline continuations and drop pasted-inline ` \\ ` separators (outside quotes)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    out: list[str] = []
    quote: str | None = None
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote:
            out.append(ch)
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"' and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            out.append(ch)
        elif ch == "\\":
            nxt = text[i + 1] if i + 1 < n else ""
            prev = text[i - 1] if i > 0 else " "
            if nxt == "\n":
                out.append(" ")
                i += 2
                continue
            if nxt in ("", " ", "\t") and prev in (" ", "\t", "\n"):
                out.append(" ")  # `a \ --b` pasted on one line: the backslash was a lost line break
            else:
                out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def tokenize(text: str) -> list[str]:
    """Shell-split a command line. Raises InputError for unbalanced quotes."""
    cleaned = _strip_continuations(text)
    # Comments after the command (`# with spec`) are not arguments.
    try:
        lexer = shlex.shlex(cleaned, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        return list(lexer)
    except ValueError as exc:
        raise InputError(f"--cmd: cannot split the command line ({exc}; check the quotes)") from None


def _segments(tokens: list[str]) -> list[list[str]]:
    """Split on shell operators (;, &&, ||, |) into simple commands."""
    segs: list[list[str]] = [[]]
    for tok in tokens:
        if tok and set(tok) <= set(";&|"):
            segs.append([])
        else:
            segs[-1].append(tok)
    return [s for s in segs if s]


_VLLM_SUBCOMMANDS = {"bench", "run-batch", "chat", "complete"}  # `vllm X ...` besides serve that take engine flags
_IMAGE = re.compile(r"vllm-openai|(^|/)vllm(-[a-z]+)?(:|$)")
_CONTAINER_RUN = {"docker", "podman", "nerdctl"}
# `docker run` options that take no value (docs.docker.com/reference/cli/docker/container/run): the word after one
# may be the image; after any other option it is that option's value.
_CONTAINER_BOOL_OPTS = {"-d", "--detach", "--rm", "-i", "--interactive", "-t", "--tty", "-it", "-ti", "-dit", "-itd",
                        "-id", "-td", "--privileged", "--init", "-P", "--publish-all", "--read-only",
                        "--no-healthcheck", "--oom-kill-disable", "--replace", "--pull-always"}
# Shell redirections a launcher line carries (`> vllm.log 2>&1`, `&>out`, `<in`): how it was started, not arguments.
_REDIRECT = re.compile(r"^\d*(?:[<>]{1,2}|&>>?)$")
_REDIRECT_ATTACHED = re.compile(r"^\d*(?:[<>]{1,2}|&>>?)[^<>&]")


class NotVllmCommand(InputError):
    """--cmd holds no vLLM invocation at all (a recipe runner, another program): a note, not a stop."""


def _without_redirections(tokens: list[str]) -> list[str]:
    """Drop `> file`, `2>&1`, `&>file`, `<in` from a shell-split command line."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if _REDIRECT.match(tok):
            if i + 1 < len(tokens) and tokens[i + 1] == "&":  # `2>&1`, which shlex splits into 2> & 1
                i += 3 if i + 2 < len(tokens) and tokens[i + 2].isdigit() else 2
            else:
                i += 2
            continue
        if _REDIRECT_ATTACHED.match(tok):
            i += 1
            continue
        out.append(tok)
        i += 1
    return out


def _positional_model(argv: list[str]) -> tuple[str | None, list[str]]:
    if argv and not argv[0].startswith("-") and not _ELIDED.match(argv[0]):
        return argv[0], argv[1:]
    return None, argv


def _direct(rest: list[str], env: dict[str, str],
            depth: int) -> tuple[str, dict[str, str], list[str], str | None] | None:
    """The vLLM invocation that starts at rest[0] (`vllm serve`, `python -m vllm...`, a vLLM container), else None."""
    head = rest[0].rsplit("/", 1)[-1]
    if head == "vllm" and len(rest) >= 2 and rest[1] == "serve":
        model, argv = _positional_model(rest[2:])
        return "vllm serve", env, argv, model
    if head == "vllm" and len(rest) >= 2 and rest[1] in _VLLM_SUBCOMMANDS:
        # `vllm bench latency|throughput ...` (engine arguments in-process), `vllm bench serve` (a client with
        # --model), `vllm run-batch ...`: the flags are read the same way.
        words = 3 if rest[1] == "bench" and len(rest) >= 3 and not rest[2].startswith("-") else 2
        return "vllm " + " ".join(rest[1:words]), env, rest[words:], None
    if re.match(r"^python(\d+(\.\d+)*)?$", head):
        if len(rest) >= 3 and rest[1].endswith(".py") and any(t.startswith("--") for t in rest[2:]):
            # A script (vLLM's examples/benchmarks, or the user's) that takes engine arguments on its command line.
            return f"python {rest[1]}", env, rest[2:], None
        for j, tok in enumerate(rest):
            if tok == "-m" and j + 1 < len(rest):
                mod = rest[j + 1]
                if mod in _API_MODULES:
                    return f"python -m {mod}", env, rest[j + 2:], None
                if mod == "vllm.entrypoints.cli.main" and j + 2 < len(rest) and rest[j + 2] == "serve":
                    model, argv = _positional_model(rest[j + 3:])
                    return "vllm serve", env, argv, model
                break
        return None
    if head in _CONTAINER_RUN:
        return _container(rest, env, depth)
    return None


def _container(rest: list[str], env: dict[str, str],
               depth: int) -> tuple[str, dict[str, str], list[str], str | None] | None:
    """`docker run [opts] vllm/vllm-openai:TAG [args]`: the image's entrypoint is vLLM's API server, so the words
    after the image are vLLM's arguments (or a command: `... IMAGE vllm serve M`, `--entrypoint vllm IMAGE serve`).
    `-e/--env K=V` are the server's environment. None when no vLLM image is named (`docker exec ctr vllm serve`:
    the caller finds the invocation further on)."""
    env = dict(env)
    entrypoint: str | None = None
    for j, tok in enumerate(rest[1:], 1):
        prev = rest[j - 1]
        if prev in ("-e", "--env") and "=" in tok:
            key, _, value = tok.partition("=")
            env[key] = value
            continue
        if tok.startswith("--env="):
            key, _, value = tok[6:].partition("=")
            if value or "=" in tok[6:]:
                env[key] = value
            continue
        if prev == "--entrypoint":
            entrypoint = tok
            continue
        if tok.startswith("--entrypoint="):
            entrypoint = tok.split("=", 1)[1]
            continue
        if tok in ("vllm", "python", "python3") or not _IMAGE.search(tok):
            continue
        if prev.startswith("-") and "=" not in prev and prev not in _CONTAINER_BOOL_OPTS:
            continue  # an option's value (`--name vllm-openai-1`, `-v vllm-cache:/root`), not the image
        tail = rest[j + 1:]
        if entrypoint:
            tail = [*shlex.split(entrypoint), *tail]
        inner = _search(tail, env, depth + 1) if tail and not tail[0].startswith("-") else None
        if inner is not None:
            prog, env2, argv, model = inner
            return (f"docker {tok}" if prog == "vllm serve" else prog), env2, argv, model
        return f"docker {tok}", env, tail, None
    return None


def _search(seg: list[str], env: dict[str, str] | None = None,
            depth: int = 0) -> tuple[str, dict[str, str], list[str], str | None] | None:
    """The first vLLM invocation in a simple command, behind any launcher (`env`, `sudo`, `nohup`, `uv run`,
    `srun ...`, `ray job submit ... --`, `docker exec CTR`, `kubectl exec POD --`, `bash -c "..."`): (program,
    env, argv after the program, positional model), else None. `VAR=value` words before it are its environment."""
    env = dict(env or {})
    if depth > 4:
        return None
    for i, tok in enumerate(seg):
        spaced = any(c.isspace() for c in tok)
        if _ENV_ASSIGN.match(tok) and not spaced:
            key, _, value = tok.partition("=")
            env[key] = value
            continue
        found = _direct(seg[i:], env, depth)
        if found is not None:
            return found
        if spaced and "vllm" in tok:
            # A quoted command string (`bash -c "vllm serve ..."`, a compose `command: >` block).
            try:
                inner_tokens = tokenize(tok)
            except InputError:
                continue
            for inner_seg in _segments(_without_redirections(inner_tokens)):
                found = _search(inner_seg, env, depth + 1)
                if found is not None:
                    return found
    return None


def _find_program(seg: list[str]) -> tuple[str, dict[str, str], list[str], str | None] | None:
    """(program, env, argv after the program, positional model) for a vLLM invocation, else None."""
    return _search(_without_redirections(seg))


# The Python API: `LLM(model=..., speculative_config={...})`, `EngineArgs(...)`, `AsyncEngineArgs(...)`.
_API_CALLS = ("LLM", "EngineArgs", "AsyncEngineArgs")
_API_CALL = re.compile(r"(?<![\w.])(?:vllm\.)?(?:" + "|".join(_API_CALLS) + r")\s*\(")
# Keys under which docker-compose and Kubernetes manifests keep a container's command line.
_MANIFEST_KEYS = ("entrypoint", "command", "args")


def _literal(node: ast.AST) -> Any:
    """A keyword value of the Python call: a literal, else its source text (a variable, an expression)."""
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return ast.unparse(node)


def python_api_argv(text: str) -> tuple[str, list[str], str | None] | None:
    """`LLM(model="m", speculative_config={...}, tensor_parallel_size=2)` -> (program, argv, model), read with
    `ast` (never executed); None when the text holds no such call. Values that are not literals (variables)
    are kept as their source text."""
    m = _API_CALL.search(text)
    if m is None:
        return None
    tree = None
    # Parse from the call on; a paste may carry unrelated code around it, so try the call alone first.
    start = m.start()
    depth, end = 0, len(text)
    quote: str | None = None
    for i in range(m.end() - 1, len(text)):
        ch = text[i]
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                end = i + 1
                break
    for candidate in (text[start:end], text):
        try:
            tree = ast.parse(candidate.strip())
            break
        except SyntaxError:
            continue
    if tree is None:
        raise InputError("--cmd: a Python vLLM call (LLM(...)) that Python cannot parse; check the brackets")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name not in _API_CALLS:
            continue
        argv: list[str] = []
        model = None
        if node.args:
            first = _literal(node.args[0])
            model = first if isinstance(first, str) else None
        for kw in node.keywords:
            if kw.arg is None:
                continue  # **kwargs: not readable without running the code
            value = _literal(kw.value)
            flag = "--" + kw.arg.replace("_", "-")
            if value is True:
                argv.append(flag)
            elif value is False:
                argv.append("--no-" + flag[2:])
            elif value is None:
                continue
            elif isinstance(value, (dict, list)):
                argv += [flag, json.dumps(value)]
            else:
                argv += [flag, str(value)]
        return f"python {name}(...)", argv, model
    return None


def manifest_argv(text: str) -> tuple[list[str], dict[str, str], str | None] | None:
    """A docker-compose service or Kubernetes container spec (YAML/JSON) -> (argv, env, image) of its command
    line: `entrypoint` + `command` + `args`, each a list or a string; None when the text is no such manifest."""
    if "\n" not in text.strip() and not text.lstrip().startswith(("[", "{")):
        return None
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if isinstance(data, list) and all(isinstance(x, (str, int, float)) for x in data):
        return [str(x) for x in data], {}, None
    found: list[tuple[list[str], dict[str, str], str | None]] = []

    def words(value: Any) -> list[str]:
        if isinstance(value, list):
            return [str(x) for x in value if isinstance(x, (str, int, float, bool))]
        if isinstance(value, str):
            return tokenize(value)
        return []

    def env_of(node: dict) -> dict[str, str]:
        env = node.get("env") or node.get("environment")
        if isinstance(env, list):
            out = {}
            for item in env:
                if isinstance(item, dict) and "name" in item:
                    out[str(item["name"])] = str(item.get("value", ""))
                elif isinstance(item, str) and "=" in item:
                    k, _, v = item.partition("=")
                    out[k] = v
            return out
        return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}

    def walk(node: Any, depth: int = 0) -> None:
        if depth > 12:
            return
        if isinstance(node, dict):
            parts = [w for key in _MANIFEST_KEYS for w in words(node.get(key))]
            if parts and any("vllm" in p or p.startswith("--") for p in parts):
                image = node.get("image")
                found.append((parts, env_of(node), image if isinstance(image, str) else None))
                return
            for v in node.values():
                walk(v, depth + 1)
        elif isinstance(node, list):
            for v in node:
                walk(v, depth + 1)

    walk(data)
    return found[0] if found else None


def split_command(text: str) -> tuple[str, dict[str, str], list[str], str | None]:
    """Find the vLLM invocation in a command line: (program, env, argv, positional model).

    Besides shell command lines this reads the Python API (`LLM(model=..., speculative_config={...})`, parsed
    with `ast`, never run) and docker-compose / Kubernetes manifests (their command/args lists).
    Raises InputError when the text is not a vLLM command line.
    """
    if not text or not text.strip():
        raise InputError("--cmd is empty")
    api = python_api_argv(text) if "(" in text and not re.search(r"(^|\s)(vllm\s+serve|-m\s+vllm)\b", text) else None
    if api is not None:
        program, argv, model = api
        return program, {}, argv, model
    manifest = manifest_argv(text)
    if manifest is not None:
        argv, env, image = manifest
        found = _find_program(argv)
        if found:
            prog, env2, rest, model = found
            return prog, {**env, **env2}, rest, model
        if argv and argv[0].startswith("-"):
            return (f"docker {image}" if image else "flags only"), env, argv, None
    tokens = tokenize(text)
    segs = _segments(tokens)
    for seg in segs:
        found = _find_program(seg)
        if found:
            return found
    # Bare flags (`--model X --speculative-config ...`) are accepted as the argument list.
    if segs and segs[0][0].startswith("--"):
        return "flags only", {}, segs[0], None
    first = " ".join(tokens[:3]) if tokens else text.strip()[:40]
    raise NotVllmCommand(f"--cmd: not a vLLM command line: no `vllm serve`, `python -m vllm.entrypoints...` or "
                         f"vLLM image in it (starts with '{first}'); give the vLLM command it launches")


def not_vllm_reason(text: str) -> str | None:
    """Why --cmd holds no vLLM invocation (NotVllmCommand's line), or None when it has one or fails otherwise."""
    try:
        split_command(text)
    except NotVllmCommand as exc:
        return str(exc).removeprefix("--cmd: ")
    except InputError:
        return None
    return None


def coerce(text: str) -> Any:
    """A command-line word as vLLM would type it: int, float, bool, None, or the string."""
    low = text.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low in ("none", "null"):
        return None
    if _NUMBER.match(text):
        try:
            return int(text)
        except ValueError:
            return float(text)
    return text


_ELIDED = re.compile(r"^(?:\.{3,}|…|<[\w\- ]+>)$")
MALFORMED_KEY = "__malformed__"  # set in a salvaged JSON value: why vLLM's json.loads would reject it
_ELLIPSIS = re.compile(r",?\s*(?:\.\.\.|…)\s*(?=[,}\]])|(?<=[{\[,])\s*(?:\.\.\.|…)\s*,?")
_TRAILING_COMMA = re.compile(r",\s*(?=[}\]])")


def salvage_mapping(text: str) -> Any:
    """What a JSON value that json.loads rejects was meant to say: elisions (`...`) and trailing commas dropped,
    then read as a YAML flow mapping (which also takes the unquoted keys and values left when a paste lost the
    quotes: `{method: ngram, num_speculative_tokens: 3}`). None when even that fails."""
    import yaml

    cleaned = _TRAILING_COMMA.sub("", _ELLIPSIS.sub("", text))
    for candidate in (cleaned, cleaned.replace(":", ": ")):
        try:
            value = yaml.safe_load(candidate)
        except yaml.YAMLError:
            continue
        if isinstance(value, (dict, list)) and value:
            return value
    return None


def parse_json_value(flag: str, text: Any) -> Any:
    """Parse a JSON-valued flag (`--speculative-config '{...}'`). Accepts a Python dict literal too
    (vLLM 0.8.2 used ast.literal_eval). A value json.loads rejects but whose meaning is clear (elided `...`,
    quotes lost in a paste) is salvaged and carries MALFORMED_KEY with the JSON error; InputError only when
    nothing can be read."""
    if not isinstance(text, str):
        return text
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return coerce(stripped)
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        try:
            value = ast.literal_eval(stripped)
            if isinstance(value, (dict, list)):
                return value
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
        why = f"{flag}: malformed JSON ({exc.msg} at column {exc.colno}): {stripped[:120]}"
        try:  # only elided in the report (`{"method": "ngram", ...}`): the command itself was fine
            elided = json.loads(_TRAILING_COMMA.sub("", _ELLIPSIS.sub("", stripped)))
            if isinstance(elided, (dict, list)):
                return elided
        except json.JSONDecodeError:
            pass
        salvaged = salvage_mapping(stripped)
        if isinstance(salvaged, dict):
            salvaged[MALFORMED_KEY] = why
            return salvaged
        raise InputError(why) from None


def _bracket_depth(text: str) -> int:
    return sum(text.count(c) for c in "{[") - sum(text.count(c) for c in "}]")


def _set_dotted(target: dict[str, Any], path: list[str], value: Any) -> None:
    node = target
    for key in path[:-1]:
        nxt = node.get(key)
        if not isinstance(nxt, dict):
            nxt = {}
            node[key] = nxt
        node = nxt
    node[path[-1]] = value


def _norm_flag(raw: str) -> str:
    """`--max_num_seqs` -> `--max-num-seqs` (FlexibleArgumentParser does the same); aliases -> canonical."""
    if raw.startswith("--"):
        return canonical_flag("--" + raw[2:].replace("_", "-"))
    return canonical_flag(raw)


def dest_of(flag: str) -> str:
    """`--max-num-seqs` -> `max_num_seqs`."""
    return flag.lstrip("-").replace("-", "_")


def parse_argv(argv: list[str], *, program: str = "flags only", model: str | None = None,
               env: dict[str, str] | None = None, text: str = "") -> ParsedCommand:
    """Parse vLLM arguments. Unknown flags are kept (a check decides what they mean)."""
    out = ParsedCommand(program=program, model=model, env=dict(env or {}), text=text)
    bools = boolean_flags()
    jsons = json_flags()
    dotted: dict[str, dict[str, Any]] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok == "--":
            out.positional.extend(argv[i:])
            break
        if _ELIDED.match(tok):
            continue  # `vllm serve ... --flag` as pasted in a report: an elision, not an argument
        if not tok.startswith("-") or _NUMBER.match(tok):
            if program == "vllm serve" and out.model is None:
                out.model = tok
            else:
                out.positional.append(tok)
            continue
        value: Any = None
        has_value = False
        name = tok
        if tok[:2] in _ATTACHED_SHORT and len(tok) > 2 and tok[2] not in ".=":
            name, value, has_value = _ATTACHED_SHORT[tok[:2]], tok[2:], True  # -O3
        elif "=" in tok:
            name, value = tok.split("=", 1)
            has_value = True
        base, _, subpath = name.partition(".")
        flag = _norm_flag(base)
        negated = False
        if flag.startswith("--no-") and not subpath:
            flag, negated = _norm_flag("--" + flag[5:]), True
        if not has_value and not negated:
            nxt = argv[i] if i < len(argv) else None
            takes_next = nxt is not None and (not nxt.startswith("-") or bool(_NUMBER.match(nxt)))
            if flag in bools and not subpath:
                if takes_next and nxt is not None and nxt.lower() in ("true", "false"):
                    value, has_value = nxt, True
                    i += 1
            elif takes_next:
                value, has_value = nxt, True
                i += 1
                if flag in jsons and isinstance(value, str) and value.lstrip().startswith(("{", "[")):
                    # `--speculative-config {"method": "mtp", "k": 3}` without shell quotes: the shell split it
                    # (and ate the double quotes); rejoin the words up to the closing bracket.
                    while _bracket_depth(value) > 0 and i < len(argv) and not argv[i].startswith("--"):
                        value += " " + argv[i]
                        i += 1
        dest = dest_of(flag)
        out.written.setdefault(dest, name if subpath else base)
        if negated:
            out.args[dest] = False
            continue
        if subpath:
            dotted.setdefault(dest, {})
            _set_dotted(dotted[dest], subpath.split("."), coerce(value) if has_value else True)
            continue
        if not has_value:
            out.args[dest] = True
        elif flag in jsons:
            out.args[dest] = parse_json_value(base, value)
        else:
            out.args[dest] = coerce(value)
    for dest, sub in dotted.items():
        current = out.args.get(dest)
        merged: dict[str, Any] = dict(current) if isinstance(current, dict) else {}
        _deep_merge(merged, sub)
        out.args[dest] = merged
    if out.model is None and isinstance(out.args.get("model"), str):
        out.model = out.args["model"]
    if out.model is not None:
        out.args.setdefault("model", out.model)
    return out


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value)
        else:
            base[key] = value


def parse_command(text: str) -> ParsedCommand:
    """Parse a full command line (see module docstring). Raises InputError on bad input."""
    program, env, argv, model = split_command(text)
    return parse_argv(argv, program=program, model=model, env=env, text=text)


def yaml_to_argv(mapping: dict[str, Any]) -> list[str]:
    """vLLM's `--config FILE` semantics: each key becomes `--key value` (True -> bare flag, False ->
    omitted, dicts -> JSON, lists -> repeated values), as FlexibleArgumentParser._load_config_file does."""
    argv: list[str] = []
    for key, value in mapping.items():
        flag = "--" + str(key).replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is False:
            argv.append("--no-" + flag[2:])
        elif value is None:
            continue
        elif isinstance(value, dict):
            argv += [flag, json.dumps(value)]
        elif isinstance(value, list):
            argv += [flag, *[str(v) for v in value]]
        else:
            argv += [flag, str(value)]
    return argv

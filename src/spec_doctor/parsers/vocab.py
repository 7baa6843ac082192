"""Fast, exact vocabulary comparison of two tokenizers, straight from their files.

No tokenizer library is loaded and no model code runs: ``tokenizer.json`` is read as JSON, a tiktoken
BPE file (``*.tiktoken``) and a sentencepiece ``tokenizer.model`` are parsed directly, the GPT-2 style
``vocab.json`` too. Comparing two 128k-152k vocabularies, load included, takes a fraction of a second.

vLLM gives the draft the *target's* token ids (``tokenizer=target_model_config.tokenizer``,
vllm/config/speculative.py), so what matters is whether the two token->id maps agree.
"""

from __future__ import annotations

import binascii
import itertools
import json
import operator
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SPECIAL_ROLES = ("bos", "eos", "pad", "unk")

IDENTICAL = "identical"
COMPATIBLE = "compatible"
INCOMPATIBLE = "incompatible"


class VocabError(ValueError):
    """A tokenizer file that cannot be read (the message is one line)."""


@dataclass
class Vocab:
    source: str  # the file the map was read from
    kind: str  # "tokenizer.json" | "tiktoken" | "vocab.json" | "sentencepiece"
    token_to_id: dict[str, int]  # every token, base vocabulary and added tokens
    added: dict[str, int] = field(default_factory=dict)  # added (incl. special) tokens
    model_type: str | None = None  # BPE, Unigram, WordPiece, ...
    specials: dict[str, int | None] = field(default_factory=dict)  # role -> id
    special_tokens: dict[str, str | None] = field(default_factory=dict)  # role -> token text
    normalizer: str | None = None  # canonical JSON of the normalizer
    pre_tokenizer: str | None = None
    chat_template: str | None = None
    chat_template_source: str | None = None
    byte_level: bool = False

    @property
    def size(self) -> int:
        """The id space the tokenizer can produce: highest id + 1 (``len(tokenizer)`` when dense)."""
        return (max(self.token_to_id.values()) + 1) if self.token_to_id else 0

    @property
    def n_tokens(self) -> int:
        return len(self.token_to_id)


@dataclass
class VocabComparison:
    """Target vs draft vocabulary. ``verdict``: identical | compatible | incompatible."""

    verdict: str
    target_size: int
    draft_size: int
    common: int  # tokens present in both
    same_id: int  # ... with the same id
    diff_id: int  # ... with different ids
    only_target: int
    only_draft: int
    prefix: str | None  # "draft-extends-target" | "target-extends-draft" | None
    extra_added_only: bool  # the extra tokens of the longer one are all added tokens
    added_diff: int  # differences confined to added/special tokens (base vocabularies agree)
    examples: list[dict[str, Any]]  # first differing tokens: {"token", "target_id", "draft_id"}
    special_diffs: list[dict[str, Any]]  # {"role", "target_id", "draft_id", "target_token", "draft_token"}
    normalizer_differs: bool
    pre_tokenizer_differs: bool
    chat_template_differs: bool | None  # None when neither has one
    target_source: str = ""
    draft_source: str = ""

    @property
    def ids_differ(self) -> bool:
        return self.verdict == INCOMPATIBLE

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "verdict", "target_size", "draft_size", "common", "same_id", "diff_id", "only_target",
            "only_draft", "prefix", "extra_added_only", "added_diff", "examples", "special_diffs", "normalizer_differs",
            "pre_tokenizer_differs", "chat_template_differs", "target_source", "draft_source")}


# --------------------------------------------------------------------------------------- loading
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "tokenizer.model", "*.tiktoken")


def find_tokenizer_file(model_dir: str | Path) -> Path | None:
    d = Path(model_dir)
    for name in ("tokenizer.json", "vocab.json", "tokenizer.model"):
        if (d / name).is_file():
            return d / name
    tik = sorted(d.glob("*.tiktoken"))
    return tik[0] if tik else None


def load_vocab(path: str | Path) -> Vocab:
    """Load a vocabulary from a model directory or a tokenizer file. Raises VocabError (one line)."""
    p = Path(path)
    if p.is_dir():
        f = find_tokenizer_file(p)
        if f is None:
            raise VocabError(f"{p}: no tokenizer file (tokenizer.json, vocab.json, tokenizer.model, *.tiktoken)")
        d = p
    elif p.is_file():
        f, d = p, p.parent
    else:
        raise VocabError(f"{p}: no such file or directory")
    if f.name == "tokenizer.json":
        vocab = _load_tokenizer_json(f)
    elif f.suffix == ".tiktoken":
        vocab = _load_tiktoken(f)
    elif f.name == "tokenizer.model":
        vocab = _load_sentencepiece(f)
    elif f.suffix == ".json":
        vocab = _load_vocab_json(f)
    else:
        raise VocabError(f"{f}: unknown tokenizer file type")
    _apply_tokenizer_config(vocab, d)
    return vocab


def _read_json(f: Path) -> Any:
    try:
        return json.loads(f.read_bytes())
    except OSError as exc:
        raise VocabError(f"{f}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise VocabError(f"{f}: not valid JSON ({str(exc).splitlines()[0][:80]})") from None


def _canonical(obj: Any) -> str | None:
    return None if obj is None else json.dumps(obj, sort_keys=True, ensure_ascii=False)


_WS = re.compile(r"[ \t\n\r]*")


def _ws_end(text: str, pos: int) -> int:
    m = _WS.match(text, pos)
    assert m is not None  # the pattern matches the empty string
    return m.end()


_MERGES_TAIL = re.compile(r"\][ \t\n\r]*\}[ \t\n\r]*\}[ \t\n\r]*$")
_DECODER = json.JSONDecoder()
_TOP_KEYS = frozenset(("version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
                       "post_processor", "decoder"))


def _parse_object(text: str, pos: int, skip_merges: bool) -> tuple[dict[str, Any], int]:
    """Parse the JSON object at ``pos`` key by key (the C scanner does each value). Inside a BPE
    ``model`` object, the ``merges`` list -- ~80 % of a large tokenizer.json and never needed here -- is
    skipped when it is the last value of the file: the layout `tokenizers` writes (every other top-level
    key before "model", "vocab" before "merges", and no other list-valued key in a BPE model)."""
    if text[pos] != "{":
        raise ValueError("expected an object")
    out: dict[str, Any] = {}
    pos = _ws_end(text, pos + 1)
    if text[pos] == "}":
        return out, pos + 1
    while True:
        key, pos = _DECODER.raw_decode(text, pos)
        pos = _ws_end(text, pos)
        if text[pos] != ":":
            raise ValueError(f"expected ':' at {pos}")
        pos = _ws_end(text, pos + 1)
        if key == "model" and text[pos] == "{":
            # `tokenizers` writes "model" after all its other top-level keys; only then is it last.
            out[key], pos = _parse_object(text, pos, _TOP_KEYS <= out.keys())
        elif skip_merges and key == "merges" and "vocab" in out and _MERGES_TAIL.search(text, pos):
            return out, len(text.rstrip()) - 1  # the caller's closing brace
        else:
            out[key], pos = _DECODER.raw_decode(text, pos)
        pos = _ws_end(text, pos)
        if text[pos] == ",":
            pos = _ws_end(text, pos + 1)
        elif text[pos] == "}":
            return out, pos + 1
        else:
            raise ValueError(f"expected ',' or '}}' at {pos}")


def _read_tokenizer_json(f: Path) -> Any:
    try:
        text = f.read_bytes().decode("utf-8")
    except OSError as exc:
        raise VocabError(f"{f}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise VocabError(f"{f}: not valid JSON (not UTF-8)") from None
    start = _ws_end(text, 0)
    if not text.startswith("{", start):
        return _read_json(f)  # not an object: let the plain parser produce the message
    try:
        return _parse_object(text, start, False)[0]
    except (ValueError, IndexError) as exc:
        raise VocabError(f"{f}: not valid JSON ({str(exc).splitlines()[0][:80] or 'truncated'})") from None


def _load_tokenizer_json(f: Path) -> Vocab:
    data = _read_tokenizer_json(f)
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise VocabError(f"{f}: not a tokenizers tokenizer.json (no 'model' object)")
    model = data["model"]
    raw = model.get("vocab")
    if isinstance(raw, dict):
        if not _all_int(raw.values()):
            raise VocabError(f"{f}: vocabulary ids are not integers")
        token_to_id = dict(raw)
    elif isinstance(raw, list):  # Unigram: [[piece, score], ...], id = position
        token_to_id = {}
        for i, item in enumerate(raw):
            if isinstance(item, (list, tuple)) and item:
                token_to_id.setdefault(str(item[0]), i)
    else:
        raise VocabError(f"{f}: model has no vocabulary")
    added: dict[str, int] = {}
    for tok in data.get("added_tokens") or []:
        if isinstance(tok, dict) and "content" in tok and isinstance(tok.get("id"), int):
            added[str(tok["content"])] = tok["id"]
    token_to_id.update(added)
    blob_pre = data.get("pre_tokenizer")
    byte_level = "ByteLevel" in (_canonical(blob_pre) or "") or "ByteLevel" in (_canonical(data.get("decoder")) or "")
    return Vocab(source=str(f), kind="tokenizer.json", token_to_id=token_to_id, added=added,
                 model_type=model.get("type"), normalizer=_canonical(data.get("normalizer")),
                 pre_tokenizer=_canonical(blob_pre), byte_level=byte_level)


def _all_int(values: Iterable[Any]) -> bool:
    return set(map(type, values)) <= {int}


def _load_vocab_json(f: Path) -> Vocab:
    data = _read_json(f)
    if not isinstance(data, dict) or not data or not _all_int(data.values()):
        raise VocabError(f"{f}: not a token->id map")
    added: dict[str, int] = {}
    extra = f.parent / "added_tokens.json"
    if extra.is_file():
        more = _read_json(extra)
        if isinstance(more, dict):
            added = {str(k): int(v) for k, v in more.items() if type(v) is int}
    token_to_id = dict(data)
    token_to_id.update(added)
    return Vocab(source=str(f), kind="vocab.json", token_to_id=token_to_id, added=added, model_type="BPE",
                 byte_level=True)


_BYTE_TO_UNICODE: dict[int, str] | None = None


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map used by byte-level BPE vocabularies."""
    global _BYTE_TO_UNICODE
    if _BYTE_TO_UNICODE is None:
        bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
            list(range(ord("®"), ord("ÿ") + 1))
        cs = bs[:]
        n = 0
        for b in range(256):
            if b not in bs:
                bs.append(b)
                cs.append(256 + n)
                n += 1
        _BYTE_TO_UNICODE = dict(zip(bs, map(chr, cs)))
    return _BYTE_TO_UNICODE


def _load_tiktoken(f: Path) -> Vocab:
    """A tiktoken BPE file: one ``base64(token bytes) rank`` per line. Tokens are rendered in the
    byte-level alphabet so they compare equal to the same tokens in a byte-level tokenizer.json."""
    try:
        blob = f.read_bytes()
    except OSError as exc:
        raise VocabError(f"{f}: cannot read ({exc.strerror or exc})") from None
    table = byte_to_unicode()
    trans = {b: table[b] for b in range(256)}
    token_to_id: dict[str, int] = {}
    try:
        for line in blob.splitlines():
            if not line:
                continue
            tok, rank = line.split()
            raw = binascii.a2b_base64(tok)
            token_to_id["".join(map(trans.__getitem__, raw))] = int(rank)
    except (ValueError, binascii.Error):
        raise VocabError(f"{f}: not a tiktoken BPE file (expected 'base64 rank' lines)") from None
    return Vocab(source=str(f), kind="tiktoken", token_to_id=token_to_id, model_type="BPE", byte_level=True)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise VocabError("truncated protobuf varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> Iterable[tuple[int, int, Any]]:
    """Minimal protobuf wire-format reader: yields (field number, wire type, value)."""
    pos = 0
    val: int | bytes
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, pos = _varint(buf, pos)
        elif wt == 1:
            val, pos = buf[pos:pos + 8], pos + 8
        elif wt == 2:
            n, pos = _varint(buf, pos)
            val, pos = buf[pos:pos + n], pos + n
        elif wt == 5:
            val, pos = buf[pos:pos + 4], pos + 4
        else:
            raise VocabError(f"unsupported protobuf wire type {wt}")
        if pos > len(buf):
            raise VocabError("truncated protobuf message")
        yield num, wt, val


# sentencepiece_model.proto: ModelProto.pieces = 1; SentencePiece {piece = 1; score = 2; type = 3}
_SP_TYPES = {1: "normal", 2: "unknown", 3: "control", 4: "user_defined", 5: "unused", 6: "byte"}


def _load_sentencepiece(f: Path) -> Vocab:
    try:
        blob = f.read_bytes()
    except OSError as exc:
        raise VocabError(f"{f}: cannot read ({exc.strerror or exc})") from None
    token_to_id: dict[str, int] = {}
    added: dict[str, int] = {}
    specials: dict[str, int | None] = {}
    try:
        idx = 0
        for num, wt, val in _fields(blob):
            if num != 1 or wt != 2:
                continue
            piece, ptype = None, 1
            for n2, w2, v2 in _fields(val):
                if n2 == 1 and w2 == 2:
                    piece = v2.decode("utf-8")
                elif n2 == 3 and w2 == 0:
                    ptype = v2
            if piece is None:
                raise VocabError("piece without text")
            token_to_id.setdefault(piece, idx)
            kind = _SP_TYPES.get(ptype, "normal")
            if kind in ("control", "unknown", "user_defined"):
                added[piece] = idx
            if kind == "unknown":
                specials["unk"] = idx
            idx += 1
    except (VocabError, UnicodeDecodeError) as exc:
        raise VocabError(f"{f}: not a sentencepiece model ({exc})") from None
    if not token_to_id:
        raise VocabError(f"{f}: not a sentencepiece model (no pieces)")
    for role, text in (("bos", "<s>"), ("eos", "</s>"), ("pad", "<pad>")):
        if text in added:
            specials[role] = added[text]
    return Vocab(source=str(f), kind="sentencepiece", token_to_id=token_to_id, added=added,
                 model_type="sentencepiece", specials=specials,
                 special_tokens={r: next((t for t, i in added.items() if i == v), None)
                                 for r, v in specials.items()})


def _token_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def _apply_tokenizer_config(vocab: Vocab, d: Path) -> None:
    """Special tokens and chat template from tokenizer_config.json / chat_template.* / config.json."""
    cfg: dict[str, Any] = {}
    tc = d / "tokenizer_config.json"
    if tc.is_file():
        try:
            loaded = json.loads(tc.read_bytes())
            cfg = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            cfg = {}
    for sid, entry in (cfg.get("added_tokens_decoder") or {}).items():
        text = _token_text(entry)
        if text is not None and str(sid).isdigit() and text not in vocab.token_to_id:
            vocab.token_to_id[text] = int(sid)
            vocab.added[text] = int(sid)
    model_cfg: dict[str, Any] = {}
    if (d / "config.json").is_file():
        try:
            loaded = json.loads((d / "config.json").read_bytes())
            model_cfg = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            model_cfg = {}
    for role in SPECIAL_ROLES:
        text = _token_text(cfg.get(f"{role}_token"))
        if text is not None:
            vocab.special_tokens[role] = text
            vocab.specials[role] = vocab.token_to_id.get(text)
        elif role not in vocab.specials:
            tid = model_cfg.get(f"{role}_token_id")
            if type(tid) is int:
                vocab.specials[role] = tid
    template = cfg.get("chat_template")
    source = str(tc) if template else None
    if isinstance(template, list):  # [{"name": "default", "template": "..."}, ...]
        template = "\n".join(str(t.get("template", "")) for t in template if isinstance(t, dict))
    for name in ("chat_template.jinja", "chat_template.json"):
        if not template and (d / name).is_file():
            try:
                text = (d / name).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if name.endswith(".json"):
                try:
                    text = str(json.loads(text).get("chat_template", ""))
                except (ValueError, AttributeError):
                    continue
            template, source = text, str(d / name)
    if isinstance(template, str) and template.strip():
        vocab.chat_template, vocab.chat_template_source = template, source


# --------------------------------------------------------------------------------------- comparing
def compare(target: Vocab, draft: Vocab, max_examples: int = 5) -> VocabComparison:
    """Compare the token->id maps exactly, plus special tokens, normalizer, pre-tokenizer, template."""
    t_map, d_map = target.token_to_id, draft.token_to_id
    # Set operations on keys and (token, id) items run in C: ~10x faster than a Python loop at 150k.
    if t_map == d_map:
        common = same = len(t_map)
        diff: set[str] = set()
        only_t = only_d = 0
    else:
        shared = list(t_map.keys() & d_map.keys())
        differs = list(map(operator.ne, map(t_map.__getitem__, shared), map(d_map.__getitem__, shared)))
        diff = set(itertools.compress(shared, differs))
        common, same = len(shared), len(shared) - len(diff)
        only_t, only_d = len(t_map) - common, len(d_map) - common
    # Same ids can also be taken by different tokens (a token renamed): compare the id -> token side.
    id_clash = 0
    if not diff and (only_t or only_d):
        t_inv = {v: k for k, v in t_map.items()}
        id_clash = sum(1 for k, v in d_map.items() if v in t_inv and t_inv[v] != k)
    prefix = None
    extra_added_only = False
    if not diff and not id_clash:
        if only_d and not only_t:
            prefix = "draft-extends-target"
            extra = d_map.keys() - t_map.keys()
            extra_added_only = all(k in draft.added for k in extra)
        elif only_t and not only_d:
            prefix = "target-extends-draft"
            extra = t_map.keys() - d_map.keys()
            extra_added_only = all(k in target.added for k in extra)
    # The first differing tokens in the target's id order (token.json keeps its vocab in id order).
    first = itertools.islice((k for k in t_map if k in diff), max_examples) if diff else ()
    examples = [{"token": k, "target_id": t_map[k], "draft_id": d_map[k]}
                for k in sorted(first, key=t_map.__getitem__)]
    if not examples and id_clash:
        t_inv = {v: k for k, v in t_map.items()}
        clashes = sorted((v, k) for k, v in d_map.items() if v in t_inv and t_inv[v] != k)[:max_examples]
        examples = [{"id": v, "target_token": t_inv[v], "draft_token": k} for v, k in clashes]
    added_diff = 0
    if diff or id_clash or (only_t and only_d):
        # Differences confined to added/special tokens while the base vocabulary agrees: the ordinary
        # text ids line up, only the special positions differ. (Cheap pre-test before the exact one.)
        added_any = target.added.keys() | draft.added.keys()
        base_t = base_d = None
        if len(diff) + id_clash <= len(added_any) and diff | (t_map.keys() ^ d_map.keys()) <= added_any:
            base_t = {k: v for k, v in t_map.items() if k not in target.added}
            base_d = {k: v for k, v in d_map.items() if k not in draft.added}
        if base_t and base_t == base_d:
            verdict = COMPATIBLE
            added_diff = len(diff) + id_clash + only_t + only_d
        else:
            verdict = INCOMPATIBLE
    elif prefix:
        verdict = COMPATIBLE
    else:
        verdict = IDENTICAL
    special_diffs = []
    for role in SPECIAL_ROLES:
        a, b = target.specials.get(role), draft.specials.get(role)
        # A role only one side declares is unknown on the other, not a difference.
        if role in target.specials and role in draft.specials and a != b:
            special_diffs.append({"role": role, "target_id": a, "draft_id": b,
                                  "target_token": target.special_tokens.get(role),
                                  "draft_token": draft.special_tokens.get(role)})
    comparable = target.kind == draft.kind == "tokenizer.json"
    t_tpl, d_tpl = _squash(target.chat_template), _squash(draft.chat_template)
    return VocabComparison(
        verdict=verdict, target_size=target.size, draft_size=draft.size, common=common, same_id=same,
        diff_id=len(diff) + id_clash, only_target=only_t, only_draft=only_d, prefix=prefix,
        extra_added_only=extra_added_only, added_diff=added_diff, examples=examples, special_diffs=special_diffs,
        normalizer_differs=comparable and target.normalizer != draft.normalizer,
        pre_tokenizer_differs=comparable and target.pre_tokenizer != draft.pre_tokenizer,
        chat_template_differs=None if (t_tpl is None and d_tpl is None) else t_tpl != d_tpl,
        target_source=target.source, draft_source=draft.source)


def _squash(text: str | None) -> str | None:
    return None if text is None else " ".join(text.split())


def compare_paths(target: str | Path, draft: str | Path) -> VocabComparison:
    return compare(load_vocab(target), load_vocab(draft))

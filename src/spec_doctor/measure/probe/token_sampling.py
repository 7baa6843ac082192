"""Sampling parameters and what vLLM V1 does with them (torch only inside functions).

vLLM's rejection sampler processes the *target* logits like its sampler does: divide by the request
temperature, apply top-k then top-p, softmax in fp32; a temperature below 1e-5 is greedy
(vllm/v1/sample/rejection_sampler.py ``apply_sampling_constraints``; vllm/v1/sample/sampler.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from spec_doctor.engine.facts import InputError

GREEDY_EPS = 1e-5  # vLLM V1 treats temperature < 1e-5 as greedy


@dataclass(frozen=True)
class SamplingSpec:
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0  # 0 or -1: off
    # "greedy" (vLLM V1 default: argmax draft, draft probs treated as one-hot) or "probabilistic"
    draft_sample_method: str = "greedy"

    def __post_init__(self) -> None:
        if self.temperature is None or self.temperature < 0:
            raise InputError(f"temperature must be >= 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise InputError(f"top_p must be within (0, 1], got {self.top_p}")
        if self.top_k < -1:
            raise InputError(f"top_k must be -1, 0 (off) or positive, got {self.top_k}")
        if self.draft_sample_method not in ("greedy", "probabilistic"):
            raise InputError(f"draft_sample_method must be 'greedy' or 'probabilistic', "
                             f"not '{self.draft_sample_method}'")

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_EPS

    @property
    def estimator(self) -> str:
        """Which acceptance the engine applies (acceptance.md section 1.8 table)."""
        if self.greedy:
            return "argmax-match"
        return "greedy-draft" if self.draft_sample_method == "greedy" else "probabilistic"

    def at(self, temperature: float) -> SamplingSpec:
        return SamplingSpec(temperature, self.top_p, self.top_k, self.draft_sample_method)

    def to_dict(self) -> dict:
        return {"temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k,
                "draft_sample_method": self.draft_sample_method, "estimator": self.estimator}


def processed_logits(logits, spec: SamplingSpec):
    """Target logits as vLLM processes them for a random request: /T, top-k, top-p (fp32, a copy)."""
    import torch

    x = logits.float() / max(spec.temperature, GREEDY_EPS)
    vocab = x.shape[-1]
    if spec.top_k and 0 < spec.top_k < vocab:
        kth = torch.topk(x, spec.top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    if spec.top_p < 1.0:
        # vLLM apply_top_k_top_p: sort ascending, drop the smallest tokens whose cumulative probability
        # is <= 1 - p, always keep the largest one.
        sorted_x, idx = torch.sort(x, dim=-1, descending=False)
        cum = sorted_x.softmax(dim=-1).cumsum(dim=-1)
        drop = cum <= 1 - spec.top_p
        drop[..., -1] = False
        x = x.scatter(-1, idx, sorted_x.masked_fill(drop, float("-inf")))
    return x


def sample_next(logits, spec: SamplingSpec, generator=None):
    """One token per row, the way vLLM's sampler picks it (argmax when greedy)."""
    import torch

    if spec.greedy:
        return logits.argmax(dim=-1)
    probs = processed_logits(logits, spec).softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)

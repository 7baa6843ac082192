"""A learned prior over root causes from the words of a complaint (knowledge/data/rootcauses.jsonl).

Each row of the data file is a public report -- the reporter's own words about what they saw, and the taxonomy
category of the root cause that its thread established (a maintainer's diagnosis, the fix that closed it, the
reporter confirming what solved it), with the thread's URL and the quote that establishes the cause. None of them is
a case of the evaluation corpus (fixtures/cases): the prior is fitted on other reports than those it is judged on.

The model is a multinomial naive Bayes over the complaint's word features (each feature counted once per report,
Laplace smoothing, the class prior flattened by an exponent), fitted once per process on first use: a few hundred
rows take milliseconds. ``posterior(features)`` gives P(category | features); the rules that read it (checks/symptom.py)
use it only where the facts decide nothing: to choose among the categories a symptom class points at when none of
its rules fires, and to name a likely cause of a complaint whose words match no symptom class.

Pure data access and arithmetic; the features of a text are ``words(text)`` plus whatever the caller adds (the
symptom classes the complaint parser found), each a string.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spec_doctor.knowledge.data import text as data_text
from spec_doctor.knowledge.data import threshold

DATA_FILE = "rootcauses.jsonl"
# Texts that state no problem (questions, feature requests, figures of a working run): the rows of the complaint
# vocabulary's labelled set (complaints.jsonl) that name no symptom class. They are the prior's "no complaint" class,
# so that words that look like a question rather than a report point nowhere.
NEUTRAL_FILE = "complaints.jsonl"
NO_COMPLAINT = "no-complaint"
FIELDS = ("text", "category", "basis", "source", "method", "version", "shape", "split")

_WORD = re.compile(r"[a-z][a-z0-9]*(?:[_.+][a-z0-9]+)*|[\u3400-\u9fff]+")
_CJK = re.compile(r"[\u3400-\u9fff]")
# words that say nothing about a cause (English function words and the words every report about this topic uses)
_STOP = frozenset("""a an the and or but if of to in on at by for with from as is are was were be been being it its this
that these those i we you he she they my our your their me us them there here have has had do does did not no so
than then too very can could would should will shall may might must just also only about into over under after before
when while which what who whom how why all any some each more most other such own same both few again further once
vllm model models speculative decoding decode spec using use used run running get got issue bug please help""".split())


def words(text: str) -> list[str]:
    """The word features of a text: lower-cased words (identifiers such as num_speculative_tokens kept whole, and
    their parts), Chinese as character pairs; function words and the topic's own words dropped."""
    out: list[str] = []
    for w in _WORD.findall(text.lower()):
        if _CJK.match(w):
            out += [w[i:i + 2] for i in range(max(1, len(w) - 1))]
            continue
        if w in _STOP or len(w) < 2:
            continue
        out.append(w)
        parts = [p for p in re.split(r"[_.+]", w) if len(p) > 1 and p not in _STOP]
        if len(parts) > 1:
            out += parts
    return out


@dataclass(frozen=True)
class Row:
    text: str
    category: str
    source: str
    split: str


@dataclass(frozen=True)
class Model:
    """A fitted naive Bayes: per category its log prior, its log likelihood per feature and for an unseen one."""

    log_prior: Mapping[str, float]
    log_like: Mapping[str, Mapping[str, float]]
    log_unseen: Mapping[str, float]
    support: Mapping[str, int]  # reports per category
    vocabulary: frozenset[str]

    def posterior(self, features: Iterable[str]) -> dict[str, float]:
        """P(category | features), features outside the fitted vocabulary ignored; {} when none is known."""
        feats = {f for f in features if f in self.vocabulary}
        if not feats:
            return {}
        return _normalised({c: self.log_prior[c] + self._log_likelihood(c, feats) for c in self.log_prior})

    def _log_likelihood(self, category: str, feats: set[str]) -> float:
        return sum(self.log_like[category].get(f, self.log_unseen[category]) for f in feats)

    def likelihood_shares(self, features: Iterable[str], among: Iterable[str]) -> dict[str, float]:
        """P(features | category) normalised over ``among`` (the categories in it the model knows): the words' own
        evidence with a flat prior, for a caller whose base rate comes from elsewhere (a symptom class's default).
        Most probable first; {} when no feature is known or no category of ``among`` is."""
        feats = {f for f in features if f in self.vocabulary}
        cats = [c for c in dict.fromkeys(among) if c in self.log_like]
        if not feats or not cats:
            return {}
        return _normalised({c: self._log_likelihood(c, feats) for c in cats})


def _normalised(log_scores: Mapping[str, float]) -> dict[str, float]:
    """Log scores as probabilities summing to one, most probable first."""
    top = max(log_scores.values())
    exp = {c: math.exp(v - top) for c, v in log_scores.items()}
    total = sum(exp.values())
    return {c: v / total for c, v in sorted(exp.items(), key=lambda kv: -kv[1])}


@functools.cache
def rows() -> tuple[Row, ...]:
    """The data file's rows (knowledge/data/rootcauses.jsonl)."""
    return tuple(Row(r["text"], r["category"], r["source"], r.get("split") or "fit") for r in _jsonl(DATA_FILE))


@functools.cache
def neutral_rows() -> tuple[Row, ...]:
    """The texts that state no problem (knowledge/data/complaints.jsonl rows with no symptom class), as rows of the
    ``no-complaint`` class."""
    return tuple(Row(r["text"], NO_COMPLAINT, r["source"], r.get("split") or "fit")
                 for r in _jsonl(NEUTRAL_FILE) if not r.get("classes"))


def _jsonl(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data_text(name).splitlines() if line.strip()]


def fit(samples: Sequence[tuple[Sequence[str], str]], *, alpha: float | None = None,
        prior_power: float | None = None) -> Model:
    """Fit on (features, category) samples: each feature counted once per sample."""
    alpha = threshold("complaint_prior_alpha") if alpha is None else alpha
    prior_power = threshold("complaint_prior_power") if prior_power is None else prior_power
    per_cat: dict[str, Counter[str]] = {}
    support: Counter[str] = Counter()
    for feats, cat in samples:
        support[cat] += 1
        per_cat.setdefault(cat, Counter()).update(set(feats))
    vocab = frozenset(f for c in per_cat.values() for f in c)
    n = sum(support.values())
    raw = {c: (support[c] / n) ** prior_power for c in support}
    z = sum(raw.values())
    log_prior = {c: math.log(v / z) for c, v in raw.items()}
    log_like: dict[str, dict[str, float]] = {}
    log_unseen: dict[str, float] = {}
    for c, counts in per_cat.items():
        denom = sum(counts.values()) + alpha * len(vocab)
        log_like[c] = {f: math.log((k + alpha) / denom) for f, k in counts.items()}
        log_unseen[c] = math.log(alpha / denom)
    return Model(log_prior, log_like, log_unseen, dict(support), vocab)

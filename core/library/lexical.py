"""The lexical half of the library's hybrid score: BM25 over each field's words.

Embeddings find a job asked for in other words; they blur the words that tell two jobs of
one domain apart ("reconcile the bank statement" / "audit the expense claims"), and a
short request shares few of them with a long prompt. BM25 scores exactly those shared
words, weighted by how rare they are among the stored entries. A search fuses both per
entry (``search.py``): ``(1 − lexical_weight) · cosines + lexical_weight · bm25``.

Words: lower-cased runs of letters and digits (``read_file`` → ``read``, ``file``), common
English function words and single characters ("team's" → ``team``) dropped, the rest
reduced to their Snowball stem (PyStemmer: "reconciles", "reconciliation" →
``reconcil``), so a request and a prompt match across word forms. Each entry keeps its
words' counts per field, and Redis keeps how many entries hold each word
(``lexical_store.py``); a query only reads those counts for its own words and scores the
embedding's candidates, so its cost does not grow with the library.

The score of one field is BM25 (k1 = 1.2, b = 0.75, the usual defaults) divided by its
upper bound for the query — every query word present, with a count high enough to
saturate — so it lies in 0..1 like a cosine and means the same for every query: the
share of the query's (rarity-weighted) words the field holds. Words no entry holds count
in that bound too, so a request mostly about something nobody stored scores low.

Written here rather than taken from bm25s or rank_bm25: both index a fixed corpus at once
(sparse matrices, rebuilt to add a document), where the library adds and removes entries
one at a time from many workers and scores a few dozen candidates per query.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import Stemmer

K1 = 1.2
B = 0.75
# Bumped whenever terms() changes: the counts stored with the entries are then rebuilt
# (upgrade.ensure_lexical), as stems of two versions would not match.
VERSION = "1"

_WORD = re.compile(r"[^\W_]+")
_STOP = frozenset(
    """a about above after again all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers him his how i if in into is it its
    just me more most my no nor not now of off on once only or other our ours out over own
    please same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours""".split()
)
_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    # A PyStemmer object must not be shared between threads.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def terms(text: str) -> list[str]:
    """The words of ``text`` BM25 counts, in order: lower-cased, stemmed, no stop words."""
    words = [w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in _STOP]
    return list(_stemmer().stemWords(words))


def term_counts(text: str) -> dict[str, int]:
    """How often each of ``text``'s terms occurs in it."""
    return dict(Counter(terms(text)))


@dataclass(frozen=True, slots=True)
class FieldStats:
    """What BM25 needs to know of one field across the stored entries of one kind."""

    docs: int
    length: int  # terms in all of them
    df: Mapping[str, int]  # entries holding the term (for the query's terms)

    def idf(self, term: str) -> float:
        """Rarity of ``term``: ln(1 + (N − n + ½) / (n + ½)), always above 0."""
        held = min(self.df.get(term, 0), self.docs)
        return math.log(1.0 + (self.docs - held + 0.5) / (held + 0.5))


class BM25:
    """One query's BM25 on one field, as a share of the most the query could score there
    (0..1; see the module docstring). Built once per search, called per candidate."""

    def __init__(self, query: Collection[str], stats: FieldStats) -> None:
        self.idf = {term: stats.idf(term) for term in set(query)} if stats.docs else {}
        self.bound = sum(self.idf.values()) * (K1 + 1.0)
        self.average_length = stats.length / stats.docs if stats.docs else 0.0

    def __call__(self, counts: Mapping[str, int]) -> float:
        """The score of a field holding these terms (how often each)."""
        if not self.bound:
            return 0.0
        length = sum(counts.values())
        norm = K1 * (1.0 - B + B * length / max(self.average_length, 1e-9))
        score = 0.0
        for term, idf in self.idf.items():
            tf = counts.get(term, 0)
            if tf:
                score += idf * tf * (K1 + 1.0) / (tf + norm)
        return score / self.bound

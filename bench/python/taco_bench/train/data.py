"""The training data: bytes of real text available offline, split into train and
validation streams, and the batch offsets (a pure function of seed and step)."""

from __future__ import annotations

import hashlib
import os

import numpy as np

VAL_EVERY_NTH_DOC = 20

_CORPUS_CACHE: dict = {}


def corpus_documents(which: str = "stdlib") -> list:
    """The documents (bytes), deterministic order: help topics, then (stdlib) every
    .py/.txt file of the standard library by sorted relative path, without
    site-packages/dist-packages/__pycache__."""
    import pydoc_data.topics as topics

    docs = [topics.topics[k].encode("utf-8") for k in sorted(topics.topics)]
    if which == "pydoc":
        return docs
    if which != "stdlib":
        raise ValueError(f"unknown corpus {which!r} (stdlib, pydoc)")
    import sysconfig

    root = sysconfig.get_paths()["stdlib"]
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in ("site-packages", "dist-packages", "__pycache__")]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith((".py", ".txt"))]
    for rel in sorted(files):
        try:
            with open(os.path.join(root, rel), "rb") as f:
                docs.append(f.read())
        except OSError:
            continue
    return docs


class Corpus:
    """Train and validation byte streams (documents joined by a blank line)."""

    def __init__(self, which: str = "stdlib"):
        docs = corpus_documents(which)
        tr = [d for i, d in enumerate(docs) if i % VAL_EVERY_NTH_DOC != VAL_EVERY_NTH_DOC - 1]
        va = [d for i, d in enumerate(docs) if i % VAL_EVERY_NTH_DOC == VAL_EVERY_NTH_DOC - 1]
        self.train = np.frombuffer(b"\n\n".join(tr), np.uint8)
        self.val = np.frombuffer(b"\n\n".join(va), np.uint8)
        h = hashlib.sha256()
        for d in docs:
            h.update(hashlib.sha256(d).digest())
        self.sha256 = h.hexdigest()[:16]
        self.name, self.documents = which, len(docs)

    def info(self) -> dict:
        return {"corpus": self.name, "documents": self.documents, "train_bytes": int(self.train.size),
                "val_bytes": int(self.val.size), "sha256": self.sha256}


def batch_offsets(n: int, seq: int, batch: int, seed: int, step: int) -> np.ndarray:
    """Random window starts for `step`: a pure function of (seed, step)."""
    return np.random.default_rng([int(seed), int(step), 0x7A]).integers(0, n - seq - 1, size=batch)


def val_offsets(n: int, seq: int, count: int) -> np.ndarray:
    """`count` fixed, evenly spread windows of the validation stream."""
    span = n - seq - 1
    if span <= 0:
        raise ValueError("validation split shorter than one sequence")
    return (np.arange(count, dtype=np.int64) * span) // max(1, count)



def get_corpus(which: str) -> Corpus:
    """The corpus `which`, read once per process."""
    if which not in _CORPUS_CACHE:
        _CORPUS_CACHE[which] = Corpus(which)
    return _CORPUS_CACHE[which]

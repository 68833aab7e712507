"""Sentence embeddings from a sentence-transformers BERT folder, computed here
from the original weights with numpy (no torch, no llama.cpp): the reference
the converted GGUF's vectors are checked against.

Usage: bert_reference.py FOLDER < sentences (one per line)  ->  JSON list of
vectors (mean-pooled over the tokens, length 1), one per sentence.
"""

import json
import math
import os
import sys

import numpy as np
from tokenizers import Tokenizer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "models"))
from bert_gguf import read_safetensors  # noqa: E402


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


class Bert:
    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.config = json.load(f)
        self.w = read_safetensors(os.path.join(folder, "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()

    def linear(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def norm(self, x, name):
        return layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"],
                          self.config["layer_norm_eps"])

    def embed(self, text):
        ids = self.tokenizer.encode(text).ids
        n, heads = len(ids), self.config["num_attention_heads"]
        size = self.config["hidden_size"] // heads
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self.norm(x, "embeddings.LayerNorm")
        for layer in range(self.config["num_hidden_layers"]):
            p = f"encoder.layer.{layer}."
            q, k, v = (self.linear(x, p + "attention.self." + t)
                       .reshape(n, heads, size).transpose(1, 0, 2)
                       for t in ("query", "key", "value"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            attended = (scores @ v).transpose(1, 0, 2).reshape(n, heads * size)
            x = self.norm(x + self.linear(attended, p + "attention.output.dense"),
                          p + "attention.output.LayerNorm")
            hidden = gelu(self.linear(x, p + "intermediate.dense"))
            x = self.norm(x + self.linear(hidden, p + "output.dense"), p + "output.LayerNorm")
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled)


def main(argv):
    bert = Bert(argv[0])
    sentences = [line.rstrip("\n") for line in sys.stdin if line.strip()]
    json.dump([bert.embed(s).astype(float).tolist() for s in sentences], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

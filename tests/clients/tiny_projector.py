"""Writes a tiny vision projector with random weights for a text model, so
that the image path (llama.cpp's mtmd) can be tested without a real vision
model, which cannot be downloaded here.

Usage: tiny_projector.py TEXT_EMBD OUT.gguf

A LLaVA-style projector ("mlp"): a one-block ViT over 64x64 images in 8x8
patches (64 image tokens), then two linear layers up to TEXT_EMBD, the text
model's embedding width. The weights are random (a fixed seed, so the file
is the same on every machine): it proves that images become tokens that are
decoded, cached and reused; it cannot make a model understand a picture."""

import sys

import numpy as np
from gguf import GGUFWriter

text_embd, out = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(20261126)
width, heads, ffn, image, patch, hidden = 32, 2, 64, 64, 8, 64
patches = (image // patch) ** 2


def weights(*shape, scale=0.02):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


w = GGUFWriter(out, "clip")
w.add_string("general.name", "hearth test projector (random weights)")
w.add_string("clip.projector_type", "mlp")
w.add_bool("clip.has_vision_encoder", True)
w.add_bool("clip.use_gelu", True)
w.add_uint32("clip.vision.image_size", image)
w.add_uint32("clip.vision.patch_size", patch)
w.add_uint32("clip.vision.embedding_length", width)
w.add_uint32("clip.vision.feed_forward_length", ffn)
w.add_uint32("clip.vision.block_count", 1)
w.add_uint32("clip.vision.projection_dim", text_embd)
w.add_uint32("clip.vision.attention.head_count", heads)
w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])

# numpy shapes are ggml's dimensions reversed: a linear layer is (out, in).
w.add_tensor("v.patch_embd.weight", weights(width, 3, patch, patch).astype(np.float16))
w.add_tensor("v.patch_embd.bias", weights(width))
w.add_tensor("v.position_embd.weight", weights(patches, width))
w.add_tensor("v.pre_ln.weight", np.ones(width, np.float32))
w.add_tensor("v.pre_ln.bias", np.zeros(width, np.float32))
for name, shape in [("attn_q", (width, width)), ("attn_k", (width, width)), ("attn_v", (width, width)),
                    ("attn_out", (width, width)), ("ffn_up", (ffn, width)), ("ffn_down", (width, ffn))]:
    w.add_tensor(f"v.blk.0.{name}.weight", weights(*shape))
    w.add_tensor(f"v.blk.0.{name}.bias", weights(shape[0]))
for norm in ["ln1", "ln2"]:
    w.add_tensor(f"v.blk.0.{norm}.weight", np.ones(width, np.float32))
    w.add_tensor(f"v.blk.0.{norm}.bias", np.zeros(width, np.float32))
w.add_tensor("mm.0.weight", weights(hidden, width))
w.add_tensor("mm.0.bias", weights(hidden))
w.add_tensor("mm.2.weight", weights(text_embd, hidden))
w.add_tensor("mm.2.bias", weights(text_embd))

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

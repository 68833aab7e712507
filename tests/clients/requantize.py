"""Writes a GGUF model again with its quantized tensors dequantized to F16
or F32:
a larger, slower copy of a model with the very same vocabulary and nearly
the same predictions, so the small original can serve as its draft model
(speculative decoding) where no larger model of the family can be fetched.

Usage: requantize.py IN.gguf OUT.gguf [f16|f32]

Metadata and every other tensor are copied as they are."""

import sys

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFWriter
from gguf.constants import GGUFValueType
from gguf.quants import dequantize

src, out = sys.argv[1], sys.argv[2]
wide = np.float32 if sys.argv[3:] == ["f32"] else np.float16
reader = GGUFReader(src)
arch = reader.fields["general.architecture"]
arch = bytes(arch.parts[arch.data[0]]).decode()
writer = GGUFWriter(out, arch)

for name, field in reader.fields.items():
    if name.startswith("GGUF.") or name in ("general.architecture", "general.name"):
        continue
    kind = field.types[0]
    if kind == GGUFValueType.ARRAY:
        sub = field.types[-1]
        if sub == GGUFValueType.STRING:
            value = [bytes(field.parts[i]).decode("utf-8", "replace") for i in field.data]
        else:
            value = [field.parts[i][0].item() for i in field.data]
        writer.add_key_value(name, value, kind, sub_type=sub)
    elif kind == GGUFValueType.STRING:
        writer.add_key_value(name, bytes(field.parts[field.data[0]]).decode("utf-8", "replace"), kind)
    else:
        writer.add_key_value(name, field.parts[field.data[0]][0].item(), kind)
writer.add_string("general.name", f"hearth test copy in {np.dtype(wide).name}")

keep = {GGMLQuantizationType.F32, GGMLQuantizationType.F16}
for t in reader.tensors:
    if t.tensor_type in keep:
        data = np.array(t.data)
        writer.add_tensor(t.name, data, raw_dtype=t.tensor_type)
    else:
        data = dequantize(t.data, t.tensor_type).astype(wide)
        writer.add_tensor(t.name, data)

writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()

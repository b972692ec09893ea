#!/usr/bin/env python3
"""Copies a GGUF with one metadata key set (added or replaced), for the loaders' refusal tests.

  test/vision/gguf_edit.py IN OUT KEY JSON
      JSON: a string, a number (an integer is written uint32, else float32), a boolean, or an
      array of numbers (int32 when all are integers). Tensors and other keys are copied as they are.
"""
from __future__ import annotations

import json
import sys


def main(src: str, dst: str, key: str, raw: str) -> None:
    import gguf
    value = json.loads(raw)
    r = gguf.GGUFReader(src)
    arch = r.fields['general.architecture'].contents()
    w = gguf.GGUFWriter(dst, arch)
    for name, field in r.fields.items():
        if name.startswith('GGUF.') or name in ('general.architecture', key):
            continue
        sub = field.types[1] if len(field.types) > 1 else None
        w.add_key_value(name, field.contents(), field.types[0], sub_type=sub)
    if isinstance(value, bool):
        w.add_bool(key, value)
    elif isinstance(value, str):
        w.add_string(key, value)
    elif isinstance(value, int):
        w.add_uint32(key, value)
    elif isinstance(value, float):
        w.add_float32(key, value)
    else:
        w.add_array(key, value)
    for t in r.tensors:
        w.add_tensor(t.name, t.data, raw_shape=list(reversed([int(d) for d in t.shape])), raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == '__main__':
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])

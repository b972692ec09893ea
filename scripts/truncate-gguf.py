#!/usr/bin/env python3
"""Writes a copy of a GGUF model with only its first N decoder layers (a genuinely smaller
model with the same vocabulary, for speculative decoding's draft-model tests and benchmark):
every key/value is copied except the layer count, every tensor except those of layers >= N,
byte for byte (quantized blocks stay as they are). The result is the source model's first N
layers followed by its final norm and output head, which is what layer skipping at N runs.

Usage: scripts/truncate-gguf.py SOURCE.gguf N OUT.gguf
"""
import os
import re
import sys
import tempfile
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    import gguf
    from gguf import GGUFReader, GGUFValueType

    source, layers, out = Path(argv[1]), int(argv[2]), Path(argv[3])
    reader = GGUFReader(str(source))
    arch = bytes(reader.fields['general.architecture'].parts[-1]).decode('utf-8')
    count_key = f'{arch}.block_count'
    total = int(reader.fields[count_key].parts[-1][0])
    if not 1 <= layers <= total:
        print(f'N: must be in [1, {total}] (the model has {total} layers), got {layers}', file=sys.stderr)
        return 2
    fd, tmp = tempfile.mkstemp(prefix=f'.{out.name}-', dir=out.parent)
    os.close(fd)
    try:
        w = gguf.GGUFWriter(tmp, arch)
        for key, field in reader.fields.items():
            if key.startswith('GGUF.') or key == 'general.architecture':
                continue
            vtype = field.types[0]
            if key == count_key:
                w.add_block_count(layers)
            elif key == 'general.name':
                name = bytes(field.parts[field.data[0]]).decode('utf-8')
                w.add_name(f'{name} (first {layers} of {total} layers)')
            elif vtype == GGUFValueType.ARRAY:
                sub = field.types[1]
                if sub == GGUFValueType.STRING:
                    value = [bytes(field.parts[i]).decode('utf-8') for i in field.data]
                else:
                    value = [field.parts[i].tolist()[0] for i in field.data]
                w.add_key_value(key, value, vtype, sub_type=sub)
            elif vtype == GGUFValueType.STRING:
                w.add_key_value(key, bytes(field.parts[field.data[0]]).decode('utf-8'), vtype)
            else:
                w.add_key_value(key, field.parts[field.data[0]].tolist()[0], vtype)
        block = re.compile(r'^blk\.(\d+)\.')
        for t in reader.tensors:
            m = block.match(t.name)
            if m and int(m.group(1)) >= layers:
                continue
            w.add_tensor(t.name, t.data, raw_shape=t.data.shape, raw_dtype=t.tensor_type)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Decodes KV-event payloads with vLLM's own event types: msgspec Structs declared as vLLM
declares them in vllm/distributed/kv_events.py (array_like, omit_defaults, tagged events), so
msgspec's typed decoder checks every field's position and type as a vLLM consumer would.

stdin: one payload per line, hex. stdout: JSON {"batches": n, "BlockStored": blocks,
"BlockRemoved": blocks, "AllBlocksCleared": n, "loraNames": [...], "mediums": [...]}.
A payload that does not decode is an error naming it (exit 1).
"""
import json
import sys
from typing import Any, Optional, Union

import msgspec

# vLLM: ExternalBlockHash = bytes | int
ExternalBlockHash = Union[bytes, int]


class EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: Optional[int] = None


class KVCacheEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
    pass


class BlockStored(KVCacheEvent):
    block_hashes: list[ExternalBlockHash]
    parent_block_hash: Optional[ExternalBlockHash]
    token_ids: list[int]
    block_size: int
    lora_id: Optional[int]
    medium: Optional[str]
    lora_name: Optional[str]
    extra_keys: Optional[list[Optional[tuple[Any, ...]]]] = None
    group_idx: Optional[int] = None
    kv_cache_spec_kind: Optional[str] = None
    kv_cache_spec_sliding_window: Optional[int] = None


class BlockRemoved(KVCacheEvent):
    block_hashes: list[ExternalBlockHash]
    medium: Optional[str]
    group_idx: Optional[int] = None


class AllBlocksCleared(KVCacheEvent):
    pass


class KVEventBatch(EventBatch):
    events: list[Union[BlockStored, BlockRemoved, AllBlocksCleared]]


def main():
    decoder = msgspec.msgpack.Decoder(type=KVEventBatch)
    out = {"batches": 0, "BlockStored": 0, "BlockRemoved": 0, "AllBlocksCleared": 0}
    loras, mediums = set(), set()
    for i, line in enumerate(sys.stdin):
        try:
            batch = decoder.decode(bytes.fromhex(line.strip()))
        except msgspec.DecodeError as e:
            print(f"payload {i}: {e}", file=sys.stderr)
            return 1
        out["batches"] += 1
        for ev in batch.events:
            if isinstance(ev, BlockStored):
                assert len(ev.token_ids) == len(ev.block_hashes) * ev.block_size
                out["BlockStored"] += len(ev.block_hashes)
                if ev.lora_name is not None:
                    loras.add(ev.lora_name)
                mediums.add(ev.medium)
            elif isinstance(ev, BlockRemoved):
                out["BlockRemoved"] += len(ev.block_hashes)
                mediums.add(ev.medium)
            else:
                out["AllBlocksCleared"] += 1
    out["loraNames"], out["mediums"] = sorted(loras), sorted(mediums)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

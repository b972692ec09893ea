"""Reference answers from Python transformers for the tokenizer tests (engine/tokenizer/*.test.ts).

Reads one JSON request on stdin and writes one JSON answer on stdout:
  {"model": DIR, "gguf_file": NAME|null,          # AutoTokenizer.from_pretrained(DIR[, gguf_file=NAME])
   "tokenizer_json": PATH|null,                    # or a bare tokenizers.Tokenizer.from_file(PATH)
   "strings": [...], "id_lists": [[...], ...], "conversations": [{"messages": [...], "add_generation_prompt": bool, "tools": [...]|null}]}
answer: {"encode": [{"with_special": [...], "without_special": [...]}],
         "decode": [{"keep": str, "skip": str}],   # for each id list
         "chat": [str | {"error": str}]}

`dump-gguf-metadata FILE OUT` writes a GGUF file's metadata as JSON (used by the tests only
while the native addon, which reads GGUF metadata in production, is not built).
"""

import json
import os
import sys

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def dump_gguf_metadata(path, out):
    from gguf import GGUFReader, GGUFValueType

    reader = GGUFReader(path)
    meta = {}
    for key, f in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        kind = f.types[0]
        if kind == GGUFValueType.ARRAY:
            if f.types[1] == GGUFValueType.STRING:
                meta[key] = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
            else:
                meta[key] = [f.parts[i].tolist()[0] for i in f.data]
        elif kind == GGUFValueType.STRING:
            meta[key] = bytes(f.parts[f.data[0]]).decode("utf-8")
        else:
            meta[key] = f.parts[f.data[0]].tolist()[0]
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(meta, fh, ensure_ascii=False)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "dump-gguf-metadata":
        dump_gguf_metadata(sys.argv[2], sys.argv[3])
        return
    request = json.load(sys.stdin)
    answer = {"encode": [], "decode": [], "chat": []}
    if request.get("tokenizer_json"):
        from tokenizers import Tokenizer

        bare = Tokenizer.from_file(request["tokenizer_json"])
        for text in request.get("strings", []):
            answer["encode"].append(
                {
                    "with_special": bare.encode(text, add_special_tokens=True).ids,
                    "without_special": bare.encode(text, add_special_tokens=False).ids,
                }
            )
        for ids in request.get("id_lists", []):
            answer["decode"].append(
                {"keep": bare.decode(ids, skip_special_tokens=False), "skip": bare.decode(ids, skip_special_tokens=True)}
            )
    else:
        from transformers import AutoTokenizer

        kwargs = {"gguf_file": request["gguf_file"]} if request.get("gguf_file") else {}
        tok = AutoTokenizer.from_pretrained(request["model"], **kwargs)
        for text in request.get("strings", []):
            answer["encode"].append(
                {
                    "with_special": tok(text, add_special_tokens=True)["input_ids"],
                    "without_special": tok(text, add_special_tokens=False)["input_ids"],
                }
            )
        for ids in request.get("id_lists", []):
            answer["decode"].append(
                {"keep": tok.decode(ids, skip_special_tokens=False), "skip": tok.decode(ids, skip_special_tokens=True)}
            )
        for conv in request.get("conversations", []):
            try:
                answer["chat"].append(
                    tok.apply_chat_template(
                        conv["messages"],
                        tools=conv.get("tools"),
                        tokenize=False,
                        add_generation_prompt=conv["add_generation_prompt"],
                    )
                )
            except Exception as error:  # a template's raise_exception
                answer["chat"].append({"error": str(error)})
        answer["info"] = {
            "bos_token_id": tok.bos_token_id,
            "eos_token_id": tok.eos_token_id,
            "vocab_size": len(tok),
        }
    json.dump(answer, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()

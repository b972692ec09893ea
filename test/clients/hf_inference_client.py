"""Hugging Face's `InferenceClient` (huggingface_hub) against the server, out of the box: no
model named (the client then sends its placeholder name), chat with each `response_format`
form it sends (TGI's `json` with `value`, OpenAI's `json_schema`, which the client rewrites to
`json_object` with `value`, and `regex`), a streamed chat, and TGI's `text_generation`.

Usage: python3 test/clients/hf_inference_client.py BASE_URL
Prints one JSON object; the test checks the JSON answers against the schema.
"""
import json
import sys

from huggingface_hub import InferenceClient

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


def main() -> None:
    base_url = sys.argv[1]
    client = InferenceClient(base_url=base_url, timeout=120)
    messages = [{"role": "user", "content": "Describe a person as JSON with a name and an age."}]
    out: dict = {}

    plain = client.chat_completion(messages=[{"role": "user", "content": "Say hello."}], max_tokens=8, temperature=0)
    out["plain"] = {"model": plain.model, "content": plain.choices[0].message.content}

    forms = {
        "tgi_json": {"type": "json", "value": SCHEMA},
        "json_schema": {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}},
        "tgi_regex": {"type": "regex", "value": "(yes|no), [a-z]{3,8}"},
    }
    for key, response_format in forms.items():
        r = client.chat_completion(messages=messages, response_format=response_format, max_tokens=60, temperature=0)
        out[key] = {"content": r.choices[0].message.content, "finish_reason": r.choices[0].finish_reason}

    streamed = ""
    for chunk in client.chat_completion(
        messages=[{"role": "user", "content": "Say hello."}], max_tokens=8, temperature=0, stream=True
    ):
        if chunk.choices:
            streamed += chunk.choices[0].delta.content or ""
    out["streamed"] = streamed

    generated = client.text_generation("The capital of France is", max_new_tokens=6, details=True)
    out["text_generation"] = {
        "text": generated.generated_text,
        "tokens": len(generated.details.tokens),
        "finish_reason": generated.details.finish_reason,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()

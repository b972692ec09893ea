"""One chat completion and one streamed chat through the official Python `openai` SDK.

Usage: python3 test/clients/openai_chat.py BASE_URL MODEL
Prints one JSON object: the plain answer, the streamed answer, finish reasons and usage.
"""
import json
import sys

from openai import OpenAI


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    client = OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
    messages = [{"role": "user", "content": "Name three colors."}]

    whole = client.chat.completions.create(model=model, messages=messages, max_tokens=8, temperature=0)

    streamed, finish, usage = "", None, None
    stream = client.chat.completions.create(
        model=model, messages=messages, max_tokens=8, temperature=0, stream=True, stream_options={"include_usage": True}
    )
    for chunk in stream:
        if chunk.choices:
            streamed += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        elif chunk.usage is not None:
            usage = chunk.usage.model_dump()

    try:
        client.chat.completions.create(model="no-such-model", messages=messages)
        not_found = None
    except Exception as err:  # the SDK's class name is what the test checks
        not_found = type(err).__name__

    print(
        json.dumps(
            {
                "content": whole.choices[0].message.content,
                "finish_reason": whole.choices[0].finish_reason,
                "usage": whole.usage.model_dump(),
                "streamed": streamed,
                "stream_finish_reason": finish,
                "stream_usage": usage,
                "not_found_error": not_found,
            }
        )
    )


if __name__ == "__main__":
    main()

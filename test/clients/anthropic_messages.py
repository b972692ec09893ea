"""Anthropic's Messages API through the official Python `anthropic` SDK.

Usage: python3 test/clients/anthropic_messages.py BASE_URL MODEL
Prints one JSON object: a created message, the same request streamed (text and events), a
forced tool call and the answer to its tool_result, count_tokens, and the errors the SDK raised.
"""

import json
import sys

import anthropic
from openai_images import drawn

# temperature is not among the SDK's arguments any more (newer models take none); other clients send it.
GREEDY = {"temperature": 0}


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    client = anthropic.Anthropic(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
    messages = [{"role": "user", "content": "Name three colors."}]
    system = [{"type": "text", "text": "You are a helpful assistant."}]

    created = client.messages.create(
        model=model, max_tokens=12, system=system, messages=messages, metadata={"user_id": "u-1"}, extra_body=GREEDY
    )

    event_types = []
    with client.messages.stream(model=model, max_tokens=12, extra_body=GREEDY, system=system, messages=messages) as s:
        for event in s:
            event_types.append(event.type)
        final = s.get_final_message()

    stopped = client.messages.create(
        model=model, max_tokens=40, extra_body=GREEDY, messages=messages, stop_sequences=["\n", ","]
    )

    tools = [
        {
            "name": "get_weather",
            "description": "Current weather of a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }
    ]
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    call = client.messages.create(
        model=model, max_tokens=60, extra_body=GREEDY, tools=tools, tool_choice={"type": "any", "disable_parallel_tool_use": True}, messages=ask
    )
    use = next(b for b in call.content if b.type == "tool_use")
    with client.messages.stream(
        model=model, max_tokens=60, extra_body=GREEDY, tools=tools, tool_choice={"type": "any", "disable_parallel_tool_use": True}, messages=ask
    ) as s:
        streamed_call = s.get_final_message()
    streamed_use = next(b for b in streamed_call.content if b.type == "tool_use")
    answer = client.messages.create(
        model=model,
        max_tokens=16,
        extra_body=GREEDY,
        tools=tools,
        messages=[
            *ask,
            {"role": "assistant", "content": [b.model_dump() for b in call.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Sunny, 22 C"}]},
        ],
    )

    count = client.messages.count_tokens(model=model, system=system, messages=messages)
    count_tools = client.messages.count_tokens(model=model, tools=tools, messages=ask)

    errors = {}
    try:
        client.messages.create(model="no-such-model", max_tokens=4, messages=messages)
    except anthropic.APIStatusError as err:
        errors["not_found"] = [type(err).__name__, err.status_code, err.body["error"]["type"]]
    try:
        client.messages.create(model=model, max_tokens=4, messages=messages, extra_body={"temperature": 1.5})
    except anthropic.APIStatusError as err:
        errors["bad_temperature"] = [type(err).__name__, err.status_code, err.body["error"]["message"]]
    # A real PNG: decoded, then refused by the text-only model, naming the block's data.
    png = drawn("PNG").split(",", 1)[1]
    try:
        client.messages.create(
            model=model,
            max_tokens=4,
            messages=[
                {
                    "role": "user",
                    "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}],
                }
            ],
        )
    except anthropic.APIStatusError as err:
        errors["image"] = [type(err).__name__, err.status_code, err.body["error"]["message"]]

    print(
        json.dumps(
            {
                "created": created.model_dump(),
                "streamed": final.model_dump(),
                "event_types": event_types,
                "stopped": stopped.model_dump(),
                "call": call.model_dump(),
                "streamed_call": streamed_call.model_dump(),
                "streamed_use_input": streamed_use.input,
                "answer": answer.model_dump(),
                "count": count.input_tokens,
                "count_tools": count_tools.input_tokens,
                "errors": errors,
            }
        )
    )


if __name__ == "__main__":
    main()

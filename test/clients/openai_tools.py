"""The Python openai SDK's streamed tool-call accumulation against the gateway.

Usage: openai_tools.py BASE_URL MODEL [TOOL_CHOICE_JSON]. With a tool_choice (a forced call on
the real model) the requests are greedy so that the unary and streamed answers agree. Prints JSON: the unary calls and the calls
accumulated from the streamed deltas the way the SDK's documentation shows (by index: the
first delta brings id and name, later ones argument fragments).
"""

import json
import sys

from openai import OpenAI

base_url, model = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base_url, api_key="unused", max_retries=0)
tools = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]
messages = [{"role": "user", "content": "Weather and time in Paris?"}]
extra = {}
if len(sys.argv) > 3:
    extra = {"tool_choice": json.loads(sys.argv[3]), "temperature": 0, "max_tokens": 120}

unary = client.chat.completions.create(model=model, messages=messages, tools=tools, **extra)
calls = {}
finish = None
for chunk in client.chat.completions.create(
    model=model, messages=messages, tools=tools, stream=True, **extra
):
    if not chunk.choices:
        continue
    choice = chunk.choices[0]
    finish = choice.finish_reason or finish
    for d in choice.delta.tool_calls or []:
        c = calls.setdefault(d.index, {"id": None, "name": None, "arguments": ""})
        if d.id:
            c["id"] = d.id
        if d.function and d.function.name:
            c["name"] = d.function.name
        if d.function and d.function.arguments:
            c["arguments"] += d.function.arguments

print(
    json.dumps(
        {
            "unary": [[c.function.name, c.function.arguments] for c in unary.choices[0].message.tool_calls],
            "unary_finish": unary.choices[0].finish_reason,
            "streamed": [[calls[i]["name"], calls[i]["arguments"]] for i in sorted(calls)],
            "streamed_ids": [calls[i]["id"] for i in sorted(calls)],
            "stream_finish": finish,
        }
    )
)

"""Ollama's API through the official Python `ollama` client.

Usage: python3 test/clients/ollama_api.py BASE_URL MODEL [tools]
Prints one JSON object: a chat, the same chat streamed, a generate (whole and streamed), a
structured answer (format as a JSON schema), list / show / ps / version, and the errors the
client raised (a refused pull, an unknown model, a num_ctx too large, embed on a generation model). With
`tools`: a tool call, whole and streamed, and the answer to its result.
"""

import json
import sys

import ollama

GREEDY = {"temperature": 0, "num_predict": 12}


def tool_round_trip(client: ollama.Client, model: str) -> dict:
    """A call (whole and streamed) and the answer to its result; run against a scripted model that calls."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather of a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            },
        }
    ]
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    called = client.chat(model=model, messages=ask, tools=tools)
    streamed = [
        {"name": c.function.name, "arguments": dict(c.function.arguments)}
        for part in client.chat(model=model, messages=ask, tools=tools, stream=True)
        for c in part.message.tool_calls or []
    ]
    follow = client.chat(
        model=model,
        messages=[*ask, called.message, {"role": "tool", "content": "Sunny, 22 C", "tool_name": "get_weather"}],
        tools=tools,
    )
    return {
        "calls": [{"name": c.function.name, "arguments": dict(c.function.arguments)} for c in called.message.tool_calls],
        "content": called.message.content,
        "streamed": streamed,
        "follow": follow.message.content,
    }


def main() -> None:
    host, model = sys.argv[1], sys.argv[2]
    client = ollama.Client(host=host, timeout=120)
    if sys.argv[3:] == ["tools"]:
        print(json.dumps(tool_round_trip(client, model)))
        return
    messages = [{"role": "user", "content": "Name three colors."}]

    chat = client.chat(model=model, messages=messages, options=GREEDY, keep_alive="5m")
    streamed, last = "", None
    for part in client.chat(model=model, messages=messages, options=GREEDY, stream=True):
        streamed += part.message.content or ""
        last = part

    gen = client.generate(model=model, prompt="The capital of France is", options=GREEDY, system="Answer briefly.")
    gen_streamed = "".join(p.response for p in client.generate(model=model, prompt="The capital of France is",
                                                                options=GREEDY, system="Answer briefly.", stream=True))
    raw = client.generate(model=model, prompt="The capital of France is", raw=True, options=GREEDY)
    loaded = client.generate(model=model)

    schema = {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}}, "required": ["color"]}
    structured = client.chat(
        model=model,
        messages=[{"role": "user", "content": "Pick a color."}],
        format=schema,
        options={"temperature": 0, "num_predict": 20},
    )

    listed = client.list()
    shown = client.show(model)
    running = client.ps()
    version = client._request_raw("GET", "/api/version").json()

    errors = {}
    try:
        client.pull("llama3")
    except ollama.ResponseError as err:
        errors["pull"] = [err.status_code, err.error]
    try:
        client.chat(model="no-such-model", messages=messages)
    except ollama.ResponseError as err:
        errors["unknown_model"] = [err.status_code, err.error]
    try:
        client.chat(model=model, messages=messages, options={"num_ctx": 10_000_000})
    except ollama.ResponseError as err:
        errors["num_ctx"] = [err.status_code, err.error]
    try:
        client.embed(model=model, input="hello")
    except ollama.ResponseError as err:
        errors["embed"] = [err.status_code, err.error]

    print(
        json.dumps(
            {
                "chat": chat.model_dump(mode="json"),
                "streamed": streamed,
                "stream_last": last.model_dump(mode="json"),
                "generate": gen.model_dump(mode="json"),
                "generate_streamed": gen_streamed,
                "raw": raw.model_dump(mode="json"),
                "loaded": loaded.model_dump(mode="json"),
                "structured": structured.message.content,
                "list": listed.model_dump(mode="json"),
                "show": shown.model_dump(mode="json", by_alias=True),
                "ps": running.model_dump(mode="json"),
                "version": version,
                "errors": errors,
            }
        )
    )


if __name__ == "__main__":
    main()

"""The Responses API through the official Python `openai` SDK: `client.responses.create`,
`.stream`, `.parse` (a Pydantic model as text.format), a function call and its output sent
back, and the refusal of `previous_response_id`.

Usage: python3 test/clients/openai_responses.py BASE_URL MODEL
Prints one JSON object with what each call returned.
"""
import json
import sys

from openai import BadRequestError, OpenAI
from pydantic import BaseModel, Field


class City(BaseModel):
    name: str = Field(max_length=24)
    population: int = Field(ge=0, le=100_000_000)


WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather of a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 24}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    client = OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
    out: dict = {}

    whole = client.responses.create(
        model=model, input="Name three colors.", instructions="Answer briefly.", max_output_tokens=8, temperature=0
    )
    out["create"] = {
        "id": whole.id,
        "status": whole.status,
        "text": whole.output_text,
        "usage": whole.usage.model_dump(),
        "output_types": [item.type for item in whole.output],
    }

    events = []
    deltas = ""
    final = None
    with client.responses.stream(
        model=model, input="Name three colors.", instructions="Answer briefly.", max_output_tokens=8, temperature=0
    ) as stream:
        for event in stream:
            events.append(event.type)
            if event.type == "response.output_text.delta":
                deltas += event.delta
            if event.type in ("response.completed", "response.incomplete"):
                # 8 tokens cut the answer: the stream ends with response.incomplete, whose
                # Response is the final one (get_final_response wants response.completed).
                final = event.response
    out["stream"] = {
        "events": events,
        "deltas": deltas,
        "final_text": final.output_text,
        "status": final.status,
        "usage": final.usage.model_dump(),
    }

    parsed = client.responses.parse(
        model=model,
        input="Give the name and population of the capital of France as JSON.",
        text_format=City,
        max_output_tokens=60,
        temperature=0,
    )
    out["parse"] = {
        "parsed": parsed.output_parsed.model_dump() if parsed.output_parsed else None,
        "text": parsed.output_text,
        "status": parsed.status,
    }

    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    call_turn = client.responses.create(
        model=model,
        input=question,
        tools=[WEATHER_TOOL],
        tool_choice="required",
        parallel_tool_calls=False,
        max_output_tokens=40,
        temperature=0,
    )
    calls = [item for item in call_turn.output if item.type == "function_call"]
    out["tool_call"] = [{"name": c.name, "arguments": json.loads(c.arguments), "call_id": c.call_id} for c in calls]
    answer_turn = client.responses.create(
        model=model,
        input=question
        + [item.model_dump(exclude_none=True) for item in calls]
        + [{"type": "function_call_output", "call_id": c.call_id, "output": "Sunny, 21 C"} for c in calls],
        tools=[WEATHER_TOOL],
        tool_choice="none",
        max_output_tokens=16,
        temperature=0,
    )
    out["tool_answer"] = {"text": answer_turn.output_text, "output_types": [i.type for i in answer_turn.output]}

    try:
        client.responses.create(model=model, input="hi", previous_response_id=whole.id)
        out["previous_response_id"] = None
    except BadRequestError as err:
        out["previous_response_id"] = {"status": err.status_code, "param": err.body.get("param")}

    print(json.dumps(out))


if __name__ == "__main__":
    main()

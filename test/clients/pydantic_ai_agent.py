"""pydantic-ai (pydantic-ai-slim[openai], pinned in requirements-dev.in) against the real
server through its two OpenAI model classes, as a user of an OpenAI-compatible server sets
them up (OpenAICompatibleProvider with a base URL):

- OpenAIChatModel, structured output the default way (an output tool the model is made to
  call: a forced tool call whose arguments the server constrains to the schema);
- OpenAIChatModel, a function tool round trip (forced on the first step, its result sent back,
  then a text answer), and the same agent streamed (run_stream, text deltas);
- OpenAIResponsesModel, NativeOutput (text.format json_schema through /v1/responses) and a
  function tool round trip.

Usage: python3 test/clients/pydantic_ai_agent.py BASE_URL MODEL
Prints one JSON object.
"""
import asyncio
import json
import sys

from pydantic import BaseModel, Field
from pydantic_ai import Agent, NativeOutput, RunContext
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider


class City(BaseModel):
    # Bounded fields: the server's constraint keeps a small model's answer within max_tokens
    # (an unbounded integer lets it write digits until the limit).
    name: str = Field(max_length=24)
    country: str = Field(max_length=24)
    is_capital: bool


calls: list = []


def get_weather(city: str) -> str:
    """Current weather of a city."""
    calls.append(city)
    return f"Sunny, 21 C in {city}"


def weather_first(ctx: RunContext) -> dict:
    # The first step must call the tool; the step after it answers in text.
    return {
        "tool_choice": ["get_weather"] if ctx.run_step <= 1 else "none",
        "parallel_tool_calls": False,
        "temperature": 0,
        "max_tokens": 60,
    }


def weather_agent(model) -> Agent:
    return Agent(
        model,
        instructions="You answer questions about the weather using the get_weather tool.",
        tools=[get_weather],
        model_settings=weather_first,
    )


def kinds(result) -> list:
    return [part.part_kind for message in result.all_messages() for part in message.parts]


async def main() -> None:
    base_url, model_name = sys.argv[1], sys.argv[2]
    provider = OpenAICompatibleProvider("prism", base_url=base_url, api_key="unused")
    chat = OpenAIChatModel(model_name, provider=provider)
    responses = OpenAIResponsesModel(model_name, provider=provider)
    settings = {"temperature": 0, "max_tokens": 120, "parallel_tool_calls": False}
    out: dict = {}

    city = await Agent(chat, output_type=City, model_settings=settings).run("Describe Paris.")
    out["chat_tool_output"] = city.output.model_dump()
    out["chat_tool_output_parts"] = kinds(city)

    calls.clear()
    weather = await weather_agent(chat).run("What is the weather in Paris?")
    out["chat_tool"] = {"calls": list(calls), "output": weather.output, "parts": kinds(weather)}

    calls.clear()
    async with weather_agent(chat).run_stream("What is the weather in Rome?") as stream:
        deltas = [d async for d in stream.stream_text(delta=True, debounce_by=None)]
    out["chat_stream"] = {"calls": list(calls), "deltas": len(deltas), "text": "".join(deltas)}

    native = await Agent(responses, output_type=NativeOutput(City), model_settings=settings).run("Describe Rome.")
    out["responses_native_output"] = native.output.model_dump()

    calls.clear()
    r_weather = await weather_agent(responses).run("What is the weather in Oslo?")
    out["responses_tool"] = {"calls": list(calls), "output": r_weather.output, "parts": kinds(r_weather)}
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())

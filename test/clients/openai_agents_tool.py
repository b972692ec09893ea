"""The OpenAI Agents SDK's default model (its Responses model, resolved from a model name and
the default client) through one tool round trip: the agent must call `get_weather` (a forced
call on the first turn), runs it, sends the output back and answers.

Usage: python3 test/clients/openai_agents_tool.py BASE_URL MODEL
Prints one JSON object: the model class, the tool calls made, the final output and the items.
"""
import asyncio
import json
import sys

from agents import Agent, ModelSettings, Runner, function_tool, set_default_openai_client, set_tracing_disabled
from agents.models.multi_provider import MultiProvider
from openai import AsyncOpenAI

calls: list = []


@function_tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    calls.append(city)
    return f"Sunny, 21 C in {city}"


async def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    # No network but the test server: no trace export, and the server as the default client.
    set_tracing_disabled(True)
    set_default_openai_client(AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120))
    agent = Agent(
        name="weather",
        instructions="You answer questions about the weather using the get_weather tool.",
        model=model,
        tools=[get_weather],
        model_settings=ModelSettings(tool_choice="required", parallel_tool_calls=False, temperature=0, max_tokens=200),
    )
    result = await Runner.run(agent, "What is the weather in Paris?", max_turns=4)
    print(
        json.dumps(
            {
                # What the Runner resolves a model name to when nothing else is configured.
                "model_class": type(MultiProvider().get_model(model)).__name__,
                "tool_calls": calls,
                "final_output": result.final_output,
                "items": [item.type for item in result.new_items],
                "responses": len(result.raw_responses),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())

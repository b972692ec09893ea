"""LangChain's ChatOpenAI against the OpenAI-compatible routes: a chat, a forced tool call, structured output.

Usage: python3 test/clients/langchain_chat.py BASE_URL MODEL
Prints one JSON object: the chat's text, the tool calls LangChain parsed, the structured object.
"""

import json
import sys

from langchain_openai import ChatOpenAI
from pydantic import BaseModel


class Pick(BaseModel):
    color: str
    count: int


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return "sunny"


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    llm = ChatOpenAI(base_url=base_url, api_key="unused", model=model, temperature=0, max_tokens=40, max_retries=0)
    chat = llm.invoke("Name three colors.")
    called = llm.bind_tools([get_weather], tool_choice="get_weather").invoke("What is the weather in Paris?")
    structured = llm.with_structured_output(Pick, method="json_schema").invoke("Pick a color and a count.")
    streamed = "".join(chunk.content for chunk in llm.stream("Name three colors."))
    print(
        json.dumps(
            {
                "chat": chat.content,
                "streamed": streamed,
                "tool_calls": [{"name": c["name"], "args": c["args"]} for c in called.tool_calls],
                "structured": structured.model_dump(),
            }
        )
    )


if __name__ == "__main__":
    main()

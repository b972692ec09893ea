"""LiteLLM's completion() against the OpenAI-compatible routes and the Ollama routes.

Usage: python3 test/clients/litellm_completion.py BASE_URL MODEL
Prints one JSON object: per provider route, the answer's text, finish reason and usage, and
the streamed text.
"""

import json
import os
import sys

# LiteLLM fetches a model price list at import unless told to use the copy it ships.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402


def run(model: str, api_base: str) -> dict:
    messages = [{"role": "user", "content": "Name three colors."}]
    whole = litellm.completion(
        model=model, api_base=api_base, api_key="unused", messages=messages, max_tokens=12, temperature=0
    )
    streamed = "".join(
        chunk.choices[0].delta.content or ""
        for chunk in litellm.completion(
            model=model,
            api_base=api_base,
            api_key="unused",
            messages=messages,
            max_tokens=12,
            temperature=0,
            stream=True,
        )
    )
    return {
        "text": whole.choices[0].message.content,
        "finish_reason": whole.choices[0].finish_reason,
        "completion_tokens": whole.usage.completion_tokens,
        "prompt_tokens": whole.usage.prompt_tokens,
        "streamed": streamed,
    }


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    print(
        json.dumps(
            {
                "openai": run(f"openai/{model}", f"{base_url}/v1"),
                "ollama_chat": run(f"ollama_chat/{model}", base_url),
                "ollama": run(f"ollama/{model}", base_url),
            }
        )
    )


if __name__ == "__main__":
    main()

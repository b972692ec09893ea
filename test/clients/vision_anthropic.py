"""An image through the unmodified `anthropic` SDK beside the same image through the `openai`
SDK: the PNG openai_images.py draws (64 x 48: 3 x 4 tiles + the global image), first as an
OpenAI chat `image_url` part (a base64 data: URL), then as an Anthropic `image` block (a
base64 source, media_type image/png), each followed by the same question; greedy, created and
streamed. The OpenAI call goes first, so the Anthropic calls read the prompt's blocks from the
prefix cache when their token ids (and image) are the same.

Usage: python3 test/clients/vision_anthropic.py BASE_URL MODEL
Prints one JSON object: the OpenAI call's text and prompt tokens, the Anthropic calls' text and
usage, and the SDK's error for a bad media type.
"""
import json
import sys

import anthropic
from openai import OpenAI
from openai_images import drawn

QUESTION = "What is in this image?"


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    url = drawn("PNG")
    data = url.split(",", 1)[1]
    oa = OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=120).chat.completions.create(
        model=model,
        max_tokens=6,
        temperature=0,
        messages=[
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": QUESTION}]}
        ],
    )
    client = anthropic.Anthropic(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    messages = [{"role": "user", "content": [image, {"type": "text", "text": QUESTION}]}]
    # temperature is not among the SDK's arguments any more; it reaches the server in the body.
    created = client.messages.create(model=model, max_tokens=6, messages=messages, extra_body={"temperature": 0})
    with client.messages.stream(model=model, max_tokens=6, messages=messages, extra_body={"temperature": 0}) as s:
        streamed = s.get_final_message()
    try:
        bad = {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": data}}
        client.messages.create(model=model, max_tokens=2, messages=[{"role": "user", "content": [bad]}])
        error = None
    except anthropic.APIStatusError as err:
        error = [type(err).__name__, err.status_code, err.body["error"]["message"]]
    print(
        json.dumps(
            {
                "openai": {"text": oa.choices[0].message.content, "promptTokens": oa.usage.prompt_tokens},
                "created": {"text": created.content[0].text, "usage": created.usage.model_dump()},
                "streamed": {"text": streamed.content[0].text, "usage": streamed.usage.model_dump()},
                "bad_media_type": error,
            }
        )
    )


if __name__ == "__main__":
    main()

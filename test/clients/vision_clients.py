"""A vision model through unmodified clients, as their documentation sends an image: the
official `openai` SDK (a PNG in a chat `image_url` part, a JPEG in a Responses `input_image`
part) and huggingface_hub's `InferenceClient.chat_completion` (an `image_url` part), each a
base64 data: URL of the picture openai_images.py draws (64 x 48: 3 x 4 tiles + the global image);
the `ollama` client's chat with the same PNG's bytes in a message's `images`; and
`InferenceClient.text_generation` (TGI's POST /, which sends the prompt as `inputs` unchanged)
with the chat's rendering spelled as text, the PNG as an inline `![](data:...)` image where
the template writes the image.

Usage: python3 test/clients/vision_clients.py BASE_URL MODEL
Prints one JSON object: per call its text and prompt token count.
"""
import base64
import json
import sys

import ollama

from huggingface_hub import InferenceClient
from openai import OpenAI
from openai_images import drawn


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    client = OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=120)
    question = {"type": "text", "text": "What is in this image?"}
    chat = client.chat.completions.create(
        model=model,
        max_tokens=6,
        temperature=0,
        messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": drawn("PNG")}}, question]}],
    )
    responses = client.responses.create(
        model=model,
        max_output_tokens=6,
        temperature=0,
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_image", "image_url": drawn("JPEG")},
                    {"type": "input_text", "text": "What is in this image?"},
                ],
            }
        ],
    )
    hf = InferenceClient(base_url=base_url, timeout=120).chat_completion(
        messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": drawn("PNG")}}, question]}],
        max_tokens=6,
        temperature=0,
    )
    # SmolVLM's template renders the chat above so, `<image>` where the image part is.
    tgi = InferenceClient(base_url=base_url, timeout=120).text_generation(
        f"<|im_start|>User:![]({drawn('PNG')})What is in this image?<end_of_utterance>\nAssistant:",
        max_new_tokens=6,
        details=True,
        decoder_input_details=True,
    )
    png = base64.b64decode(drawn("PNG").split(",", 1)[1])
    ol = ollama.Client(host=base_url, timeout=120).chat(
        model=model,
        messages=[{"role": "user", "content": "What is in this image?", "images": [png]}],
        options={"num_predict": 6, "temperature": 0},
    )
    print(
        json.dumps(
            {
                "chat": {"text": chat.choices[0].message.content, "promptTokens": chat.usage.prompt_tokens},
                "responses": {"text": responses.output_text, "promptTokens": responses.usage.input_tokens},
                "hf": {"text": hf.choices[0].message.content, "promptTokens": hf.usage.prompt_tokens},
                "ollama": {"text": ol.message.content, "promptTokens": ol.prompt_eval_count},
                "tgi": {
                    "text": tgi.generated_text,
                    "promptTokens": len(tgi.details.prefill),
                    "generatedTokens": tgi.details.generated_tokens,
                },
            }
        )
    )


if __name__ == "__main__":
    main()

"""Image parts through the official Python `openai` SDK, as its documentation sends them: a
PNG in a chat `image_url` part and a JPEG in a Responses `input_image` part, both drawn here
with Pillow and sent as base64 data: URLs. The served model is text-only, so each must come
back as the SDK's BadRequestError naming the part.

Usage: python3 test/clients/openai_images.py BASE_URL MODEL
Prints one JSON object with each call's status, param and message.
"""
import base64
import io
import json
import sys

from openai import BadRequestError, OpenAI
from PIL import Image, ImageDraw


def drawn(fmt: str) -> str:
    img = Image.new("RGB", (64, 48), (250, 240, 230))
    draw = ImageDraw.Draw(img)
    draw.ellipse((8, 6, 40, 38), fill=(200, 30, 30))
    draw.rectangle((36, 20, 60, 44), fill=(20, 60, 200))
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    mime = "image/png" if fmt == "PNG" else "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(buf.getvalue()).decode()}"


def refusal(call) -> dict:
    try:
        call()
    except BadRequestError as e:
        body = e.body if isinstance(e.body, dict) else {}
        return {"status": e.status_code, "param": body.get("param"), "message": body.get("message")}
    return {"status": 200}


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    client = OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
    out = {
        "chat": refusal(
            lambda: client.chat.completions.create(
                model=model,
                max_tokens=4,
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "What is in this image?"},
                            {"type": "image_url", "image_url": {"url": drawn("PNG")}},
                        ],
                    }
                ],
            )
        ),
        "responses": refusal(
            lambda: client.responses.create(
                model=model,
                max_output_tokens=4,
                input=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "input_text", "text": "What is in this image?"},
                            {"type": "input_image", "image_url": drawn("JPEG"), "detail": "auto"},
                        ],
                    }
                ],
            )
        ),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()

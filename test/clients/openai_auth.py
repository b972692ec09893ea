"""The official Python `openai` SDK with an API key: the right key is answered, a wrong one is 401.

Usage: python3 test/clients/openai_auth.py BASE_URL MODEL GOOD_KEY BAD_KEY
Prints one JSON object: the answer with the good key, and the SDK's error class and status
for the bad key (and whether it carried any completion).
"""
import json
import sys

from openai import OpenAI


def main() -> None:
    base_url, model, good, bad = sys.argv[1:5]
    messages = [{"role": "user", "content": "Say hi."}]
    ok = OpenAI(base_url=base_url, api_key=good, max_retries=0, timeout=120)
    whole = ok.chat.completions.create(model=model, messages=messages, max_tokens=4, temperature=0)

    refused = OpenAI(base_url=base_url, api_key=bad, max_retries=0, timeout=120)
    error, status, code = None, None, None
    try:
        refused.chat.completions.create(model=model, messages=messages, max_tokens=4)
    except Exception as err:  # the SDK's class name is what the test checks
        error = type(err).__name__
        status = getattr(err, "status_code", None)
        code = getattr(err, "code", None)

    print(
        json.dumps(
            {
                "content": whole.choices[0].message.content,
                "usage": whole.usage.model_dump(),
                "bad_key_error": error,
                "bad_key_status": status,
                "bad_key_code": code,
            }
        )
    )


if __name__ == "__main__":
    main()

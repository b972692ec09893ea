"""`tritonclient.http` with its defaults (binary tensor data both ways), sync and async:
health, model metadata, the repository index, and token inference on UINT32 tensors, the
same request as JSON tensors (binary_data=False) for comparison.

Usage: python3 test/clients/triton_http.py HOST:PORT MODEL TOKEN_ID[,TOKEN_ID...]
Prints one JSON object.
"""
import asyncio
import json
import sys

import numpy as np
import tritonclient.http as httpclient
import tritonclient.http.aio as aiohttpclient


def inputs(ids: np.ndarray, binary: bool) -> list:
    tensor = httpclient.InferInput("input0", list(ids.shape), "UINT32")
    tensor.set_data_from_numpy(ids, binary_data=binary)
    return [tensor]


async def async_infer(url: str, model: str, ids: np.ndarray) -> list:
    client = aiohttpclient.InferenceServerClient(url=url)
    try:
        result = await client.infer(model, inputs(ids, True), parameters={"max_new_tokens": 6})
        return result.as_numpy("output0").tolist()
    finally:
        await client.close()


def main() -> None:
    url, model = sys.argv[1], sys.argv[2]
    ids = np.array([[int(t) for t in sys.argv[3].split(",")]], dtype=np.uint32)
    client = httpclient.InferenceServerClient(url=url)
    out: dict = {
        "live": client.is_server_live(),
        "ready": client.is_model_ready(model),
        "metadata": client.get_model_metadata(model),
        "index": client.get_model_repository_index(),
    }
    # Defaults: binary inputs, and with no outputs named, every output binary.
    default = client.infer(model, inputs(ids, True), parameters={"max_new_tokens": 6})
    out["binary_default"] = default.as_numpy("output0").tolist()
    out["binary_default_output"] = default.get_output("output0")
    named = client.infer(
        model, inputs(ids, True), outputs=[httpclient.InferRequestedOutput("output0")], parameters={"max_new_tokens": 6}
    )
    out["binary_named"] = named.as_numpy("output0").tolist()
    as_json = client.infer(
        model,
        inputs(ids, False),
        outputs=[httpclient.InferRequestedOutput("output0", binary_data=False)],
        parameters={"max_new_tokens": 6},
    )
    out["json"] = as_json.as_numpy("output0").tolist()
    out["json_output"] = as_json.get_output("output0")
    out["async_binary"] = asyncio.run(async_infer(url, model, ids))
    try:
        client.infer("no-such-model", inputs(ids, True))
        out["unknown_model"] = None
    except Exception as err:  # InferenceServerException: the status and message are checked
        out["unknown_model"] = {"status": str(getattr(err, "status", lambda: None)()), "message": str(err)}
    client.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()

"""lm-evaluation-harness on the repository's own log-likelihood task (test/lm-eval/), twice:
its `local-completions` model against a running Prism server, and its `hf` model on the same
float weights in transformers.

Usage: python3 test/clients/lm_eval_scores.py COMPLETIONS_URL MODEL_NAME HF_FOLDER
Prints one JSON object: per harness model, the task's metrics and every request's
log-likelihood (in the harness's order: document, then choice). Nothing is downloaded.
"""

import json
import os
import sys

# No hub, no data set downloads, no telemetry: the task's data is a local JSONL.
for var in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
    os.environ[var] = "1"

import lm_eval  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def evaluate(model: str, model_args: str) -> dict:
    results = lm_eval.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=["prism_tiny"],
        task_manager=TaskManager(include_path=os.path.join(ROOT, "test", "lm-eval")),
        num_fewshot=0,
        batch_size=1,
        log_samples=True,
        random_seed=0,
        numpy_random_seed=0,
        torch_random_seed=0,
        fewshot_random_seed=0,
    )
    metrics = results["results"]["prism_tiny"]
    samples = sorted(results["samples"]["prism_tiny"], key=lambda s: s["doc_id"])
    return {
        "acc": metrics["acc,none"],
        "acc_norm": metrics["acc_norm,none"],
        "loglikelihoods": [float(r[0][0]) for s in samples for r in s["resps"]],
        "greedy": [bool(r[0][1]) for s in samples for r in s["resps"]],
    }


def main() -> None:
    url, name, folder = sys.argv[1:4]
    os.chdir(ROOT)  # the task's data path is relative to the repository root
    prism = evaluate(
        "local-completions",
        f"model={name},base_url={url},tokenizer_backend=huggingface,tokenizer={folder},"
        "tokenized_requests=True,num_concurrent=1,max_retries=1",
    )
    hf = evaluate("hf", f"pretrained={folder},dtype=float32,device=cpu")
    print(json.dumps({"prism": prism, "hf": hf}))


if __name__ == "__main__":
    main()

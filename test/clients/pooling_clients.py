"""Pooling clients against the server, out of the box: Hugging Face's InferenceClient
(`feature_extraction` against the TEI routes: base_url is the server, the client posts to
its root, TEI's compat route), LangChain's OpenAIEmbeddings (embed_documents / embed_query
on /v1/embeddings), Ollama's client (`embed`, POST /api/embed) and Cohere's ClientV2.rerank
(POST /v2/rerank).

LangChain's OpenAIEmbeddings tokenizes with tiktoken by default to split long inputs, which
would fetch OpenAI's encoding over the network; `check_embedding_ctx_length=False` (its
documented switch for servers other than OpenAI's) sends the texts as they are.

Usage: python3 test/clients/pooling_clients.py EMBED_URL RERANK_URL
Prints one JSON object with what each client returned.
"""
import json
import sys

import cohere
import ollama
from huggingface_hub import InferenceClient
from langchain_openai import OpenAIEmbeddings


def main() -> None:
    embed_url, rerank_url = sys.argv[1], sys.argv[2]
    out: dict = {}
    hf = InferenceClient(base_url=embed_url, timeout=120)
    one = hf.feature_extraction("The quick brown fox jumps over the lazy dog.")
    two = hf.feature_extraction(["first text", "second text"], normalize=True, truncate=True)
    out["hf"] = {"one_shape": list(one.shape), "one": one.reshape(-1).tolist(), "two_shape": list(two.shape)}

    lc = OpenAIEmbeddings(model="minilm", base_url=f"{embed_url}/v1", api_key="unused", check_embedding_ctx_length=False)
    docs = lc.embed_documents(["A man is playing a guitar.", "The new film is awesome."])
    query = lc.embed_query("Someone plays music.")
    out["langchain"] = {"documents": docs, "query": query}

    ol = ollama.Client(host=embed_url).embed(model="minilm:latest", input=["A man is playing a guitar.", "hi"])
    out["ollama"] = {"model": ol.model, "embeddings": [list(e) for e in ol.embeddings]}

    co = cohere.ClientV2(api_key="unused", base_url=rerank_url, timeout=120)
    r = co.rerank(
        model="reranker",
        query="What is the capital of France?",
        documents=["Berlin is the capital of Germany.", "Paris is the capital of France.", "The sky is blue."],
        top_n=2,
    )
    out["cohere"] = {"id": r.id, "results": [{"index": x.index, "relevance_score": x.relevance_score} for x in r.results]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""sentence-transformers on PyTorch CPU behind a small HTTP server, the comparison point of
`npm run bench:embed`: POST /v1/embeddings ({"input": text or texts}), OpenAI's answer shape.
Requests that arrive while a batch runs wait and are encoded together (up to --max-batch
texts), as a serving deployment of the library batches them; one encode runs at a time on
--threads torch threads.

Usage: st_server.py --model DIR [--port 0] [--threads N] [--max-batch 64]
Prints `listening http://127.0.0.1:PORT` once it serves.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ.setdefault('HF_HUB_OFFLINE', '1')


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', required=True)
    ap.add_argument('--port', type=int, default=0)
    ap.add_argument('--threads', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--max-batch', type=int, default=64)
    args = ap.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer
    torch.set_num_threads(args.threads)
    model = SentenceTransformer(args.model, device='cpu')
    work: queue.Queue = queue.Queue()

    def encoder() -> None:
        while True:
            batch = [work.get()]
            while len(batch) < args.max_batch:
                try:
                    batch.append(work.get_nowait())
                except queue.Empty:
                    break
            texts = [t for item in batch for t in item['texts']]
            with torch.inference_mode():
                vectors = model.encode(texts, batch_size=len(texts), convert_to_numpy=True)
            at = 0
            for item in batch:
                item['result'] = vectors[at:at + len(item['texts'])].tolist()
                at += len(item['texts'])
                item['done'].set()

    threading.Thread(target=encoder, daemon=True).start()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers['content-length'])))
            texts = body['input'] if isinstance(body['input'], list) else [body['input']]
            item = {'texts': texts, 'done': threading.Event()}
            work.put(item)
            item['done'].wait()
            out = json.dumps({'object': 'list', 'data': [{'object': 'embedding', 'index': i, 'embedding': v}
                                                         for i, v in enumerate(item['result'])]}).encode()
            self.send_response(200)
            self.send_header('content-type', 'application/json')
            self.send_header('content-length', str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    # socketserver's listen backlog is 5: 256 clients connecting at once overflow it and the
    # late ones time out connecting (fetch failed) instead of queueing as they do at the others.
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer(('127.0.0.1', args.port), Handler)
    server.daemon_threads = True
    print(f'listening http://127.0.0.1:{server.server_address[1]}', flush=True)
    server.serve_forever()


if __name__ == '__main__':
    main()

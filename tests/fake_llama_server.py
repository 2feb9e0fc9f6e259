"""A stand-in for llama.cpp's server, for tests: the same command line (what specbench passes), the same endpoints
(``/health``, ``/props``, ``/metrics``, native ``/completion`` streamed or not, ``/v1/models``,
``/v1/completions``), a deterministic toy model, a toy speculation with llama.cpp's counters, and faults on demand.

The toy model's greedy next token after ``ids`` is ``(31 * ids[-1] + 7 * len(ids)) % vocab``. With ``--spec-type``
other than ``none`` every third decode step "drafts" 4 tokens and accepts 2 of them (the model's own next tokens),
so the output equals the speculation-off one and the counters say what a real server's would. ``--fault MODE``:

- ``die-at-start``: exits before listening; ``never-ready``: ``/health`` answers 503 forever;
- ``die``: exits in the middle of the second answer; ``hang``: stops sending in the middle of an answer;
- ``garbage``: an answer event that is not JSON; ``refuse``: HTTP 500 with an error message;
- ``bad-ids``: a token id outside the vocabulary; ``diverge``: the speculating output differs at position 5;
- ``gap``: the streamed answer leaves one token out (as llama.cpp does inside a UTF-8 character);
- ``keep-alive``: a streamed answer that is only keep-alive comments (``: keep-alive``), one every 50 ms, for
  ``KEEP_ALIVE_S`` seconds, then the connection closed; ``big-line``: a streamed answer whose first event is one
  line of ``BIG_LINE`` bytes (sent in 64 KiB pieces);
- ``wrong-props``: ``/props`` names another model file than the one it was started with.

``/props`` and ``/slots`` say what llama.cpp's say of the server: its model file (``-m``), context per slot
(``-c`` over ``-np``), slots, and whether its slots speculate. A port another process holds ends it as llama.cpp's
server ends: ``couldn't bind HTTP server socket``, exit code 1.

Run as ``python fake_llama_server.py -m X --port P ... [--fake-vocab 100] [--fault MODE] [--pid-file F]``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DRAFT_EVERY, DRAFT_LEN, DRAFT_KEPT = 3, 4, 2
KEEP_ALIVE_S, BIG_LINE, PIECE = 20.0, 2 << 20, 64 << 10


def next_token(ids: list[int], vocab: int) -> int:
    return (31 * ids[-1] + 7 * len(ids)) % vocab


def generate(prompt: list[int], n: int, vocab: int, speculate: bool, fault: str) -> list[tuple[list[int], int, int]]:
    """[(the ids one step emits, cumulative drafted, cumulative accepted)], cut at ``n`` tokens as a server stops
    at ``n_predict``; the first step is the prompt's."""
    ids, steps, drafted, accepted, made = list(prompt), [], 0, 0, 0
    while made < n:
        drafts = speculate and steps and len(steps) % DRAFT_EVERY == 0
        emit = []
        for _ in range(DRAFT_KEPT + 1 if drafts else 1):
            emit.append(next_token(ids, vocab))
            ids.append(emit[-1])
        if drafts:
            drafted, accepted = drafted + DRAFT_LEN, accepted + DRAFT_KEPT
        if fault == "diverge" and speculate:
            emit = [(t + 1) % vocab if made + i == 5 else t for i, t in enumerate(emit)]
        emit = emit[: n - made]
        steps.append((emit, drafted, accepted))
        made += len(emit)
    return steps


def top_logprobs(ids: list[int], vocab: int) -> list[dict]:
    tok = next_token(ids, vocab)
    return [{"id": tok, "logprob": math.log(0.6)}, {"id": (tok + 1) % vocab, "logprob": math.log(0.3)}]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # (the log file gets one line per request)
        sys.stderr.write(f"request {self.command} {self.path}\n")

    def _json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        srv = self.server
        if self.path == "/health":
            if srv.fault == "never-ready":
                return self._json(503, {"error": {"message": "Loading model"}})
            return self._json(200, {"status": "ok"})
        if self.path == "/props":
            model = "/elsewhere/other.gguf" if srv.fault == "wrong-props" else srv.model
            return self._json(200, {"build_info": "b0-fake", "total_slots": srv.parallel, "model_path": model,
                                    "default_generation_settings": {"n_ctx": srv.ctx}})
        if self.path == "/slots":
            return self._json(200, [{"id": i, "n_ctx": srv.ctx, "speculative": srv.speculate}
                                    for i in range(srv.parallel)])
        if self.path == "/v1/models":
            return self._json(200, {"data": [{"id": "fake-model"}]})
        if self.path == "/metrics":
            text = "".join(f"# TYPE llamacpp:{k}_total counter\nllamacpp:{k}_total {v}\n" for k, v in (
                ("spec_decode_num_drafts", srv.drafts), ("spec_decode_num_draft_tokens", srv.drafted),
                ("spec_decode_num_accepted_tokens", srv.accepted)))
            text += "".join(f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {srv.drafts}\n'
                            for i in range(DRAFT_KEPT))
            data = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            return self.wfile.write(data)
        return self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        srv.requests += 1
        if srv.fault == "refuse":
            return self._json(500, {"error": {"code": 500, "message": "the fake refuses", "type": "server_error"}})
        oai = self.path == "/v1/completions"
        n = body.get("max_tokens" if oai else "n_predict", 16)
        steps = generate(body["prompt"], n, srv.vocab, srv.speculate, srv.fault)
        d_total = sum(1 for i, s in enumerate(steps) if i and s[1] != steps[i - 1][1])
        if not body.get("stream"):
            tokens = [t for emit, _, _ in steps for t in emit]
            probs = [{"id": t, "top_logprobs": top_logprobs(body["prompt"] + tokens[:i], srv.vocab)}
                     for i, t in enumerate(tokens)] if body.get("n_probs") else []
            return self._json(200, {"tokens": tokens, "stop": True, "completion_probabilities": probs})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        if srv.fault in ("keep-alive", "big-line"):
            return self._stalling_stream(srv.fault)
        produced = 0
        for i, (emit, drafted, accepted) in enumerate(steps):
            time.sleep(0.002)
            for tok in emit:
                produced += 1
                if srv.fault == "die" and srv.requests >= 2 and produced == 3:
                    os._exit(9)
                if srv.fault == "hang" and produced == 3:
                    time.sleep(3600)
                if srv.fault == "gap" and produced == 4:
                    continue
                if srv.fault == "garbage" and produced == 3:
                    self.wfile.write(b"data: <html>oops</html>\n\n")
                    self.wfile.flush()
                    return
                tok = 10**9 if srv.fault == "bad-ids" and produced == 3 else tok
                timings = {"predicted_n": produced, **({"draft_n": drafted, "draft_n_accepted": accepted} if drafted else {})}
                event = ({"choices": [{"text": "x", "index": 0, "finish_reason": None}], "timings": timings,
                          "__verbose": {"tokens": [tok]}} if oai else
                         {"tokens": [tok], "content": "x", "stop": False, "tokens_predicted": produced, "timings": timings})
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
        drafted, accepted = (steps[-1][1], steps[-1][2]) if steps else (0, 0)
        srv.drafts, srv.drafted, srv.accepted = srv.drafts + d_total, srv.drafted + drafted, srv.accepted + accepted
        final = {"prompt_n": len(body["prompt"]), "prompt_ms": 1.0, "predicted_n": produced, "predicted_ms": 2.0,
                 **({"draft_n": drafted, "draft_n_accepted": accepted} if drafted else {})}
        last = ({"choices": [{"text": "", "index": 0, "finish_reason": "length"}], "timings": final} if oai else
                {"tokens": [], "stop": True, "stop_type": "limit", "tokens_predicted": produced, "timings": final})
        self.wfile.write(f"data: {json.dumps(last)}\n\n".encode() + (b"data: [DONE]\n\n" if oai else b""))
        self.wfile.flush()
        self.close_connection = True

    def _stalling_stream(self, fault: str) -> None:
        """An answer that never gives a token: keep-alive comments only, or one line too long to hold."""
        self.close_connection = True
        try:
            if fault == "keep-alive":
                end = time.monotonic() + KEEP_ALIVE_S
                while time.monotonic() < end:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    time.sleep(0.05)
                return
            piece = b"x" * PIECE
            self.wfile.write(b"data: ")
            for _ in range(BIG_LINE // PIECE):
                self.wfile.write(piece)
            self.wfile.write(b"\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # (the client gave up, as it should)
            pass


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--version", action="store_true")
    p.add_argument("-m")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("-np", type=int, default=1)
    p.add_argument("-c", type=int, default=4096)
    p.add_argument("--spec-type", default="none")
    p.add_argument("--fake-vocab", type=int, default=100)
    p.add_argument("--fault", default="")
    p.add_argument("--pid-file")
    args, _unknown = p.parse_known_args()
    if args.version:
        print("version: 0 (fake)")
        return
    if args.pid_file:
        with open(args.pid_file, "a") as f:
            f.write(f"{os.getpid()}\n")
    if args.fault == "die-at-start":
        print("error: the fake cannot load the model", file=sys.stderr)
        sys.exit(3)
    try:
        srv = ThreadingHTTPServer((args.host, args.port), Handler)
    except OSError:
        print(f"start: couldn't bind HTTP server socket, hostname: {args.host}, port: {args.port}", file=sys.stderr)
        print("llama_server: exiting due to HTTP server error", file=sys.stderr)
        sys.exit(1)
    srv.vocab, srv.fault, srv.parallel = args.fake_vocab, args.fault, args.np
    srv.model, srv.ctx = args.m, args.c // max(args.np, 1)
    srv.speculate = args.spec_type != "none"
    srv.requests = srv.drafts = srv.drafted = srv.accepted = 0
    print(f"fake llama-server listening on {args.host}:{args.port}", file=sys.stderr, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()

"""Engines under test: serving engines (llama.cpp's server, vLLM or SGLang behind an OpenAI-compatible API) measured
as subjects, not run as backends. specbench sends token ids and reads back token ids, arrival times and the engine's
own speculation counters; the runner turns each reply into a record like its own methods', so the same statistics,
lossless rule and reports apply.

- ``process.py``: a server process started on 127.0.0.1 with a free port, its readiness awaited, its log kept,
  always stopped (and killed with specbench when specbench dies);
- ``http_client.py``: JSON and server-sent events over HTTP with a deadline per request and a cap on what is held,
  every failure one line;
- ``own_server.py``: proof that the server answering on a port is the one specbench started (its socket, its props);
- ``reply.py``: what one request gave back (``EngineReply``) and the per-pass record made of it;
- ``passes.py``: the engine's forward passes rebuilt from its per-token counters;
- ``prometheus.py``: the speculation counters of a ``/metrics`` page;
- ``llama_server.py`` / ``llama_stream.py``: llama.cpp's server (binary, version, requests) and its event stream read;
- ``openai_api.py``: the OpenAI-compatible adapter (``--engine openai:URL``);
- ``settings.py``: the speculation settings an engine offers, by name (``engine:ngram``, ``engine:draft``, ...), as flags;
- ``draft_gguf.py``: a transformers draft (by default the SpS distilled one) written as a GGUF llama.cpp drafts with;
- ``session.py``: a run's engines, one per setting, from the first request to the last stop.
"""

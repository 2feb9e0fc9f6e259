"""One llama.cpp model and context: batches in, logits and final-norm hidden states out, KV cells by sequence.

The context is created once per backend with a unified KV cache (every sequence in one buffer, so copying
a sequence's cells to another only adds a sequence id, no data moves) and as many sequences as llama.cpp
allows; it is re-created larger only when a generation needs more cells than it has. Hidden states come
through llama.cpp's embeddings output (``embeddings`` on, no pooling: the tensor the output head reads,
i.e. after the final norm); llama.cpp then outputs every row of the batch, so they are switched on only
for passes whose caller wants them.

The batch's arrays are numpy buffers this class owns (filled vectorised, not token by token through ctypes).

Example: ``ctx.decode([5, 6], [10, 11], [(0,), (0,)], hidden=False)`` -> logits ``[2, V]`` of the tokens 5
and 6 at positions 10 and 11 of sequence 0, hidden ``None``.
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Sequence

import numpy as np

from specbench.errors import ModelLoadError
from specbench.engine.backends.llamacpp.library import llama

MIN_CELLS = 2048  # a context's first size; it doubles when a generation needs more
UBATCH = 512  # llama.cpp's physical batch: rows computed per graph (a longer prompt is split)


class LlamaCppError(RuntimeError):
    """llama.cpp refused a batch (its own message went to stderr)."""


class LlamaContext:
    """``path``'s model on ``threads`` threads; ``full_precision``: F32 KV cache, no flash attention."""

    def __init__(self, path: Path, threads: int, full_precision: bool) -> None:
        lib = self.lib = llama()
        params = lib.llama_model_default_params()
        self.model = lib.llama_model_load_from_file(str(path).encode(), params)
        if not self.model:
            raise ModelLoadError(f"llama.cpp could not load {path} (see its message above)")
        self.n_vocab = int(lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(self.model)))
        self.n_embd = int(lib.llama_model_n_embd(self.model))
        self.n_layer = int(lib.llama_model_n_layer(self.model))
        self.max_seqs = int(lib.llama_max_parallel_sequences())
        self.threads, self.full_precision = threads, full_precision
        self.ctx = None
        self.n_cells = 0
        self._hidden = False
        self.reserve(MIN_CELLS)

    def reserve(self, cells: int) -> None:
        """Make sure the context holds ``cells`` KV cells (a new, empty context when it grows)."""
        if self.ctx is not None and cells <= self.n_cells:
            return
        size = max(MIN_CELLS, self.n_cells)
        while size < cells:
            size *= 2
        lib = self.lib
        if self.ctx is not None:
            lib.llama_free(self.ctx)
        p = lib.llama_context_default_params()
        p.n_ctx = p.n_batch = size
        p.n_ubatch = UBATCH
        p.n_seq_max = self.max_seqs
        p.kv_unified = True
        # sliding-window layers keep every position (llama.cpp's default, set here because exactness needs it): a
        # window-sized cache drops the cells older than the window of the deepest row a tree verifies, which the
        # next pass, from a shallower accepted row, still sees; the window itself is llama.cpp's mask, by position
        p.swa_full = True
        p.n_threads = p.n_threads_batch = self.threads
        p.embeddings = False
        p.pooling_type = lib.LLAMA_POOLING_TYPE_NONE
        if self.full_precision:  # (CPU flash attention rounds Q to F16: off, as the F32 KV cache)
            p.type_k = p.type_v = lib.GGML_TYPE_F32
            p.flash_attn_type = lib.LLAMA_FLASH_ATTN_TYPE_DISABLED
        self.ctx = lib.llama_init_from_model(self.model, p)
        if not self.ctx:
            raise ModelLoadError(f"llama.cpp could not create a context of {size} cells")
        self.mem = lib.llama_get_memory(self.ctx)
        self.n_cells = int(lib.llama_n_ctx(self.ctx))
        self._hidden = False
        self._alloc_batch(self.n_cells)

    def _alloc_batch(self, cap: int) -> None:
        lib = self.lib
        self._token = np.zeros(cap, dtype=np.int32)
        self._pos = np.zeros(cap, dtype=np.int32)
        self._nseq = np.ones(cap, dtype=np.int32)
        self._out = np.zeros(cap, dtype=np.int8)
        self._seqs = np.zeros((cap, self.max_seqs), dtype=np.int32)  # row i's sequence ids in its first n_seq[i]
        ptr = ctypes.POINTER(ctypes.c_int32)
        self._seq_ptrs = (ptr * cap)(*[self._seqs[i].ctypes.data_as(ptr) for i in range(cap)])
        b = self.batch = lib.llama_batch()
        b.token = self._token.ctypes.data_as(ptr)
        b.embd = None
        b.pos = self._pos.ctypes.data_as(ptr)
        b.n_seq_id = self._nseq.ctypes.data_as(ptr)
        b.seq_id = ctypes.cast(self._seq_ptrs, type(b.seq_id))
        b.logits = self._out.ctypes.data_as(ctypes.POINTER(ctypes.c_int8))

    def clear(self) -> None:
        """Empty the KV cache."""
        self.lib.llama_memory_clear(self.mem, True)

    def decode(self, tokens: Sequence[int], positions: np.ndarray, seq_ids: Sequence[Sequence[int]] | None,
               outputs: np.ndarray | None = None, hidden: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """Run one batch: ``tokens`` at ``positions`` ([n] absolute), in sequences ``seq_ids`` (None: all in 0).

        ``outputs``: [n] bool, the rows whose logits are wanted (None: all); with ``hidden`` every row is
        output (llama.cpp's rule for embeddings), and the logits of the ``outputs`` rows alone are returned.
        Returns (logits [outputs, V], hidden [n, h] or None), rows in batch order, copied out of llama.cpp's
        buffers.
        """
        n = len(tokens)
        if n > len(self._token):
            raise LlamaCppError(f"a batch of {n} rows exceeds the context's {len(self._token)}")
        if hidden != self._hidden:
            self.lib.llama_set_embeddings(self.ctx, hidden)
            self._hidden = hidden
        self._token[:n] = tokens
        self._pos[:n] = positions
        if seq_ids is None:
            self._nseq[:n] = 1
            self._seqs[:n, 0] = 0
        else:
            for i, seqs in enumerate(seq_ids):
                self._nseq[i] = len(seqs)
                self._seqs[i, : len(seqs)] = seqs
        self._out[:n] = 1 if outputs is None or hidden else outputs
        self.batch.n_tokens = n
        rc = self.lib.llama_decode(self.ctx, self.batch)
        if rc != 0:
            raise LlamaCppError(f"llama_decode failed with code {rc} on a batch of {n} rows")
        n_out = int(self._out[:n].sum())
        view = np.ctypeslib.as_array(self.lib.llama_get_logits(self.ctx), shape=(n_out, self.n_vocab))
        # with hidden states every row came out; copy the wanted ones only (a prompt's are [prompt, V])
        logits = view[np.flatnonzero(outputs)] if hidden and outputs is not None else view.copy()
        states = None
        if hidden:
            states = np.ctypeslib.as_array(self.lib.llama_get_embeddings(self.ctx), shape=(n, self.n_embd)).copy()
        return logits, states

    # -- KV cells by sequence (each a pass over the cells' metadata; no key or value moves) --------------
    def seq_rm(self, seq: int, start: int) -> None:
        """Drop sequence ``seq`` (-1: every sequence) from the cells at positions >= ``start``."""
        self.lib.llama_memory_seq_rm(self.mem, seq, start, -1)

    def seq_cp(self, src: int, dst: int) -> None:
        """Add sequence ``dst`` to every cell of ``src`` (``dst`` must hold no cell yet)."""
        self.lib.llama_memory_seq_cp(self.mem, src, dst, -1, -1)

    def seq_keep(self, seq: int) -> None:
        """Free every cell outside ``seq``; the cells of ``seq`` keep that sequence alone."""
        self.lib.llama_memory_seq_keep(self.mem, seq)

    def close(self) -> None:
        if self.ctx is not None:
            self.lib.llama_free(self.ctx)
            self.ctx = None
        if self.model:
            self.lib.llama_model_free(self.model)
            self.model = None

    def __del__(self) -> None:  # (interpreter shutdown may have dropped the library first)
        try:
            self.close()
        except Exception:
            pass

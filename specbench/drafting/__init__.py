"""The trained-drafter kit: what several draft networks share, reached by methods through ``specbench.api``.

- ``layers.py``: a draft layer's shape read from any HF target, RMSNorm, attention with RoPE over the draft's
  own cache, the SwiGLU MLP, one decoder layer, chunked causal masks for long prompts;
- ``rope.py``: the target's RoPE scaling (default, linear, dynamic) applied to a draft layer;
- ``trees.py``: token trees built level by level from a draft that scores any node's children (EAGLE's static
  and dynamic trees) and the published tree templates (Medusa's ``mc_sim_7b_63``).

The trainers' shared helpers (windows, batches, schedule, draft vocabulary) are in ``training/windows.py``.
"""

"""Whether a method keeps the drafter contract (``engine/drafter.py``): the properties ``specbench check-method``
runs on it, on tiny random models, one file each.

- ``exact.py``: greedy output equals AR's on four families, and it drafts;
- ``skips.py``: equal under forced ``budget=auto`` skip patterns and depth cuts (``skip_pattern.py``);
- ``batched.py``: equal at batch size 2;
- ``sampled.py``: at T=1 distributed as AR sampling (``distribution.py``: exact distribution, chi-square);
- ``repeats.py``: the same drafts at repeat 0 and 1; state across generations declared;
- ``resume.py``: a resumed run (``learn`` replayed) drafts as an uninterrupted one;
- ``hidden.py``: ``reads_hidden_states = False`` honoured; ``best_first.py``: children best first;
- ``read_only.py``: nothing handed to the drafter is changed.

``world.py`` builds the method on each family's target (``tiny.py``) as a run does, ``watch.py`` records what
it proposes, ``suite.py`` runs the properties, ``outcome.py`` is one line of verdict.
"""

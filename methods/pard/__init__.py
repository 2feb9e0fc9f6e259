"""PARD (parallel draft models, AMD-AIG-AIMA/PARD): a small draft trained to predict K tokens in one forward with
mask tokens. Being built (issue 48): ``parallel_batch.py`` lays out its training sequences; the method itself is
not registered yet."""

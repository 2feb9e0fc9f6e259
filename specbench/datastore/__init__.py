"""Retrieval datastores: REST's suffix-array token stores and trie selection, CREST's n-gram store, the corpora
they are built from (``corpora.py``), and the contamination check that keeps test prompts out."""

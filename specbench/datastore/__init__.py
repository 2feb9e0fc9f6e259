"""Retrieval datastores shared by REST and CREST: suffix-array token stores, trie selection, n-gram stores."""
from specbench.datastore.suffix_array import DatastoreError, TokenDatastore

__all__ = ["DatastoreError", "TokenDatastore"]

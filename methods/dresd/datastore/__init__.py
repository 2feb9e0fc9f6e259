"""Dense (hidden-state) retrieval datastores for DReSD: build, normalise, index, save and load.

Import the submodules directly (``methods.dresd.datastore.store`` etc.); faiss is imported lazily.
"""

"""Dense (hidden-state) retrieval datastores for DReSD: build, normalise, index, save and load.

Import the submodules directly (``specbench.datastore_dense.store`` etc.); faiss is imported lazily.
"""

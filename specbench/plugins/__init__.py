"""Name-keyed registries (methods, tasks, corpora, datastore actions, trainers) and the discovery that fills them."""

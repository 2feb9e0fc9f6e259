"""Reading and writing files safely: strict JSON written whole, size-capped YAML, content hashes checked against the ones fixed at creation."""

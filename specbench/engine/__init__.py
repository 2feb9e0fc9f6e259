"""The draft -> verify engine, the only code that runs the target: the drafter contract, the decode loop, trees, verification, sampling, KV caches, draft budget, backends."""

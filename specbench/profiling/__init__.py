"""What this machine costs: the hardware fingerprint, T(n) of the target's forward, the cached cost profile, where a forward's time goes, peak memory."""

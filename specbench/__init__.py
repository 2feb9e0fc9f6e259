"""specbench: benchmark speculative decoding on your own hardware, exactly."""

__version__ = "0.1.0"

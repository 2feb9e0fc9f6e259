"""specbench: benchmark speculative decoding on your own hardware, exactly."""

from specbench.plugins import checkout_names as _checkout_names

__version__ = "0.1.0"

_checkout_names.install()  # methods/ and tasks/ import as specbench_methods / specbench_tasks (see that module)

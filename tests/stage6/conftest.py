"""Stage 6 tests compile into a per-session cache directory, as stage 5's do."""

from tests.stage5.conftest import kernel_cache  # noqa: F401  (an autouse fixture)

"""Test-wide setup: a private compile cache per test session, so runs never share stale entries."""

import os
import tempfile

os.environ.setdefault("WAVETILE_CACHE_DIR", tempfile.mkdtemp(prefix="wavetile-test-cache-"))

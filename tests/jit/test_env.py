"""jit.env: WAVETILE_* reads are cached yet follow every change made through os.environ."""

from __future__ import annotations

import os
import threading

from jit import env


def test_reads_follow_set_change_and_delete(monkeypatch):
    monkeypatch.delenv("WAVETILE_TEST_ENV", raising=False)
    assert env.get("WAVETILE_TEST_ENV", "default") == "default"
    monkeypatch.setenv("WAVETILE_TEST_ENV", "1")
    assert env.get("WAVETILE_TEST_ENV") == "1"
    os.environ["WAVETILE_TEST_ENV"] = "2"
    assert env.get("WAVETILE_TEST_ENV") == "2"
    os.environ.update(WAVETILE_TEST_ENV="3")
    assert env.get("WAVETILE_TEST_ENV") == "3"
    del os.environ["WAVETILE_TEST_ENV"]
    assert env.get("WAVETILE_TEST_ENV") == ""
    assert os.environ.setdefault("WAVETILE_TEST_ENV", "4") == "4" and env.get("WAVETILE_TEST_ENV") == "4"
    assert os.environ.pop("WAVETILE_TEST_ENV") == "4" and env.get("WAVETILE_TEST_ENV", "x") == "x"


def test_other_threads_see_the_change():
    seen = []
    os.environ["WAVETILE_TEST_ENV"] = "before"
    assert env.get("WAVETILE_TEST_ENV") == "before"
    os.environ["WAVETILE_TEST_ENV"] = "after"
    thread = threading.Thread(target=lambda: seen.append(env.get("WAVETILE_TEST_ENV")))
    thread.start()
    thread.join()
    del os.environ["WAVETILE_TEST_ENV"]
    assert seen == ["after"]


def test_values_are_os_environs(monkeypatch):
    monkeypatch.setenv("WAVETILE_TEST_ENV", "  spaced é ")
    assert env.get("WAVETILE_TEST_ENV") == os.environ["WAVETILE_TEST_ENV"]

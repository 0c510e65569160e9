"""`python -m kernels`: the main job runs the embedded model with progress, tokens, the per-family profile, modeled
TTFT and decode rate, memory and a Perfetto trace; `--project` models real sizes."""

import json
import subprocess
import sys

import pytest

from kernels.__main__ import main


def test_main_job_prints_the_profile_and_writes_a_trace(tmp_path, capsys):
    trace = tmp_path / "trace.json"
    assert main(["--batch", "2", "--prompt-len", "7", "3", "--new-tokens", "3", "--trace", str(trace)]) == 0
    out, err = capsys.readouterr()
    assert "prefill" in err and "decode step 2/2" in err and "kernels:" in err
    assert out.count("-> [") == 2  # one line of generated tokens per prompt
    for family in ("gdn/delta_rule", "attn/attention", "gdn/moe", "lm_head", "embed", "total"):
        assert family in out
    assert "modeled time to first token" in out and "tokens/s" in out and "KV cache" in out
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert sum(e.get("ph") == "X" for e in events) > 100


def test_main_job_rejects_bad_flags():
    with pytest.raises(SystemExit):
        main(["--new-tokens", "0"])
    with pytest.raises(SystemExit):
        main(["--project", "qwen9"])


def test_main_job_runs_as_a_module(tmp_path):
    """The README's command line itself, in a subprocess, with a small run."""
    proc = subprocess.run([sys.executable, "-m", "kernels", "--prompt-len", "2", "--new-tokens", "2",
                           "--batch", "1", "--trace", str(tmp_path / "t.json")], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "op family" in proc.stdout and (tmp_path / "t.json").exists()

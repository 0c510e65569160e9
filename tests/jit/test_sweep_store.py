"""Stored sweep results are keyed by what decides them, the model's own sources included."""

from jit import compiler, sweep_store


def test_a_result_of_another_model_is_not_reused(monkeypatch):
    """The key of a stored config takes the compiler's and the simulator's sources: a cost-model change (not only a
    spec change) makes an interrupted sweep start over instead of resuming with the old model's times."""
    key = sweep_store.entry_key({"n": 1000}, {"BLOCK": 256}, "h200", "kernel")
    assert sweep_store.entry_key({"n": 1000}, {"BLOCK": 256}, "h200", "kernel") == key
    monkeypatch.setattr(compiler, "model_fingerprint", lambda: "an edited simulator")
    assert sweep_store.entry_key({"n": 1000}, {"BLOCK": 256}, "h200", "kernel") != key
    monkeypatch.undo()
    assert "simulator" in compiler._MODEL_PACKAGES and compiler.model_fingerprint() != compiler.compiler_fingerprint()

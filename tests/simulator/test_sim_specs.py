"""Machine specs: presets, provenance tags, selection by argument / context / environment, user specs."""

import dataclasses

import pytest

import simulator
from simulator.specs import CONFIDENCE, MachineSpec, get_spec


def test_presets_exist_with_their_warp_widths():
    assert set(simulator.registered_specs()) >= {"mtt-s5000", "mtt-s4000", "h200"}
    assert get_spec("mtt-s5000").warp_size == 32
    assert get_spec("mtt-s4000").warp_size == 128
    assert get_spec("h200").warp_size == 32


@pytest.mark.parametrize("name", ["mtt-s5000", "mtt-s4000", "h200"])
def test_every_field_has_a_confidence_and_note(name):
    spec = get_spec(name)
    for f in dataclasses.fields(MachineSpec):
        if f.name == "sources":
            continue
        conf, note = spec.sources[f.name]
        assert conf in CONFIDENCE
        if conf == "assumed":
            assert note, f"{name}.{f.name} is assumed but does not say what was assumed"


def test_unknown_s4000_numbers_are_marked_assumed():
    s4000 = get_spec("mtt-s4000")
    for field in ("units", "clock_hz", "l2_bytes", "registers_per_unit"):
        assert s4000.sources[field][0] == "assumed"
    assert s4000.sources["transaction_lanes"][0] in ("L", "assumed")
    assert s4000.sources["warp_size"][0] == "H"


def test_peak_rates_reproduce_the_datasheets():
    h200 = get_spec("h200")
    assert h200.peak_tensor_flops("bf16") == pytest.approx(989.4e12, rel=1e-3)
    assert h200.peak_fp32_flops == pytest.approx(66.9e12, rel=1e-3)
    assert get_spec("mtt-s5000").peak_tensor_flops("fp8") == pytest.approx(1.024e15, rel=1e-6)
    # fp8 has no tensor path on the S4000: falls back to the SIMT fp32 rate
    s4000 = get_spec("mtt-s4000")
    assert s4000.tensor_rate("fp8e5m2") == s4000.fp32_flops_per_clk
    assert s4000.tensor_rate("float16") == 1024.0


def test_cpi_follows_the_warp_width():
    assert get_spec("h200").cpi("fma") == 1.0
    assert get_spec("mtt-s4000").cpi("fma") == 4.0  # 128 lanes on 32-lane schedulers


def test_selection_precedence(monkeypatch):
    monkeypatch.delenv("WAVETILE_MACHINE", raising=False)
    assert simulator.current_spec().name == "mtt-s5000"
    monkeypatch.setenv("WAVETILE_MACHINE", "mtt-s4000")  # read at call time
    assert simulator.current_spec().name == "mtt-s4000"
    with simulator.machine("h200") as spec:
        assert spec.name == "h200"
        assert simulator.current_spec().name == "h200"
        assert simulator.current_spec("mtt-s5000").name == "mtt-s5000"  # the launch argument wins
        with simulator.machine("mtt-s5000"):
            assert simulator.current_spec().name == "mtt-s5000"
        assert simulator.current_spec().name == "h200"
    assert simulator.current_spec().name == "mtt-s4000"


def test_unknown_machine_lists_the_known_ones():
    with pytest.raises(KeyError, match="h200"):
        get_spec("no-such-gpu")


def test_user_spec_variant_and_registration():
    mine = get_spec("h200").replace(name="h200-small-l2", l2_bytes=8 << 20)
    assert mine.l2_bytes == 8 << 20 and mine.units == 132
    assert mine.sources["l2_bytes"][0] == "user"
    assert mine.sources["units"][0] == "H"
    simulator.register_spec(mine)
    assert get_spec("H200-SMALL-L2") is mine
    with simulator.machine("h200-small-l2"):
        assert simulator.current_spec().l2_bytes == 8 << 20
    with pytest.raises(ValueError, match="already registered"):
        simulator.register_spec(mine.replace(l2_bytes=1 << 20))
    assert hash(mine) != hash(get_spec("h200"))


def test_invalid_specs_are_rejected_with_the_field_named():
    h200 = get_spec("h200")
    with pytest.raises(ValueError, match="units"):
        h200.replace(units=0)
    with pytest.raises(ValueError, match="l2_line_bytes"):
        h200.replace(l2_line_bytes=96)
    with pytest.raises(ValueError, match="simt_lanes_per_clk"):
        h200.replace(simt_lanes_per_clk={"fma": 128.0})


def test_describe_lists_value_confidence_and_note():
    text = get_spec("mtt-s5000").describe()
    assert "units" in text and "musaInfo" in text and "assumed" in text


def test_short_runs_interpolate_the_measured_dram_table():
    spec = get_spec("h200")
    assert spec.run_efficiency(64, neighbours=False) == pytest.approx(0.71)
    assert spec.run_efficiency(64, neighbours=True) == pytest.approx(0.94)
    assert spec.run_efficiency(16, neighbours=False) == pytest.approx(0.68)  # below the table: its shortest run
    assert spec.run_efficiency(128, neighbours=False) == spec.run_efficiency(4096, neighbours=True) == 1.0
    assert spec.run_efficiency(32, False) < spec.run_efficiency(48, False) < spec.run_efficiency(64, False)
    with pytest.raises(ValueError, match="dram_run_efficiency"):
        dataclasses.replace(spec, dram_run_efficiency=((64, 0.9, 1.2),))

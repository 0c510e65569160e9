"""The cost-model sweep's held-out cases: kernels and shapes measured on the GPU and scored once, at the end of
the session that measured them, never fitted on (`Case.split` "holdout", "holdout2", ..., "holdout33").

Each set's kernels and cases are a module of their own: holdout1.py (split "holdout"), holdout2.py, ...,
holdout33.py. They build on sweep_cases' helpers; sweep_cases.cases() lists them after its own.
"""

from __future__ import annotations

from holdout1 import holdout_cases
from holdout2 import holdout2_cases
from holdout3 import holdout3_cases
from holdout4 import holdout4_cases
from holdout5 import holdout5_cases
from holdout6 import holdout6_cases
from holdout7 import holdout7_cases
from holdout8 import holdout8_cases
from holdout9 import holdout9_cases
from holdout10 import holdout10_cases
from holdout11 import holdout11_cases
from holdout12 import holdout12_cases
from holdout13 import holdout13_cases
from holdout14 import holdout14_cases
from holdout15 import holdout15_cases
from holdout16 import holdout16_cases
from holdout17 import holdout17_cases
from holdout18 import holdout18_cases
from holdout19 import holdout19_cases
from holdout20 import holdout20_cases
from holdout21 import holdout21_cases
from holdout22 import holdout22_cases
from holdout23 import holdout23_cases
from holdout24 import holdout24_cases
from holdout25 import holdout25_cases
from holdout26 import holdout26_cases
from holdout27 import holdout27_cases
from holdout28 import holdout28_cases
from holdout29 import holdout29_cases
from holdout30 import holdout30_cases
from holdout31 import holdout31_cases
from holdout32 import holdout32_cases
from holdout33 import holdout33_cases
from sweep_cases import Case


def heldout_cases() -> list[Case]:
    return (holdout_cases() + holdout2_cases() + holdout3_cases() + holdout4_cases() + holdout5_cases()
            + holdout6_cases() + holdout7_cases() + holdout8_cases() + holdout9_cases() + holdout10_cases()
            + holdout11_cases() + holdout12_cases() + holdout13_cases() + holdout14_cases()
            + holdout15_cases() + holdout16_cases() + holdout17_cases() + holdout18_cases()
            + holdout19_cases() + holdout20_cases() + holdout21_cases() + holdout22_cases()
            + holdout23_cases() + holdout24_cases() + holdout25_cases() + holdout26_cases()
            + holdout27_cases() + holdout28_cases() + holdout29_cases() + holdout30_cases()
            + holdout31_cases() + holdout32_cases() + holdout33_cases())

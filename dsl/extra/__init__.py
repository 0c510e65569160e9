"""`tl.extra`: vendor namespaces; on wavetile they all mean the same portable functions."""

from types import SimpleNamespace

from dsl import libdevice

cuda = SimpleNamespace(libdevice=libdevice)
hip = SimpleNamespace(libdevice=libdevice)
musa = SimpleNamespace(libdevice=libdevice)

"""`triton.tools` / `triton.tools.tensor_descriptor`: the host-side tensor descriptor."""

from __future__ import annotations

from jit.as_triton.unsupported import NoMeaning

TensorDescriptor = NoMeaning("triton.tools.tensor_descriptor.TensorDescriptor",
                             "host-side tensor descriptors are not supported; create them in the kernel "
                             "with tl.make_tensor_descriptor")

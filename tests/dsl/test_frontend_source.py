"""Reading a kernel's source without tokenize: the same lines and first line as inspect, odd layouts included."""

import inspect

import dsl as tl
from dsl.frontend import ParsedSource, _source_lines
from jit import jit


@jit(
    do_not_specialize=("n",),
)
def decorated_over_lines(x_ptr, n, BLOCK: tl.constexpr):
    # a comment at the def's indentation inside the body
# and one at column 0
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@jit
def dedented_docstring(x_ptr):
    """A docstring whose second line
starts at column 0, so cutting at the first dedent would split the string."""
    tl.store(x_ptr, 1.0)


class Holder:
    @staticmethod
    @jit
    def nested(x_ptr):
        tl.store(x_ptr, 2.0)


def after():  # a neighbour that must not be swallowed
    return 0


def test_same_lines_as_inspect():
    for kernel in (decorated_over_lines, dedented_docstring, Holder.nested):
        assert _source_lines(kernel.fn) == inspect.getsourcelines(kernel.fn)
        parsed = ParsedSource.of(kernel.fn)
        assert parsed.tree.name == kernel.__name__ and parsed.first_line == inspect.getsourcelines(kernel.fn)[1]

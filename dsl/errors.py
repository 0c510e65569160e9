"""Errors a kernel author sees: they point at the kernel's own source line, with a caret."""

from __future__ import annotations


class TritonError(Exception):
    """Base of every error wavetile raises about a kernel, as `triton.TritonError` is Triton's."""


class CompilationError(TritonError):
    """A kernel that cannot be compiled. The message shows file:line, the source excerpt and a caret."""

    def __init__(self, reason: str, *, file: str = "", line: int = 0, col: int = 0,
                 source_lines: list[str] | None = None, first_line: int = 1, kernel: str = ""):
        self.reason = reason
        self.error_message = reason  # Triton's attribute name for the bare reason
        self.file, self.line, self.col, self.kernel = file, line, col, kernel
        self.source_lines = source_lines or []
        self.first_line = first_line
        super().__init__(self._format())

    def _format(self) -> str:
        if not self.line or not self.source_lines:
            return self.reason
        where = f"{self.file}:{self.line}:{self.col + 1}"
        head = f"in kernel '{self.kernel}' at {where}:" if self.kernel else f"at {where}:"
        index = self.line - self.first_line
        start = max(0, index - 3)
        excerpt = [f"{self.first_line + i:5d} | {self.source_lines[i].rstrip()}"
                   for i in range(start, min(index + 1, len(self.source_lines)))]
        caret = " " * (8 + self.col) + "^"
        return "\n".join([head, *excerpt, caret, self.reason])

    def __reduce__(self):
        return (_rebuild, (self.__class__, self.reason, self.__dict__))


def _rebuild(cls, reason, state):
    error = cls.__new__(cls)
    Exception.__init__(error, reason)
    error.__dict__.update(state)
    error.args = (error._format(),)
    return error


class CompileTimeAssertionFailure(CompilationError):
    """A `tl.static_assert` that failed."""


class UnsupportedLanguageConstruct(CompilationError):
    """Python syntax that kernels cannot use (break, with, lambda, ...)."""


class KernelError(TritonError, RuntimeError):
    """A kernel failed at run time (out-of-bounds access, failed device assert)."""


class OutOfBoundsError(KernelError, IndexError):
    """A load, store or atomic touched memory outside the buffer its pointer came from."""


class DeviceAssertionError(KernelError, AssertionError):
    """A `tl.device_assert` / `assert` inside a kernel failed."""

"""Running the Triton rungs on a CPU through Triton's interpreter (TRITON_INTERPRET=1).

The variable must be set before a kernel module is imported: `triton.jit` reads it when it
decorates. Triton 3.6.0's interpreter also converts 1-element scalar arrays with int(), which
numpy >= 2.4 refuses ("only 0-dimensional arrays can be converted to Python scalars") whenever
a kernel loops over a runtime bound (`range(0, N, BLOCK_N)`). Upstream fixed it after 3.6.0
(triton-lang/triton, "numpy 2.4.0 causes exceptions in interpreter tests") by squeezing the
array first; `patch_numpy_scalar_index` applies the same one-line change to this process's
interpreter and nothing else. Kernels compiled for a GPU never go through this code.
"""

from __future__ import annotations

import os


def enable() -> None:
    """Select the interpreter and patch its scalar index. Call it before triton is first imported:
    triton.language's own jit helpers (tl.zeros, ...) are decorated at that import."""
    os.environ["TRITON_INTERPRET"] = "1"
    patch_numpy_scalar_index()


def patch_numpy_scalar_index() -> bool:
    """Make the interpreter's tensor.__index__ squeeze its 1-element array (True if patched)."""
    import numpy as np
    from triton.runtime import interpreter

    if getattr(interpreter, "_anatomy_index_patch", False):
        return True
    major, minor = (int(x) for x in np.__version__.split(".")[:2])
    if (major, minor) < (2, 4):
        return False
    original = interpreter._patch_lang_tensor

    def patched(tensor, scope):  # type: ignore[no-untyped-def]
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    interpreter._patch_lang_tensor = patched
    interpreter._anatomy_index_patch = True
    return True

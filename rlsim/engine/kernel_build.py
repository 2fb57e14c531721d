"""Build the engine kernel ahead of time: rlsim/engine/kernel.py's entry points (``SIGNATURES``) compiled by numba's
AOT compiler (``numba.pycc``) into the extension module ``rlsim/engine/_kernel_aot_<digest>``, named by the SHA-256 of
the kernel's source, which :func:`rlsim.engine.replica.kernel` loads without importing numba or compiling anything.

    python -m rlsim.engine.kernel_build  # into rlsim/engine/ (a source checkout, after editing
                                         # rlsim/engine/kernel.py; an older build there is removed)

``setup.py`` runs :func:`build` when rlsim is installed. Without numba or a C compiler there is no built kernel and
rlsim compiles the same source with numba on first use (slower to start, same results). The module is built for
the generic CPU of its platform (no host-specific instructions), so a wheel carrying it runs on any machine of that
platform; without fast-math its results are bit-identical to numba's just-in-time kernel. Its entry points release
the GIL while they run, as the just-in-time ones (``nogil``) do, so that rlsim.host.threads runs replicas on several
cores: numba's AOT compiler has no such option, so :func:`build` sets numba's ``release_gil`` compile flag for the
build (:func:`_releasing_gil`).

Nothing from rlsim is imported here, and the kernel source is loaded by path: setup.py runs this file in a build
environment that has numba but not rlsim's other dependencies.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import sys
import warnings
from pathlib import Path

SOURCE = Path(__file__).resolve().with_name("kernel.py")
PREFIX = "_kernel_aot_"


def digest(source: Path = SOURCE) -> str:
    """16 hex digits of the SHA-256 of the kernel's source file."""
    return hashlib.sha256(source.read_bytes()).hexdigest()[:16]


def module_name(source: Path = SOURCE) -> str:
    """The extension module's name in the rlsim package, for the kernel source as it is now."""
    return PREFIX + digest(source)


def build(output: Path | None = None, source: Path = SOURCE) -> Path:
    """Compile ``source`` into the extension module file ``output`` (default: beside the source, named by
    :func:`module_name` with the platform's suffix, replacing any other kernel built there); returns its path.
    Raises ImportError without numba (or its pycc), and a compiler error without a working C compiler."""
    with warnings.catch_warnings():  # numba.pycc is pending deprecation in numba; it still works and is tested
        warnings.simplefilter("ignore")
        # here, not at the top: it loads numba (start-up time)
        from numba.pycc import CC

        kernel = _load_source(source)
        cc = CC(module_name(source), source_module=kernel)
        for name, signature in kernel.SIGNATURES.items():
            cc.export(name, signature)(getattr(kernel, name).py_func)
        default = output is None
        if output is None:
            output = source.parent / cc.output_file
        cc.output_dir = str(output.parent)
        cc.output_file = output.name
        output.parent.mkdir(parents=True, exist_ok=True)
        with _releasing_gil(), kernel.unwrapped_indices():
            cc.compile()
    if default:  # a source checkout: kernels built from earlier versions of the source are never loaded again
        for old in output.parent.glob(PREFIX + "*"):
            if old != output:
                old.unlink()
    return output


@contextlib.contextmanager
def _releasing_gil():
    """numba.pycc compiles its exports with ``numba.core.compiler.Flags()``; within this block those flags have
    ``release_gil`` set (what ``njit(nogil=True)`` sets), so the CPython wrappers it emits release the GIL around
    the compiled call. The kernel never touches Python objects, so this is safe; should numba's internals move, the
    build goes on holding the GIL (same results, replicas then run one after another)."""
    # here, not at the top: it loads numba (start-up time)
    from numba.pycc import compiler

    plain = getattr(compiler, "Flags", None)
    if plain is None:
        yield
        return

    class NoGilFlags(plain):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True

    compiler.Flags = NoGilFlags
    try:
        yield
    finally:
        compiler.Flags = plain


def _load_source(source: Path):
    """The kernel module, loaded by path under its own name ``rlsim.engine.kernel`` (numba's on-disk cache, which
    importing it fills, records the module name and must find it again in the process that runs the kernel)."""
    loaded = sys.modules.get("rlsim.engine.kernel")
    if loaded is not None and Path(loaded.__file__).resolve() == source.resolve():
        return loaded
    spec = importlib.util.spec_from_file_location("rlsim.engine.kernel", source)
    assert spec is not None and spec.loader is not None
    kernel = importlib.util.module_from_spec(spec)
    sys.modules["rlsim.engine.kernel"] = kernel
    spec.loader.exec_module(kernel)
    return kernel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlsim.engine.kernel_build", description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, help="extension module file to write (default: in rlsim/engine/)")
    args = parser.parse_args(argv)
    try:
        path = build(args.output)
    except Exception as exc:  # any failure, in one line: the JIT kernel still works
        sys.stderr.write(f"rlsim.engine.kernel_build: error: {type(exc).__name__}: {exc}\n")
        return 1
    sys.stdout.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

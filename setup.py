"""What pyproject.toml cannot say: the engine kernel (rlsim/engine/kernel.py) compiled ahead of time at install, by
rlsim/engine/kernel_build.py, into the extension module rlsim/engine/_kernel_aot_<digest>, so that rlsim starts
without importing numba or compiling. When that fails (no C compiler, for one) the install goes on without it and
rlsim compiles the
same kernel with numba on first use (rlsim.engine.replica.kernel): slower to start, same results.
"""

import importlib.util
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("rlsim_kernel_build", HERE / "rlsim" / "engine" / "kernel_build.py")
kernel_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernel_build)  # by path: the build environment has numba, not rlsim's other dependencies
KERNEL = "rlsim.engine." + kernel_build.module_name()


class BuildExt(build_ext):
    def build_extension(self, ext):
        if ext.name != KERNEL:
            return super().build_extension(ext)
        try:
            kernel_build.build(Path(self.get_ext_fullpath(ext.name)))
        except Exception as exc:  # optional: setuptools reports it and installs the rest
            sys.stderr.write(
                f"rlsim: the engine kernel is not built ahead of time ({type(exc).__name__}: {exc}); numba will "
                "compile it on first use\n"
            )
            raise CompileError(str(exc)) from exc


setup(ext_modules=[Extension(KERNEL, sources=[], optional=True)], cmdclass={"build_ext": BuildExt})

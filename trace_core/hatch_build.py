"""The optional native build of trace-core (docs/compiled.md): hatchling's custom build hook.

Off by default (``enable-by-default = false`` in pyproject.toml), so ``pip install``, ``pip wheel`` and
``uv build`` give the pure ``py3-none-any`` wheel. With ``HATCH_BUILD_HOOKS_ENABLE=1`` it compiles
``trace_tasks/scoring/_native.pyx`` (the scoring pipeline's native common path) with Cython and the
machine's C compiler into a platform wheel. The extension is built in a temporary folder, never next
to the sources, so an editable install of the same checkout keeps running the pure build.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODULE = "trace_tasks.scoring._native"
SOURCE = "src/trace_tasks/scoring/_native.pyx"


class NativeBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        from Cython.Build import cythonize
        from setuptools import Distribution, Extension
        from setuptools.command.build_ext import build_ext

        self._work = Path(tempfile.mkdtemp(prefix="trace-native-"))
        # No floating-point contraction: every IoU and sum must round as Python's float operations do.
        flags = ["/fp:precise"] if sys.platform == "win32" else ["-O2", "-ffp-contract=off"]
        extension = Extension(MODULE, [str(Path(self.root) / SOURCE)], extra_compile_args=flags)
        modules = cythonize([extension], build_dir=str(self._work / "c"), quiet=True, language_level=3)
        command = build_ext(Distribution({"ext_modules": modules}))
        command.build_lib = str(self._work / "lib")
        command.build_temp = str(self._work / "tmp")
        command.ensure_finalized()
        command.run()
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = self._work / "lib" / Path(*MODULE.split(".")).with_name(f"_native{suffix}")
        if not built.is_file():
            raise RuntimeError(f"the native build produced no {built.name}")
        build_data["force_include"][str(built)] = f"trace_tasks/scoring/{built.name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        work = getattr(self, "_work", None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)

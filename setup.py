"""The wheel's platform tag: gtop ships x86-64 Linux binaries (the agent's C shim, built
for glibc 2.17 and up, a report's hot loops in C, and the BPF object), so its wheel is
not ``py3-none-any``.
Everything else is in pyproject.toml."""

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel

PLATFORM = "manylinux2014_x86_64"
"""glibc 2.17, x86-64: what ``objdump -T`` of the shim blob asks for (GLIBC_2.17 at most)."""


class PlatformWheel(bdist_wheel):
    """Pure Python code, one platform: ``py3-none-manylinux2014_x86_64``."""

    def get_tag(self) -> tuple[str, str, str]:
        return "py3", "none", PLATFORM


setup(cmdclass={"bdist_wheel": PlatformWheel})

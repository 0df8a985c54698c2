"""gtop report's numpy arrays fault in small pages (gtop.core.pages)."""

from gtop.core.pages import small_pages

try:
    from numpy._core import multiarray  # numpy 2
except ImportError:  # numpy 1
    from numpy.core import multiarray  # type: ignore[no-redef]


def test_small_pages_turns_numpys_huge_pages_off() -> None:
    before = multiarray._get_madvise_hugepage()
    try:
        multiarray._set_madvise_hugepage(True)
        small_pages()
        assert multiarray._get_madvise_hugepage() is False
    finally:
        multiarray._set_madvise_hugepage(before)

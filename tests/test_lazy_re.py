"""lazy_re: a pattern compiled on first use behaves as the compiled one, and importing stores/s3's
wire and XML modules compiles none of their patterns."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from s3bulk.stores.s3.lazy_re import lazy

pytestmark = pytest.mark.unit


def test_lazy_pattern_matches_as_compiled() -> None:
    eager = re.compile(rb"<Part>(.*?)</Part>", re.S)
    late = lazy(rb"<Part>(.*?)</Part>", re.S)
    body = b"<Part>1\n2</Part><Part>3</Part>"
    assert [m.group(1) for m in late.finditer(body)] == [m.group(1) for m in eager.finditer(body)]
    assert late.search(body) is not None and late.search(b"none") is None
    assert late.pattern == eager.pattern and late.flags == eager.flags and late.groups == 1
    assert late.sub(b"", body) == b""  # a method fetched again after others: the same answers


def test_importing_wire_compiles_no_pattern() -> None:
    code = ("import re; compiled = []; orig = re._compile\n"
            "re._compile = lambda p, f: compiled.append(p) or orig(p, f)\n"
            "import s3bulk.stores.s3.wire\n"
            "print(sum(b'<Contents>' in p or b'<Part>' in p or b'ListBucketResult' in p\n"
            "          for p in compiled if isinstance(p, bytes)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0"

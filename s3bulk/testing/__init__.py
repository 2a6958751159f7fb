"""The store contract as cases any store can run, in or outside this project.

s3bulk's engine talks to every backend through the protocols of s3bulk.stores.base and trusts
what a store declares in `features`. These cases check both: that the store does what the
protocols say (listing order and key ranges, ranged reads, NotFound, multipart uploads, deletes,
server-side copy) and that its declarations are true both ways (a declared capability works, an
undeclared one is really absent). The project runs them against every store it ships
(tests/test_store_contract.py); a store written elsewhere runs the same cases from its own
tests, as object_store's integration module and rclone's fstests are used.

To test your store, subclass `Harness` (how to seed objects behind the store's back and open
the store) and run every case of `CASES` with `run_case`. With pytest:

    import pytest
    from s3bulk.testing import CASES, CapabilityAbsent, Harness, run_case

    class MyHarness(Harness):
        kind = location_kind = "mine"
        def seed(self, objects): ...               # write them with your backend's own client
        async def make_store(self): return MyStore(...)

    @pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
    def test_contract(case):
        harness = MyHarness()                      # MyHarness(wrapped=True): inside the retry wrapper
        try:
            run_case(harness, case)
        except CapabilityAbsent as absent:
            pytest.skip(str(absent))
        finally:
            harness.cleanup()

Cases write to and delete from the place the harness opens: give each case a fresh, empty
one. Nothing here needs pytest; the cases use plain asserts and `expect_raises`. The tool
itself never imports this package.

The set of cases grows with the contract, and a case may get stricter in any release.
"""

from __future__ import annotations

from .cases import CASES
from .harness import (KEYS, CapabilityAbsent, Case, Harness, body, expect_raises, list_all, noise, require,
                      run_case, utf8_sorted)

__all__ = ["CASES", "Case", "CapabilityAbsent", "Harness", "run_case", "require", "expect_raises", "list_all",
           "KEYS", "body", "noise", "utf8_sorted"]

"""What a sync down (S3 -> an empty local directory) puts on the wire for each small object,
seen by a proxy in front of LocalStack: one GET per object, no HEAD, no Range, and no header
beyond the five it needs (the signature's three, Host, the checksum mode its answer is checked
with); every answer read whole, so the connection carries the next request. The GET is held to the
listed ETag by its answer's check; If-Match is sent only when an answer names another ETag, and
its 412 still tells an object changed since the listing (restarted from its new version).

Why held here: the servers' and proxies' CPU per object is what a header, a dropped connection or
an extra request costs them on every object of a mirror (bench/README "Sync down: what differs
on the wire": the same 20,000 GETs cost versitygw 5-8% more CPU when the objects carry one more
header). A header added to this GET must be argued, and this test changed with it.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(120)

# the headers of a small object's GET on the lean data path, lower-cased
SMALL_GET_HEADERS = {"host", "x-amz-checksum-mode", "x-amz-date", "x-amz-content-sha256", "authorization"}


def test_sync_down_sends_one_plain_get_per_small_object_on_kept_connections(cli, fault_proxy, s3, bucket,
                                                                              tmp_path):
    listed = set()
    for i in range(5):
        # one object with a file time stored (as s3bulk's own upload stores it): the same GET
        meta = {"mtime": "1700000000.250000"} if i == 0 else {}
        s3.put_object(Bucket=bucket, Key=f"p/k{i}", Body=b"%03d" % i * 30, Metadata=meta)
        listed.add(f"/{bucket}/p/k{i}")
    gets: list[tuple[str, dict[str, str]]] = []
    others: list[str] = []

    def record(method: str, target: str, headers: dict[str, str]) -> None:
        path, _, query = target.partition("?")
        if method == "GET" and not query:
            gets.append((path, headers))
        elif not (method == "GET" and "list-type=" in query):
            others.append(f"{method} {target}")
        return None

    fault_proxy.rules.append(record)
    out = tmp_path / "out"
    r = cli("sync", f"s3://{bucket}/p/", str(out), "-w", "1", "-c", "1", "--no-journal",
            "--endpoint-url", fault_proxy.url, env={"S3BULK_DATA_PATH": "lean"})
    assert r.code == 0, r.err
    assert sorted(p.name for p in out.iterdir()) == [f"k{i}" for i in range(5)]
    assert (out / "k0").stat().st_mtime == pytest.approx(1700000000.25, abs=1e-6)

    assert others == []  # no HEAD, no second look at any object
    assert sorted(path for path, _ in gets) == sorted(listed)  # one GET each
    for path, headers in gets:
        assert set(headers) == SMALL_GET_HEADERS, (path, headers)
        assert headers["x-amz-checksum-mode"] == "ENABLED"
    # one transfer in flight: the listing's connection and one for the GETs, each answer read whole
    # (a body left unread, or Connection: close, would open a connection per object)
    assert fault_proxy.counts["connections"] <= 2, fault_proxy.counts


def test_an_object_changed_after_the_listing_is_asked_with_if_match_and_restarted(cli, fault_proxy, s3, bucket,
                                                                                  tmp_path):
    for i in range(3):
        s3.put_object(Bucket=bucket, Key=f"p/k{i}", Body=b"old %d" % i)
    changed = f"/{bucket}/p/k1"
    gets: list[str | None] = []  # the If-Match each GET of the changed key carried

    def change_on_first_get(method: str, target: str, headers: dict[str, str]) -> None:
        if method == "GET" and target == changed:
            if not gets:  # listed already: the object changes before its GET reaches the server
                s3.put_object(Bucket=bucket, Key="p/k1", Body=b"new, longer than the old one")
            gets.append(headers.get("if-match"))
        return None

    fault_proxy.rules.append(change_on_first_get)
    out = tmp_path / "out"
    r = cli("sync", f"s3://{bucket}/p/", str(out), "-w", "1", "-c", "1", "--no-journal", "--json",
            "--endpoint-url", fault_proxy.url, env={"S3BULK_DATA_PATH": "lean"})
    assert r.code == 0, r.err
    assert (out / "k1").read_bytes() == b"new, longer than the old one"
    assert (out / "k0").read_bytes() == b"old 0" and (out / "k2").read_bytes() == b"old 2"
    # the first answer named the new ETag: asked again held to the listed one (412), then restarted
    assert gets[0] is None and gets[1] is not None and len(gets) >= 3, gets

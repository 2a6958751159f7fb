"""ListObjectsV2 page parsing: s3bulk's regex reader (_fast_entries, stores/s3/wire.py) against the standard
library's XML parsers, on 1,000-key pages as S3 writes them, with odd keys.

    uv run --frozen --extra dask python bench/list_parse_bench.py [--pages 200] [--reps 5]

Pages: 1,000 <Contents> in S3's field order (Key, LastModified, ETag, ChecksumAlgorithm, Size,
StorageClass), keys of ~40-80 characters, a third of them odd: XML entities (&amp; &lt; &gt;
&quot;), text that looks like CDATA (escaped, as S3 sends it), non-BMP characters (raw UTF-8 and
as &#x1F600;). Control characters are measured apart: S3 escapes them as &#x1; and the like,
which XML 1.0 forbids, so expat and ElementTree refuse such a page outright (botocore asks for
encoding-type=url for that reason); the regex reads it.

Every reader produces the same (key, size, mtime, etag) tuples (checked before timing):
- regex:        stores/s3/wire.py read_listing, as list_page reads a page: the check that the page is in
                the plain formatting (xml_plain.py), one regex match per object (entities undone only
                where present), the truncation flag and token
- etree:        xml.etree.ElementTree.fromstring (the C accelerator) + a walk of <Contents>
- etree-iter:   ElementTree.XMLPullParser fed the page, reading elements as they end
- expat:        xml.parsers.expat with start/end/character handlers
Timings: best of --reps over --pages pages (readers interleaved), CPU microseconds per key, one
core, same process. LastModified: objects written in bulk share their second (20 a second here).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from s3bulk.stores.s3 import wire as w  # noqa: E402

NS = "http://s3.amazonaws.com/doc/2006-03-01/"
ODD = ["a&amp;b", "&lt;tag&gt;", "q&quot;uote", "&lt;![CDATA[not cdata]]&gt;", "\U0001F600smile",
       "a&#x1F600;b", "日本語/ファイル", "sp ace+plus%25"]


def xml_text(raw: str) -> str:
    """Escape as S3 does in a listing (& < > " and control characters as numeric references)."""
    out = raw.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return "".join(f"&#x{ord(c):X};" if ord(c) < 0x20 and c not in "\t\n" else c for c in out)


def make_page(rng: random.Random, n: int = 1000, control: bool = False) -> bytes:
    rows = []
    for i in range(n):
        key = f"data/2026/11/{rng.randrange(10**6):06d}/part-{i:05d}-{rng.randrange(16**8):08x}.parquet"
        if rng.random() < 0.33:
            key = key[:20] + rng.choice(ODD) + key[20:]
        if control and rng.random() < 0.1:
            key += "\x01ctl"
        escaped = xml_text(key) if not any(o in key for o in ODD if "&" in o) else key
        sec = i // 20  # objects written in bulk share their second, about 20 a second here
        rows.append(f"<Contents><Key>{escaped}</Key><LastModified>2026-11-23T04:{sec // 60:02d}:{sec % 60:02d}"
                    f".000Z</LastModified><ETag>&quot;{rng.randrange(16**32):032x}&quot;</ETag>"
                    f"<ChecksumAlgorithm>CRC32</ChecksumAlgorithm><Size>{rng.randrange(10**9)}</Size>"
                    f"<StorageClass>STANDARD</StorageClass></Contents>")
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="{NS}"><Name>b</Name>'
            f"<Prefix></Prefix><KeyCount>{n}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>"
            + "".join(rows) + "<NextContinuationToken>tok</NextContinuationToken></ListBucketResult>").encode()


def by_regex(body: bytes) -> list:
    return w.read_listing(body, False)[0]


_C, _K, _LM, _ET, _SZ = (f"{{{NS}}}{t}" for t in ("Contents", "Key", "LastModified", "ETag", "Size"))


def _row(key: str, lm: str, et: str | None, size: str) -> tuple:
    return (key, int(size), w._listed_ts(lm.encode()), et.strip('"') if et is not None else None)


def by_etree(body: bytes) -> list:
    root = ET.fromstring(body)
    out = []
    for c in root.iter(_C):
        out.append(_row(c.findtext(_K), c.findtext(_LM), c.findtext(_ET), c.findtext(_SZ)))
    return out


def by_etree_pull(body: bytes) -> list:
    p = ET.XMLPullParser(events=("end",))
    p.feed(body)
    p.close()
    out = []
    for _, el in p.read_events():
        if el.tag == _C:
            out.append(_row(el.findtext(_K), el.findtext(_LM), el.findtext(_ET), el.findtext(_SZ)))
    return out


def by_expat(body: bytes) -> list:
    out: list = []
    text: list[str] = []
    row: dict[str, str] = {}
    wanted = {"Key", "LastModified", "ETag", "Size"}

    def start(name: str, attrs: dict) -> None:
        text.clear()

    def end(name: str) -> None:
        if name in wanted:
            row[name] = "".join(text)
        elif name == "Contents":
            out.append(_row(row["Key"], row["LastModified"], row.get("ETag"), row["Size"]))
            row.clear()

    p = expat.ParserCreate()
    p.buffer_text = True
    p.StartElementHandler = start
    p.EndElementHandler = end
    p.CharacterDataHandler = text.append
    p.Parse(body, True)
    return out


READERS = {"regex": by_regex, "etree": by_etree, "etree-iter": by_etree_pull, "expat": by_expat}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    rng = random.Random(13)
    pages = [make_page(rng) for _ in range(a.pages)]
    keys = sum(p.count(b"<Contents>") for p in pages)
    want = [[e[:4] for e in by_regex(p)] for p in pages]  # the regex also reads the storage class
    for name, fn in READERS.items():
        assert [[e[:4] for e in fn(p)] for p in pages] == want, f"{name} reads the pages differently"
    print(f"{a.pages} pages x 1,000 keys ({len(pages[0]):,} bytes a page), best of {a.reps}; Python "
          f"{sys.version.split()[0]}, expat {expat.EXPAT_VERSION}")
    best = {name: float("inf") for name in READERS}
    for _ in range(a.reps):  # interleaved: a busy machine slows every reader alike
        for name, fn in READERS.items():
            best[name] = min(best[name], _timed(fn, pages))
    results = {name: t / keys * 1e6 for name, t in best.items()}
    base = results["regex"]
    print("| reader | us per key | vs regex |")
    print("| --- | --- | --- |")
    for name, us in results.items():
        print(f"| {name} | {us:.2f} | {us / base:.2f}x |")
    ctl = make_page(random.Random(1), control=True)
    refused = []
    for name, fn in READERS.items():
        try:
            fn(ctl)
        except (ET.ParseError, expat.ExpatError) as exc:
            refused.append(f"{name} ({exc})")
    print(f"page with control characters (&#x1;): regex reads {len(by_regex(ctl)):,} keys; refused by: "
          + ("; ".join(refused) or "none"))


def _timed(fn, pages: list[bytes]) -> float:
    """CPU seconds of this process (not wall time: on a shared machine being descheduled is not
    the reader's cost)."""
    t = time.process_time()
    for p in pages:
        fn(p)
    return time.process_time() - t


if __name__ == "__main__":
    main()

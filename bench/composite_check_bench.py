"""Download of composite-checksum multipart objects (96 MiB, 8 MiB parts, SHA256 and CRC32C, written by
botocore) from LocalStack: another build (BASE, e.g. `git archive <commit> s3bulk | tar -x -C /tmp/base`,
which does not check composite checksums) against this one, alternating in the same run, 5 rounds,
median elapsed and CPU seconds from the summary. Run under `flock /tmp/s3bulk-bench.lock`.

    uv run --frozen --extra dask python bench/composite_check_bench.py /tmp/base
"""
import json, os, subprocess, sys, time, uuid, shutil
import botocore.session
EP = os.environ.get("S3BULK_TEST_ENDPOINT", "http://127.0.0.1:4566")
c = botocore.session.get_session().create_client("s3", endpoint_url=EP, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test")
b = "bench-" + uuid.uuid4().hex[:8]; c.create_bucket(Bucket=b)
MiB = 1 << 20
body = os.urandom(8 * MiB) * 12  # 96 MiB
for alg in ("SHA256", "CRC32C"):
    up = c.create_multipart_upload(Bucket=b, Key=f"{alg}.bin", ChecksumAlgorithm=alg)
    parts = []
    for n, at in enumerate(range(0, len(body), 8 * MiB), 1):
        r = c.upload_part(Bucket=b, Key=f"{alg}.bin", UploadId=up["UploadId"], PartNumber=n, Body=body[at:at + 8 * MiB], ChecksumAlgorithm=alg)
        parts.append({"PartNumber": n, "ETag": r["ETag"], f"Checksum{alg}": r[f"Checksum{alg}"]})
    c.complete_multipart_upload(Bucket=b, Key=f"{alg}.bin", UploadId=up["UploadId"], MultipartUpload={"Parts": parts})
env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1")
builds = {"base": sys.argv[1], "branch": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
res = {}
for rnd in range(5):
    for alg in ("SHA256", "CRC32C"):
        for name, root in builds.items():
            out = f"/tmp/composite-bench-{os.getpid()}-{name}"
            shutil.rmtree(out, ignore_errors=True)
            t = time.time()
            p = subprocess.run([sys.executable, "-m", "s3bulk", "copy", f"s3://{b}/{alg}.bin", out + "/x.bin", "--endpoint-url", EP,
                                "--path-style", "-w", "1", "--json"], capture_output=True, text=True, env=dict(env, PYTHONPATH=root), cwd=root)
            wall = time.time() - t
            s = [json.loads(l) for l in p.stdout.splitlines() if '"summary"' in l][-1]
            assert p.returncode == 0, p.stderr
            res.setdefault((alg, name), []).append((wall, s["cpu_seconds"], s["elapsed_seconds"]))
for k, v in sorted(res.items()):
    v.sort()
    print(k, "median elapsed %.2f s, cpu %.2f s" % (sorted(x[2] for x in v)[len(v) // 2], sorted(x[1] for x in v)[len(v) // 2]))

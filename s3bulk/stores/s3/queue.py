"""An SQS queue of a bucket's change events, for `sync --watch --watch-queue URL`: receive (long
poll), delete, keep invisible, count. The control plane, so aiobotocore (botocore's credential
chain, signing, retries) rather than the lean data path: a few requests a second at most.

Where the requests go (`sqs_address`), from the settings of SRC's side (setup.py `settle`):

- a queue on AWS (`https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`): what botocore's chain
  configures for SQS (AWS_ENDPOINT_URL_SQS, the profile's `services` section, AWS_ENDPOINT_URL,
  the profile's endpoint_url), else AWS's own endpoint for the queue's region. `--endpoint-url` is
  S3's: an S3 reached through a VPC endpoint or another host does not move the queue.
- a queue elsewhere (LocalStack, ElasticMQ, `http://HOST:PORT/...`): `--endpoint-url` when given
  (the queue on the same endpoint as the bucket), else botocore's chain for SQS, else the origin
  of the queue's URL, where it says the queue lives.

The region is the queue's own, read from its URL where the URL says it (AWS's host names,
LocalStack's path-style `/queue/REGION/ACCOUNT/NAME` and its `sqs.REGION.` host names), else the
side's. The CA bundle, proxies (NO_PROXY matched against the queue's endpoint), FIPS and
dual-stack are the side's. Requests are always signed: `--no-sign-request` reads a public bucket,
but only its owner's queue holds its events (or yours, subscribed to its SNS topic).

Errors come out as s3bulk's (one line each): a queue that does not exist is NotFound, a denied
request AccessDenied naming the actions the watcher needs, throttling Throttled, and so on
(errors.py's table for the rest). botocore retries throttling and 5xx answers itself here, in its
standard mode: these calls do not go through the engine's retry loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import replace
from typing import Any, Sequence
from urllib.parse import urlsplit

from ...config.urls import S3Options
from ...errors import AccessDenied, NotFound, StoreError, Throttled, UsageError
from ...http import requestlog
from ..queues import MAX_BATCH, MAX_VISIBILITY, MAX_WAIT, Message

__all__ = ["Message", "SqsQueue", "queue_url_from", "sqs_address", "MAX_WAIT", "MAX_BATCH"]

_NEEDED = "sqs:ReceiveMessage, sqs:DeleteMessage, sqs:ChangeMessageVisibility, sqs:GetQueueAttributes"
_MISSING_QUEUE = {"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "NonExistentQueue"}
_DENIED = {"AccessDenied", "AccessDeniedException", "KMS.AccessDeniedException", "KmsAccessDenied",
           "KmsDisabled", "KmsInvalidKeyUsage", "KmsInvalidState", "KmsNotFound"}
_THROTTLED = {"OverLimit", "RequestThrottled", "ThrottlingException", "KmsThrottled"}
_BAD_ADDRESS = {"InvalidAddress", "InvalidSecurity"}

# AWS's queue host names: sqs.REGION.amazonaws.com(.cn), sqs-fips.REGION..., the legacy
# queue.amazonaws.com (us-east-1) and REGION.queue.amazonaws.com
_AWS_HOST = re.compile(r"^(?:sqs(?:-fips)?\.(?P<region>[a-z0-9-]+)|(?:(?P<legacy>[a-z0-9-]+)\.)?queue)"
                       r"\.amazonaws\.com(?:\.cn)?$")
_HOST_REGION = re.compile(r"^sqs\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)\.")
_PATH_REGION = re.compile(r"^/queue/(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)/[^/]+/[^/]+$")
_ARN = re.compile(r"^arn:(?P<partition>aws[a-z-]*):sqs:(?P<region>[a-z0-9-]+):(?P<account>\d+):(?P<name>[^:/]+)$")


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def queue_url_from(text: str) -> str:
    """The queue's URL as given, or made from its ARN (`arn:aws:sqs:REGION:ACCOUNT:NAME`, AWS's
    host); UsageError for anything else."""
    text = text.strip()
    arn = _ARN.match(text)
    if arn:
        suffix = ".amazonaws.com.cn" if arn["partition"] == "aws-cn" else ".amazonaws.com"
        return f"https://sqs.{arn['region']}{suffix}/{arn['account']}/{arn['name']}"
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path.strip("/") == "":
        raise UsageError(f"not an SQS queue URL: {text!r} (expected https://sqs.REGION.amazonaws.com/ACCOUNT/NAME, "
                         "as `aws sqs get-queue-url` prints it, or the queue's ARN)")
    return text


def _queue_region(url: str) -> str | None:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    aws = _AWS_HOST.match(host)
    if aws:
        return aws["region"] or aws["legacy"] or "us-east-1"
    found = _HOST_REGION.match(host) or _PATH_REGION.match(parts.path)
    return found["region"] if found else None


def sqs_address(queue_url: str, opts: S3Options) -> tuple[str | None, str]:
    """(endpoint URL, region) of the queue's requests (None: AWS's endpoint for the region), from
    the side's options and settings (module docstring)."""
    from . import setup as s3setup

    settings = s3setup.settle(opts).settled
    assert settings is not None
    on_aws = _AWS_HOST.match((urlsplit(queue_url).hostname or "").lower()) is not None
    region = _queue_region(queue_url) or settings.region
    if not on_aws and opts.endpoint_url:
        return opts.endpoint_url, region
    configured = _configured_endpoint(opts)
    if configured:
        return configured, region
    if on_aws:
        return None, region
    parts = urlsplit(queue_url)
    return f"{parts.scheme}://{parts.netloc}", region


def _configured_endpoint(opts: S3Options) -> str | None:
    """What botocore's chain configures for SQS clients: AWS_ENDPOINT_URL_SQS, the profile's
    services section, AWS_ENDPOINT_URL, the profile's endpoint_url (None: nothing)."""
    import botocore.exceptions
    import botocore.session
    from botocore.configprovider import ConfiguredEndpointProvider

    try:
        session = botocore.session.Session(profile=opts.profile)
        if session.get_config_variable("ignore_configured_endpoint_urls"):
            return None
        found = ConfiguredEndpointProvider(full_config=session.full_config,
                                           scoped_config=session.get_scoped_config(),
                                           client_name="sqs").provide()
    except botocore.exceptions.BotoCoreError:
        return None  # settle() already said what is wrong with the configuration
    if found and not str(found).startswith(("http://", "https://")):
        raise UsageError(f"invalid SQS endpoint URL {found!r}: expected http://HOST[:PORT] or https://...")
    return str(found) if found else None


def _translate(exc: BaseException, op: str, url: str) -> StoreError:
    """A botocore exception of an SQS call as s3bulk's error (one line, no credentials)."""
    from botocore import exceptions as bexc

    from .errors import translate

    if isinstance(exc, bexc.ClientError):
        err = exc.response.get("Error", {}) or {}
        code = str(err.get("Code", "") or "")
        query_code = str(err.get("QueryErrorCode", "") or "")
        msg = " ".join(str(err.get("Message", "") or "").split())
        codes = {code, query_code, code.rpartition("#")[2]}
        if codes & _MISSING_QUEUE:
            return NotFound("queue does not exist (check the URL: `aws sqs get-queue-url --queue-name NAME`)",
                            op=op, url=url)
        if codes & _DENIED:
            return AccessDenied(f"access denied ({code}{': ' + msg if msg else ''}); the watcher needs {_NEEDED}"
                                f"{' and kms:Decrypt on the queue key' if code.startswith('Kms') else ''}",
                                op=op, url=url)
        if codes & _THROTTLED:
            return Throttled(f"throttled by SQS ({code}{': ' + msg if msg else ''})", op=op, url=url)
        if codes & _BAD_ADDRESS:
            return StoreError(f"not a queue this endpoint serves ({code}{': ' + msg if msg else ''})", op=op, url=url)
    return translate(exc, op, url)


class SqsQueue:
    """One queue, one aiobotocore client (made by `open`, which checks the queue is there and
    readable before anything else happens)."""

    def __init__(self, url: str, client: Any, stack: contextlib.AsyncExitStack, endpoint: str | None,
                 region: str) -> None:
        self.url = url
        self.endpoint = endpoint
        self.region = region
        self._client = client
        self._stack = stack

    @classmethod
    async def open(cls, queue: str, opts: S3Options) -> "SqsQueue":
        """The queue at URL (or ARN) `queue`, reached with SRC's side's settings `opts`. Raises
        UsageError for what is not a queue URL, NotFound / AccessDenied / ConnectFailed ... when
        the queue cannot be read (a GetQueueAttributes, here)."""
        from aiobotocore.config import AioConfig
        from aiobotocore.session import AioSession

        from . import setup as s3setup

        url = queue_url_from(queue)
        opts = s3setup.settle(opts)
        settings = opts.settled
        assert settings is not None
        endpoint, region = sqs_address(url, opts)
        settings = replace(settings, region=region)
        session = AioSession(profile=opts.profile)
        s3setup.pin(session, settings)
        aws_endpoint = f"https://sqs.{region}.amazonaws.com"
        config = AioConfig(
            retries={"mode": "standard", "total_max_attempts": 4},
            connect_timeout=10,
            read_timeout=MAX_WAIT + 20,  # a long poll answers after up to 20 s of silence
            tcp_keepalive=True,
            max_pool_connections=16,
            proxies=s3setup.proxies_for(settings, endpoint or aws_endpoint),
            proxies_config=dict(settings.proxies_config) or None,
            use_fips_endpoint=settings.use_fips_endpoint,
            use_dualstack_endpoint=settings.use_dualstack_endpoint,
            ignore_configured_endpoint_urls=True,
        )
        stack = contextlib.AsyncExitStack()
        try:
            client = await stack.enter_async_context(session.create_client(
                "sqs", endpoint_url=endpoint, region_name=region, verify=settings.ca_bundle, config=config))
            log = requestlog.current()
            if log is not None:  # --log-requests (http/requestlog.py)
                log.hook(client.meta.events)
            self = cls(url, client, stack, endpoint, region)
            await self.attributes(["QueueArn"], op="open queue")
        except BaseException as exc:
            await stack.aclose()
            if isinstance(exc, Exception) and not isinstance(exc, (StoreError, UsageError)):
                raise _translate(exc, "open queue", url) from None
            raise
        return self

    async def _call(self, op: str, name: str, **params: Any) -> Any:
        try:
            return await getattr(self._client, name)(QueueUrl=self.url, **params)
        except StoreError:
            raise
        except Exception as exc:
            raise _translate(exc, op, self.url) from None

    async def attributes(self, names: Sequence[str], op: str = "queue attributes") -> dict[str, str]:
        """GetQueueAttributes: the named attributes, as SQS gives them (strings)."""
        answer = await self._call(op, "get_queue_attributes", AttributeNames=list(names))
        return dict(answer.get("Attributes") or {})

    async def depth(self) -> int:
        """Messages waiting to be received (ApproximateNumberOfMessages: approximate, as SQS says;
        the ones received and not yet deleted are not counted)."""
        found = await self.attributes(["ApproximateNumberOfMessages"], op="queue depth")
        try:
            return int(found.get("ApproximateNumberOfMessages", 0))
        except ValueError:
            return 0

    async def receive(self, max_messages: int = MAX_BATCH, wait: float = MAX_WAIT,
                      visibility_timeout: int | None = None) -> list[Message]:
        """ReceiveMessage: up to `max_messages` (at most 10), waiting up to `wait` seconds (a long
        poll, at most 20; whole seconds) for the first; each hidden from other receives for
        `visibility_timeout` seconds (None: the queue's default)."""
        params: dict[str, Any] = {"MaxNumberOfMessages": max(1, min(MAX_BATCH, max_messages)),
                                  "WaitTimeSeconds": max(0, min(MAX_WAIT, int(wait))),
                                  "MessageSystemAttributeNames": ["ApproximateReceiveCount", "SentTimestamp"]}
        if visibility_timeout is not None:
            params["VisibilityTimeout"] = max(0, min(MAX_VISIBILITY, int(visibility_timeout)))
        answer = await self._call("receive from queue", "receive_message", **params)
        out = []
        for m in answer.get("Messages") or ():
            attrs = m.get("Attributes") or {}
            out.append(Message(str(m["MessageId"]), str(m["ReceiptHandle"]), str(m.get("Body") or ""),
                               _int(attrs.get("ApproximateReceiveCount")) or 1, _int(attrs.get("SentTimestamp"))))
        return out

    async def delete(self, messages: Sequence[Message]) -> list[Message]:
        """DeleteMessageBatch, 10 at a time: the messages SQS did not delete (a receipt handle that
        is no longer current: the message was received again since, and comes back)."""
        return await self._batches("delete from queue", "delete_message_batch", messages, {})

    async def change_visibility(self, messages: Sequence[Message], seconds: int) -> list[Message]:
        """ChangeMessageVisibilityBatch, 10 at a time: hide the messages for `seconds` more from
        now (0: visible again at once). The messages SQS did not change (handles no longer
        current) come back."""
        seconds = max(0, min(MAX_VISIBILITY, int(seconds)))
        return await self._batches("change visibility", "change_message_visibility_batch", messages,
                                   {"VisibilityTimeout": seconds})

    async def _batches(self, op: str, name: str, messages: Sequence[Message], extra: dict[str, Any]) -> list[Message]:
        chunks = [list(messages[i:i + MAX_BATCH]) for i in range(0, len(messages), MAX_BATCH)]

        async def one(chunk: list[Message]) -> list[Message]:
            entries = [{"Id": str(i), "ReceiptHandle": m.receipt, **extra} for i, m in enumerate(chunk)]
            answer = await self._call(op, name, Entries=entries)
            return [chunk[int(f["Id"])] for f in answer.get("Failed") or ()]

        failed: list[Message] = []
        for result in await asyncio.gather(*(one(c) for c in chunks)):
            failed.extend(result)
        return failed

    async def aclose(self) -> None:
        await self._stack.aclose()

"""SigV4 verification of `wfc serve --credentials FILE`, driven by boto3 as AWS users sign.

Run by wfc-cli/tests/serve_ops.rs:  python sigv4_suite.py ENDPOINT LEDGER ACCESS_KEY SECRET

A correctly signed client works (it creates a machine and runs an execution whose Task appends
to LEDGER through a command handler); an unsigned client, a wrong secret, an unknown access key
and a request signed an hour ago are refused with AWS's errors, and none of them starts an
execution (the ledger and the execution list show it). Temporary credentials work with their
session token (a boto3 Session) and are refused without it, with a wrong one, or expired;
presigned requests (botocore's SigV4QueryAuth) work, and expired, forged or tokenless ones are
refused, starting nothing.
"""

import datetime
import hashlib
import json
import sys
import time
import urllib.error
import urllib.request
from unittest import mock

import boto3
import botocore
import botocore.auth
import botocore.awsrequest
import botocore.credentials
import botocore.exceptions
from botocore.config import Config

ENDPOINT, LEDGER, KEY, SECRET = sys.argv[1:5]
ROLE = "arn:aws:iam::123456789012:role/wfc-test"
DEFINITION = json.dumps({"StartAt": "Append", "States": {"Append": {"Type": "Task", "Resource": "Append", "End": True}}})


def client(key=KEY, secret=SECRET, unsigned=False):
    config = Config(retries={"total_max_attempts": 1}, inject_host_prefix=False)
    if unsigned:
        config = config.merge(Config(signature_version=botocore.UNSIGNED))
    return boto3.client(
        "stepfunctions",
        endpoint_url=ENDPOINT,
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=config,
    )


def refused(call, code, message_start=None):
    try:
        call()
    except botocore.exceptions.ClientError as e:
        got = e.response["Error"]["Code"]
        assert got == code, f"expected {code}, got {got}: {e.response['Error']}"
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 400, e.response
        if message_start:
            assert e.response["Error"]["Message"].startswith(message_start), e.response["Error"]
        return e.response["Error"]["Message"]
    raise AssertionError(f"expected {code}, the call succeeded")


def ledger():
    try:
        with open(LEDGER) as f:
            # ledger_handlers' lines: "<execution> <state> <retry>".
            return [line.split()[0] for line in f.read().splitlines() if line]
    except FileNotFoundError:
        return []


good = client()
machine = good.create_state_machine(name="Signed", definition=DEFINITION, roleArn=ROLE)["stateMachineArn"]
execution = good.start_execution(stateMachineArn=machine, name="good", input='{"who": "good"}')["executionArn"]
deadline = time.time() + 120
while (d := good.describe_execution(executionArn=execution))["status"] == "RUNNING":
    assert time.time() < deadline, "the signed execution did not finish"
    time.sleep(0.1)
assert d["status"] == "SUCCEEDED", d
assert ledger() == ["Signed:good"], ledger()
print("signed client: ok")

start = lambda c, name: lambda: c.start_execution(stateMachineArn=machine, name=name, input=json.dumps({"who": name}))
# Unsigned (botocore.UNSIGNED sends no Authorization header).
refused(start(client(unsigned=True), "unsigned"), "UnrecognizedClientException")
# A wrong secret for a known access key.
refused(start(client(secret=SECRET + "x"), "wrong"), "InvalidSignatureException", "The request signature we calculated does not match")
# An access key the server does not know.
refused(start(client(key="AKIDUNKNOWN"), "unknown"), "UnrecognizedClientException", "The security token included in the request is invalid")
# Correctly signed, an hour ago: expired.
an_hour_ago = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(hours=1)
with mock.patch.object(botocore.auth, "get_current_datetime", return_value=an_hour_ago):
    refused(start(client(), "expired"), "InvalidSignatureException", "Signature expired")
# Raw requests: a forged Authorization header and a plain unsigned POST.
def raw(headers):
    req = urllib.request.Request(
        ENDPOINT + "/",
        data=json.dumps({"stateMachineArn": machine, "name": "raw"}).encode(),
        headers={"X-Amz-Target": "AWSStepFunctions.StartExecution", "Content-Type": "application/x-amz-json-1.0", **headers},
        method="POST",
    )
    try:
        urllib.request.urlopen(req)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
    raise AssertionError("a raw unsigned request succeeded")

status, body = raw({})
assert (status, body["__type"]) == (400, "UnrecognizedClientException"), body


# Temporary credentials (serve_ops.rs writes them into the server's credentials file): a
# session token that must come with them, and an expired pair.
TEMP, TEMP_SECRET, TEMP_TOKEN = "AKIDWFCTEMP", "temp/secret", "session/token+1=="
OLD, OLD_SECRET, OLD_TOKEN = "AKIDWFCOLD", "old/secret", "old-token"


def session_client(key, secret, token):
    session = boto3.Session(aws_access_key_id=key, aws_secret_access_key=secret, aws_session_token=token)
    config = Config(retries={"total_max_attempts": 1}, inject_host_prefix=False)
    return session.client("stepfunctions", endpoint_url=ENDPOINT, region_name="us-east-1", config=config)


def finish(c, arn):
    deadline = time.time() + 120
    while (d := c.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.time() < deadline, f"{arn} did not finish"
        time.sleep(0.1)
    return d


temp = session_client(TEMP, TEMP_SECRET, TEMP_TOKEN)
arn = temp.start_execution(stateMachineArn=machine, name="session", input='{"who": "session"}')["executionArn"]
assert finish(temp, arn)["status"] == "SUCCEEDED"
refused(start(session_client(TEMP, TEMP_SECRET, TEMP_TOKEN + "x"), "wrong-token"), "UnrecognizedClientException", "The security token included in the request is invalid")
refused(start(client(key=TEMP, secret=TEMP_SECRET), "no-token"), "UnrecognizedClientException", "The security token included in the request is invalid")
refused(start(session_client(KEY, SECRET, "not-a-session"), "token-for-a-permanent-key"), "UnrecognizedClientException")
refused(start(session_client(OLD, OLD_SECRET, OLD_TOKEN), "expired-credentials"), "ExpiredTokenException", "The security token included in the request is expired")
print("session tokens: ok")


# Presigned requests (the signature in the query string), as botocore presigns them. The body's
# hash is signed through X-Amz-Content-SHA256 (botocore would move a body into the query).
def presigned(operation, body, key=KEY, secret=SECRET, token=None, expires=60, when=None, tamper=None):
    data = json.dumps(body).encode()
    request = botocore.awsrequest.AWSRequest(
        method="POST",
        url=ENDPOINT + "/",
        headers={
            "X-Amz-Target": f"AWSStepFunctions.{operation}",
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Content-SHA256": hashlib.sha256(data).hexdigest(),
        },
    )
    signer = botocore.auth.SigV4QueryAuth(botocore.credentials.Credentials(key, secret, token), "states", "us-east-1", expires=expires)
    if when is None:
        signer.add_auth(request)
    else:
        with mock.patch.object(botocore.auth, "get_current_datetime", return_value=when):
            signer.add_auth(request)
    prepared = request.prepare()
    url = prepared.url
    assert "X-Amz-Signature=" in url and "Authorization" not in prepared.headers, prepared.headers
    if tamper:
        url, data = tamper(url, data)
    # The prepared request has no body (so a Content-Length of 0): urllib sets the body's own.
    headers = {k: v for k, v in prepared.headers.items() if k.lower() != "content-length"}
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


status, body = presigned("StartExecution", {"stateMachineArn": machine, "name": "presigned", "input": '{"who": "presigned"}'})
assert status == 200, body
assert finish(good, body["executionArn"])["status"] == "SUCCEEDED"
status, body = presigned("ListStateMachines", {}, key=TEMP, secret=TEMP_SECRET, token=TEMP_TOKEN)
assert status == 200 and [m["name"] for m in body["stateMachines"]] == ["Signed"], body
start_body = lambda name: {"stateMachineArn": machine, "name": name}  # noqa: E731
expectations = [
    ({"when": an_hour_ago}, "InvalidSignatureException", "Signature expired"),
    ({"tamper": lambda u, d: (u[:-4] + ("0000" if not u.endswith("0000") else "1111"), d)}, "InvalidSignatureException", "The request signature we calculated"),
    ({"tamper": lambda u, d: (u, d.replace(b"forged", b"forgeD"))}, "InvalidSignatureException", "The request signature we calculated"),
    ({"key": TEMP, "secret": TEMP_SECRET}, "UnrecognizedClientException", "The security token included in the request is invalid"),
    ({"key": TEMP, "secret": TEMP_SECRET, "token": "wrong"}, "UnrecognizedClientException", "The security token included in the request is invalid"),
    ({"key": OLD, "secret": OLD_SECRET, "token": OLD_TOKEN}, "ExpiredTokenException", "The security token included in the request is expired"),
]
for kwargs, code, message in expectations:
    status, body = presigned("StartExecution", start_body("forged"), **kwargs)
    assert (status, body["__type"]) == (400, code) and body["message"].startswith(message), (kwargs, body)
print("presigned: ok")
stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
status, body = raw({
    "X-Amz-Date": stamp,
    "Authorization": f"AWS4-HMAC-SHA256 Credential={KEY}/{stamp[:8]}/us-east-1/states/aws4_request, SignedHeaders=host;x-amz-date, Signature={'0' * 64}",
})
assert (status, body["__type"]) == (400, "InvalidSignatureException"), body
print("refusals: ok")

# Nothing ran for the refused requests: one execution, one ledger line.
listed = good.list_executions(stateMachineArn=machine)["executions"]
assert sorted(e["name"] for e in listed) == ["good", "presigned", "session"], listed
assert sorted(ledger()) == ["Signed:good", "Signed:presigned", "Signed:session"], ledger()
print("nothing ran: ok")

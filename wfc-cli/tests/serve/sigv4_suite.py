"""SigV4 verification of `wfc serve --credentials FILE`, driven by boto3 as AWS users sign.

Run by wfc-cli/tests/serve_ops.rs:  python sigv4_suite.py ENDPOINT LEDGER ACCESS_KEY SECRET

A correctly signed client works (it creates a machine and runs an execution whose Task appends
to LEDGER through a command handler); an unsigned client, a wrong secret, an unknown access key
and a request signed an hour ago are refused with AWS's errors, and none of them starts an
execution (the ledger and the execution list show it).
"""

import datetime
import json
import sys
import time
import urllib.error
import urllib.request
from unittest import mock

import boto3
import botocore
import botocore.auth
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
stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
status, body = raw({
    "X-Amz-Date": stamp,
    "Authorization": f"AWS4-HMAC-SHA256 Credential={KEY}/{stamp[:8]}/us-east-1/states/aws4_request, SignedHeaders=host;x-amz-date, Signature={'0' * 64}",
})
assert (status, body["__type"]) == (400, "InvalidSignatureException"), body
print("refusals: ok")

# Nothing ran for the refused requests: one execution, one ledger line.
listed = good.list_executions(stateMachineArn=machine)["executions"]
assert [e["name"] for e in listed] == ["good"], listed
assert ledger() == ["Signed:good"], ledger()
print("nothing ran: ok")

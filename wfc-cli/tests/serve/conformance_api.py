"""The AWS-recorded cases with no Task, run through `wfc serve`'s API, against `wfc test`.

Run by wfc-cli/tests/serve_ops.rs:  python conformance_api.py WFC ENDPOINT CORPUS REPORT

Selects the runnable cases of CORPUS (../shared/conformance/asl-aws) whose `service_class` is
`none`, runs them with `wfc test --engine interp --json REPORT`, then runs each through the API
(CreateStateMachine, then StartExecution and DescribeExecution until it ends, or
StartSyncExecution for the recorded StartSyncExecution cases) from a pool of concurrent clients,
and checks that the API gives the same status, output, error and cause as `wfc test` did.

The server runs with `--account 111111111111 --virtual-time`, and each case's machine and
execution are named as `wfc test` names them (`<category>-<file stem>`) with `wfc test`'s role,
so `$$.Execution.Id`/`Name`/`RoleArn` and `$$.StateMachine.Id`/`Name` are the same on both
sides; waits are skipped on both sides (the server's virtual time). What cannot be the same
is compared with a stated reason instead of leaving the case out: in the cases that read the
context object (`$$`, `$states.context`) or fix the start instant (`clock`), timestamps
(`$$.Execution.StartTime`, `$$.State.EnteredTime`: `wfc test` starts the execution at the
recording's instant or 2024-01-01, the server at the real instant) and uuids (an EXPRESS
execution's ARN ends with a uuid drawn per run) are masked on both sides before comparing.
`StartExecution` of an EXPRESS machine is a durable execution with a STANDARD execution ARN in
`wfc serve` (docs/serve.md), so `wfc test`'s `...:express:M:N:<uuid>` is compared as
`...:execution:M:N` for those cases. Left out, counted and printed: `clock` cases that Wait for
an instant more than 2^31 - 1 s after the recorded start (AWS's limit on a Wait's delay, counted
from the start: the outcome depends on the start instant, which the API cannot set).
"""

import concurrent.futures
import datetime
import glob
import json
import os
import re
import subprocess
import sys
import time

import boto3
from botocore.config import Config

WFC, ENDPOINT, CORPUS, REPORT = sys.argv[1:5]
def instants(value):
    """Every RFC 3339 instant written in a document."""
    if isinstance(value, str):
        try:
            yield datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
    elif isinstance(value, list):
        for v in value:
            yield from instants(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from instants(v)


def beyond_wait_limit(case):
    start = datetime.datetime.fromisoformat(case["clock"].replace("Z", "+00:00"))
    limit = datetime.timedelta(seconds=2**31 - 1)
    return any(t - start > limit for t in instants([case["definition"], case["input"]]) if t.tzinfo)


selected, left_out = [], {}
for path in sorted(glob.glob(os.path.join(CORPUS, "*", "*.json"))):
    with open(path) as f:
        case = json.load(f)
    if case.get("service_class") != "none":
        continue
    text = json.dumps(case["definition"])
    # Reads the execution's identity or clock: compared with timestamps and uuids masked.
    case["_masked"] = bool(case.get("clock")) or "$$" in text or "$states.context" in text
    if case.get("clock") and beyond_wait_limit(case):
        left_out["Wait beyond 2^31 - 1 s of the recorded start"] = left_out.get("Wait beyond 2^31 - 1 s of the recorded start", 0) + 1
        continue
    selected.append((path, case))
assert len(selected) >= 650, f"only {len(selected)} cases selected from {CORPUS}"
masked_cases = sum(1 for _, c in selected if c["_masked"])
assert masked_cases >= 30, f"only {masked_cases} cases read the context object"


def execution_name(path):
    """`wfc test`'s name for a recorded case's machine and execution (wfc-cli/src/recorded.rs)."""
    category = os.path.basename(os.path.dirname(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", f"{category}-{stem}")
    return clean[-80:]


TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def mask(value):
    if isinstance(value, str):
        return UUID.sub("<uuid>", TIMESTAMP.sub("<timestamp>", value))
    if isinstance(value, list):
        return [mask(v) for v in value]
    if isinstance(value, dict):
        return {k: mask(v) for k, v in value.items()}
    return value

run = subprocess.run(
    [WFC, "test", "--engine", "interp", "--json", REPORT] + [p for p, _ in selected],
    capture_output=True,
    text=True,
)
assert run.returncode in (0, 1), f"wfc test failed to run: {run.stderr}"
with open(REPORT) as f:
    report = {c["file"]: c for c in json.load(f)["cases"]}

jobs = [(i, path, case, report[path]["outcomes"]["interp"]) for i, (path, case) in enumerate(selected)]
ROLE = "arn:aws:iam::111111111111:role/wfc-local"  # `wfc test`'s role for a recorded case

config = Config(inject_host_prefix=False, retries={"total_max_attempts": 1}, max_pool_connections=32, read_timeout=120)
sfn = boto3.client(
    "stepfunctions",
    endpoint_url=ENDPOINT,
    region_name="us-east-1",
    aws_access_key_id="test",
    aws_secret_access_key="test",
    config=config,
)


def api_outcome(job):
    i, path, case, _ = job
    sync = case.get("snapshot_key") == "start_execution_sync_response"
    machine_type = case.get("state_machine_type", "STANDARD")
    name = execution_name(path)
    machine = sfn.create_state_machine(
        name=name, definition=json.dumps(case["definition"]), roleArn=ROLE, type=machine_type
    )["stateMachineArn"]
    payload = json.dumps(case["input"])
    if sync:
        d = sfn.start_sync_execution(stateMachineArn=machine, name=name, input=payload)
    else:
        arn = sfn.start_execution(stateMachineArn=machine, name=name, input=payload)["executionArn"]
        deadline = time.time() + 120  # a hang guard, not an assertion about time
        while (d := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
            assert time.time() < deadline, f"{path}: still RUNNING"
            time.sleep(0.05)
    got = {"status": d["status"]}
    if "output" in d:
        got["output"] = json.loads(d["output"])
    for key in ("error", "cause"):
        if d.get(key):
            got[key] = d[key]
    return got


def guarded(job):
    try:
        return api_outcome(job)
    except Exception as e:  # one case's failure is reported with the others
        return {"exception": repr(e)}


def expected(outcome):
    want = {"status": outcome["status"]}
    if "output" in outcome:  # a null output is an output (DescribeExecution's "null")
        want["output"] = outcome["output"]
    for key in ("error", "cause"):
        if key in outcome and outcome[key] not in (None, ""):
            want[key] = outcome[key]
    return want


started = time.time()
problems = []
with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
    for job, got in zip(jobs, pool.map(guarded, jobs)):
        want = expected(job[3])
        if job[2]["_masked"]:
            want, got = mask(want), mask(got)
        if job[2].get("state_machine_type") == "EXPRESS" and job[2].get("snapshot_key") != "start_execution_sync_response":
            want = json.loads(re.sub(r":express:([^:\"]+):([^:\"]+):<uuid>", r":execution:\1:\2", json.dumps(want)))
        if got != want:
            problems.append(f"{os.path.relpath(job[1], CORPUS)}:\n  wfc test: {json.dumps(want)[:400]}\n  API:      {json.dumps(got)[:400]}")
elapsed = time.time() - started
print(f"{len(jobs)} cases through the API in {elapsed:.1f} s ({masked_cases} with timestamps and uuids masked); left out: {left_out}; {len(problems)} differ")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)

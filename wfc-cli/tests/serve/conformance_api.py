"""The AWS-recorded cases with no Task, run through `wfc serve`'s API, against `wfc test`.

Run by wfc-cli/tests/serve_ops.rs:  python conformance_api.py WFC ENDPOINT CORPUS REPORT

Selects the runnable cases of CORPUS (../shared/conformance/asl-aws) whose `service_class` is
`none`, runs them with `wfc test --engine interp --json REPORT`, then runs each through the API
(CreateStateMachine, then StartExecution and DescribeExecution until it ends, or
StartSyncExecution for the recorded StartSyncExecution cases) from a pool of concurrent clients,
and checks that the API gives the same status, output, error and cause as `wfc test` did.

Left out, with the count printed: cases whose result depends on the execution's identity or
clock (the definition reads the context object `$$`/`$states.context`, or the case fixes the
start instant with `clock`: `wfc test` gives them the recording's, the server its own), and
cases whose waits take more than 2 s of the execution's time (the server waits in real time).
"""

import concurrent.futures
import glob
import json
import os
import subprocess
import sys
import time

import boto3
from botocore.config import Config

WFC, ENDPOINT, CORPUS, REPORT = sys.argv[1:5]
ROLE = "arn:aws:iam::123456789012:role/wfc-conformance"

selected, left_out = [], {}
for path in sorted(glob.glob(os.path.join(CORPUS, "*", "*.json"))):
    with open(path) as f:
        case = json.load(f)
    if case.get("service_class") != "none":
        continue
    text = json.dumps(case["definition"])
    why = None
    if case.get("clock"):
        why = "clock"
    elif "$$" in text or "$states.context" in text:
        why = "context object"
    if why:
        left_out[why] = left_out.get(why, 0) + 1
    else:
        selected.append((path, case))
assert len(selected) >= 500, f"only {len(selected)} cases selected from {CORPUS}"

run = subprocess.run(
    [WFC, "test", "--engine", "interp", "--json", REPORT] + [p for p, _ in selected],
    capture_output=True,
    text=True,
)
assert run.returncode in (0, 1), f"wfc test failed to run: {run.stderr}"
with open(REPORT) as f:
    report = {c["file"]: c for c in json.load(f)["cases"]}

jobs = []
for i, (path, case) in enumerate(selected):
    outcome = report[path]["outcomes"]["interp"]
    if outcome.get("elapsed_seconds", 0) > 2:
        left_out["waits over 2 s"] = left_out.get("waits over 2 s", 0) + 1
        continue
    jobs.append((i, path, case, outcome))

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
    machine = sfn.create_state_machine(
        name=f"case{i}", definition=json.dumps(case["definition"]), roleArn=ROLE, type=machine_type
    )["stateMachineArn"]
    payload = json.dumps(case["input"])
    if sync:
        d = sfn.start_sync_execution(stateMachineArn=machine, name=f"run{i}", input=payload)
    else:
        arn = sfn.start_execution(stateMachineArn=machine, name=f"run{i}", input=payload)["executionArn"]
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
        if got != want:
            problems.append(f"{os.path.relpath(job[1], CORPUS)}:\n  wfc test: {json.dumps(want)[:400]}\n  API:      {json.dumps(got)[:400]}")
elapsed = time.time() - started
print(f"{len(jobs)} cases through the API in {elapsed:.1f} s; left out: {left_out}; {len(problems)} differ")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)

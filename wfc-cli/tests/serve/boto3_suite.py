"""Drives `wfc serve` with boto3, unchanged, as a Step Functions user's tests would.

Run by wfc-cli/tests/serve.rs:  python boto3_suite.py ENDPOINT TOKEN_DIR PHASE OPERATION...

Every response body is checked against botocore's own service model (the shapes its parser
uses): each member must exist in the operation's output shape (recursively), and every required
member must be there. Every operation the server claims to implement must exist in the model.

PHASE `all` runs the whole suite; `before-restart` / `after-restart` check that state machines
and executions survive a restart of the server on the same store.
"""

import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request

import boto3
import botocore.exceptions
from botocore.config import Config

ENDPOINT, TOKEN_DIR, PHASE = sys.argv[1], sys.argv[2], sys.argv[3]
CLAIMED = sys.argv[4:]
ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/wfc-test"
CHECKED = {}


def sm_arn(name):
    return f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:{name}"


def client():
    # StartSyncExecution is host-prefixed (sync-<host>): turned off for a local endpoint.
    config = Config(inject_host_prefix=False, retries={"max_attempts": 1}, read_timeout=90)
    c = boto3.client(
        "stepfunctions",
        endpoint_url=ENDPOINT,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=config,
    )
    c.meta.events.register("after-call.sfn.*", check_response)
    return c


def check_shape(value, shape, path):
    kind = shape.type_name
    if kind == "structure":
        assert isinstance(value, dict), f"{path}: expected an object, got {value!r}"
        for key, v in value.items():
            assert key in shape.members, f"{path}.{key} is not a member of {shape.name} (members: {sorted(shape.members)})"
            check_shape(v, shape.members[key], f"{path}.{key}")
        for key in shape.required_members:
            assert key in value, f"{path}: required member {key} of {shape.name} is missing"
    elif kind == "list":
        assert isinstance(value, list), f"{path}: expected a list"
        for i, v in enumerate(value):
            check_shape(v, shape.member, f"{path}[{i}]")
    elif kind == "string":
        assert isinstance(value, str), f"{path}: expected a string, got {value!r}"
        if shape.enum:
            # wfc's own Serverless Workflow event types are not in AWS's enum; ASL ones must be.
            assert value in shape.enum or value.startswith(("Sw", "Event")), f"{path}: {value!r} is not one of {shape.enum}"
    elif kind in ("integer", "long"):
        assert isinstance(value, int) and not isinstance(value, bool), f"{path}: expected an integer"
    elif kind == "boolean":
        assert isinstance(value, bool), f"{path}: expected a boolean"
    elif kind == "timestamp":
        assert isinstance(value, (int, float)), f"{path}: expected epoch seconds"


def check_response(http_response, parsed, model, **kwargs):
    if http_response.status_code != 200:
        body = json.loads(http_response.content)
        assert set(body) <= {"__type", "message"}, f"{model.name}: error body {body}"
        return
    body = json.loads(http_response.content or b"{}")
    check_shape(body, model.output_shape, model.name)
    CHECKED[model.name] = CHECKED.get(model.name, 0) + 1


def expect_error(code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except botocore.exceptions.ClientError as e:
        got = e.response["Error"]["Code"]
        assert got == code, f"expected {code}, got {got}: {e.response['Error'].get('Message')}"
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 400, e.response["ResponseMetadata"]
        return e.response["Error"].get("Message", "")
    raise AssertionError(f"expected {code}, the call succeeded")


def wait_for(what, fn, limit=120):
    """A hang guard, not a timing assertion."""
    deadline = time.time() + limit
    while True:
        v = fn()
        if v:
            return v
        assert time.time() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


def finished(sfn, arn):
    def done():
        d = sfn.describe_execution(executionArn=arn)
        return d if d["status"] != "RUNNING" else None

    return wait_for(f"{arn} to finish", done)


def definition(states, start):
    return json.dumps({"StartAt": start, "States": states}, indent=2)


ORDER = definition(
    {
        "Prepare": {"Type": "Pass", "Parameters": {"n.$": "$.n"}, "Next": "Double"},
        "Double": {"Type": "Task", "Resource": "Double", "Next": "Settle"},
        "Settle": {"Type": "Wait", "Seconds": 0, "Next": "Done"},
        "Done": {"Type": "Succeed"},
    },
    "Prepare",
)


def model_claims(sfn):
    names = set(sfn.meta.service_model.operation_names)
    missing = [op for op in CLAIMED if op not in names]
    assert not missing, f"operations not in the service model: {missing}"
    assert len(CLAIMED) >= 21, CLAIMED


def machines_and_executions(sfn):
    arn = sfn.create_state_machine(name="Order", definition=ORDER, roleArn=ROLE)["stateMachineArn"]
    assert arn == sm_arn("Order"), arn
    # The same request again is idempotent; another definition under the name is refused.
    assert sfn.create_state_machine(name="Order", definition=ORDER, roleArn=ROLE)["stateMachineArn"] == arn
    expect_error("StateMachineAlreadyExists", sfn.create_state_machine, name="Order", definition=definition({"P": {"Type": "Pass", "End": True}}, "P"), roleArn=ROLE)
    d = sfn.describe_state_machine(stateMachineArn=arn)
    assert (d["name"], d["type"], d["roleArn"], d["definition"]) == ("Order", "STANDARD", ROLE, ORDER), d

    arns = [sfn.start_execution(stateMachineArn=arn, name=f"order-{i}", input=json.dumps({"n": i}))["executionArn"] for i in range(5)]
    assert arns[0] == f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Order:order-0"
    # Idempotent by name: the same input while it runs answers as the first call did (or, once
    # it finished, ExecutionAlreadyExists as on AWS); another input is refused.
    try:
        again = sfn.start_execution(stateMachineArn=arn, name="order-0", input=json.dumps({"n": 0}))
        assert again["executionArn"] == arns[0]
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "ExecutionAlreadyExists"
    expect_error("ExecutionAlreadyExists", sfn.start_execution, stateMachineArn=arn, name="order-0", input=json.dumps({"n": 99}))
    for i, a in enumerate(arns):
        d = finished(sfn, a)
        assert d["status"] == "SUCCEEDED", d
        assert json.loads(d["output"]) == {"doubled": 2 * i}, d
        assert json.loads(d["input"]) == {"n": i}

    # History: paged by 2 with the paginator, equal to one call; reversed; without data.
    whole = sfn.get_execution_history(executionArn=arns[3])["events"]
    types = [e["type"] for e in whole]
    assert types[0] == "ExecutionStarted" and types[-1] == "ExecutionSucceeded", types
    assert "TaskScheduled" in types and "TaskSucceeded" in types and "WaitStateEntered" in types, types
    paged, pages = [], 0
    for page in sfn.get_paginator("get_execution_history").paginate(executionArn=arns[3], PaginationConfig={"PageSize": 2}):
        paged += page["events"]
        pages += 1
    assert paged == whole and pages == (len(whole) + 1) // 2, (pages, len(whole))
    rev = sfn.get_execution_history(executionArn=arns[3], reverseOrder=True, maxResults=3)
    assert [e["id"] for e in rev["events"]] == [len(whole), len(whole) - 1, len(whole) - 2] and "nextToken" in rev
    bare = sfn.get_execution_history(executionArn=arns[3], includeExecutionData=False)["events"]
    assert "input" not in bare[0]["executionStartedEventDetails"], bare[0]
    assert whole[0]["executionStartedEventDetails"]["roleArn"] == ROLE, whole[0]
    sched = next(e for e in whole if e["type"] == "TaskScheduled")["taskScheduledEventDetails"]
    assert json.loads(sched["parameters"]) == {"n": 3} and sched["resource"] == "Double", sched
    expect_error("InvalidToken", sfn.get_execution_history, executionArn=arns[3], nextToken="not-a-token")

    # ListExecutions: filtered and paged one at a time.
    listed = []
    for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=arn, statusFilter="SUCCEEDED", PaginationConfig={"PageSize": 1}):
        assert len(page["executions"]) <= 1
        listed += [e["name"] for e in page["executions"]]
    assert sorted(listed) == [f"order-{i}" for i in range(5)], listed
    assert sfn.list_executions(stateMachineArn=arn, statusFilter="RUNNING")["executions"] == []
    assert "Order" in [m["name"] for m in sfn.list_state_machines()["stateMachines"]]

    # A Task nothing answers fails, naming the resource.
    lost = definition({"T": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:nowhere", "End": True}}, "T")
    larn = sfn.create_state_machine(name="Unhandled", definition=lost, roleArn=ROLE)["stateMachineArn"]
    d = finished(sfn, sfn.start_execution(stateMachineArn=larn, name="u1")["executionArn"])
    assert d["status"] == "FAILED" and "function:nowhere" in d["cause"], d


def callbacks(sfn):
    approve = definition(
        {
            "Ask": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"token.$": "$$.Task.Token", "order.$": "$.order"},
                "HeartbeatSeconds": 600,
                "Catch": [{"ErrorEquals": ["Declined"], "ResultPath": "$.why", "Next": "Refused"}],
                "End": True,
            },
            "Refused": {"Type": "Pass", "End": True},
        },
        "Ask",
    )
    arn = sfn.create_state_machine(name="Approve", definition=approve, roleArn=ROLE)["stateMachineArn"]
    yes = sfn.start_execution(stateMachineArn=arn, name="yes", input='{"order": 1}')["executionArn"]
    no = sfn.start_execution(stateMachineArn=arn, name="no", input='{"order": 2}')["executionArn"]
    token = lambda name: wait_for(f"the task token of {name}", lambda: _read(os.path.join(TOKEN_DIR, f"Approve:{name}")))
    t_yes, t_no = token("yes"), token("no")
    sfn.send_task_heartbeat(taskToken=t_yes)
    sfn.send_task_success(taskToken=t_yes, output='{"approved": true}')
    sfn.send_task_failure(taskToken=t_no, error="Declined", cause="too expensive")
    d = finished(sfn, yes)
    assert (d["status"], json.loads(d["output"])) == ("SUCCEEDED", {"approved": True}), d
    d = finished(sfn, no)
    assert d["status"] == "SUCCEEDED" and json.loads(d["output"])["why"] == {"Error": "Declined", "Cause": "too expensive"}, d
    expect_error("TaskDoesNotExist", sfn.send_task_success, taskToken=t_yes, output="{}")
    expect_error("TaskDoesNotExist", sfn.send_task_heartbeat, taskToken="wfc1-" + "0" * 64)
    expect_error("InvalidToken", sfn.send_task_success, taskToken="garbage", output="{}")
    expect_error("InvalidOutput", sfn.send_task_success, taskToken=t_no, output="{not json")


def _read(path):
    try:
        with open(path) as f:
            text = f.read().strip()
        return text or None
    except FileNotFoundError:
        return None


def activities(sfn):
    act = sfn.create_activity(name="Pack")["activityArn"]
    assert act == f"arn:aws:states:us-east-1:{ACCOUNT}:activity:Pack"
    assert sfn.describe_activity(activityArn=act)["name"] == "Pack"
    assert "Pack" in [a["name"] for a in sfn.list_activities()["activities"]]
    ship = definition({"Pack": {"Type": "Task", "Resource": act, "ResultPath": "$.box", "End": True}}, "Pack")
    arn = sfn.create_state_machine(name="Ship", definition=ship, roleArn=ROLE)["stateMachineArn"]
    runs = [sfn.start_execution(stateMachineArn=arn, name=f"ship-{i}", input=json.dumps({"item": i}))["executionArn"] for i in range(3)]

    # An activity worker, as one would write it against AWS: long poll, work, answer.
    done = []

    def worker():
        while len(done) < 3:
            task = sfn.get_activity_task(activityArn=act, workerName="packer")
            if not task.get("taskToken"):
                continue
            item = json.loads(task["input"])["item"]
            if item == 2:
                sfn.send_task_failure(taskToken=task["taskToken"], error="Fragile", cause="cannot pack item 2")
            else:
                sfn.send_task_heartbeat(taskToken=task["taskToken"])
                sfn.send_task_success(taskToken=task["taskToken"], output=json.dumps({"packed": item}))
            done.append(item)

    t = threading.Thread(target=worker)
    t.start()
    t.join(timeout=180)
    assert not t.is_alive(), "the activity worker did not get its three tasks"
    assert sorted(done) == [0, 1, 2]
    for i, a in enumerate(runs):
        d = finished(sfn, a)
        if i == 2:
            assert (d["status"], d["error"]) == ("FAILED", "Fragile"), d
        else:
            assert (d["status"], json.loads(d["output"])["box"]) == ("SUCCEEDED", {"packed": i}), d
    sfn.delete_activity(activityArn=act)
    expect_error("ActivityDoesNotExist", sfn.describe_activity, activityArn=act)
    expect_error("ActivityDoesNotExist", sfn.get_activity_task, activityArn=act)


def stop_update_delete(sfn):
    slow = definition({"Nap": {"Type": "Wait", "Seconds": 3600, "End": True}}, "Nap")
    arn = sfn.create_state_machine(name="Sleepy", definition=slow, roleArn=ROLE)["stateMachineArn"]
    e = sfn.start_execution(stateMachineArn=arn, name="nap")["executionArn"]
    stopped = sfn.stop_execution(executionArn=e, error="Ops.Cancelled", cause="not today")
    assert "stopDate" in stopped
    d = sfn.describe_execution(executionArn=e)
    assert (d["status"], d["error"], d["cause"]) == ("ABORTED", "Ops.Cancelled", "not today"), d
    assert [x["name"] for x in sfn.list_executions(stateMachineArn=arn, statusFilter="ABORTED")["executions"]] == ["nap"]
    expect_error("ValidationException", sfn.stop_execution, executionArn=e)

    # UpdateStateMachine: running executions keep the definition they started with.
    v1 = definition({"Hold": {"Type": "Wait", "Seconds": 1, "Next": "V"}, "V": {"Type": "Pass", "Result": "v1", "End": True}}, "Hold")
    v2 = v1.replace('"v1"', '"v2"')
    parn = sfn.create_state_machine(name="Pinned", definition=v1, roleArn=ROLE)["stateMachineArn"]
    old = sfn.start_execution(stateMachineArn=parn, name="old")["executionArn"]
    rev = sfn.update_state_machine(stateMachineArn=parn, definition=v2)["revisionId"]
    assert sfn.describe_state_machine(stateMachineArn=parn)["revisionId"] == rev
    new = sfn.start_execution(stateMachineArn=parn, name="new")["executionArn"]
    assert json.loads(finished(sfn, old)["output"]) == "v1"
    assert json.loads(finished(sfn, new)["output"]) == "v2"
    assert sfn.describe_state_machine_for_execution(executionArn=old)["definition"] == v1
    assert sfn.describe_state_machine_for_execution(executionArn=new)["definition"] == v2
    expect_error("MissingRequiredParameter", sfn.update_state_machine, stateMachineArn=parn)

    sfn.delete_state_machine(stateMachineArn=parn)
    expect_error("StateMachineDoesNotExist", sfn.describe_state_machine, stateMachineArn=parn)
    assert "Pinned" not in [m["name"] for m in sfn.list_state_machines()["stateMachines"]]
    # Its executions are still there.
    assert sfn.describe_execution(executionArn=old)["status"] == "SUCCEEDED"

    # A STANDARD machine without running executions is gone at once.
    sfn.delete_state_machine(stateMachineArn=arn)
    expect_error("StateMachineDoesNotExist", sfn.describe_state_machine, stateMachineArn=arn)

    # With running ones it is DELETING until they make their next state transition, where they
    # fail with States.Runtime (as on AWS). A Wait's transition is its end: the execution waits
    # its 2 s out, then fails instead of entering its next state.
    brief = definition({"Nap": {"Type": "Wait", "Seconds": 2, "Next": "After"}, "After": {"Type": "Pass", "End": True}}, "Nap")
    barn = sfn.create_state_machine(name="Brief", definition=brief, roleArn=ROLE)["stateMachineArn"]
    nap = sfn.start_execution(stateMachineArn=barn, name="nap2")["executionArn"]
    types = lambda e: [x["type"] for x in sfn.get_execution_history(executionArn=e)["events"]]
    wait_for("nap2 to enter its Wait", lambda: "WaitStateEntered" in types(nap))
    sfn.delete_state_machine(stateMachineArn=barn)
    assert sfn.describe_state_machine(stateMachineArn=barn)["status"] == "DELETING"
    assert sfn.describe_execution(executionArn=nap)["status"] == "RUNNING"
    expect_error("StateMachineDeleting", sfn.start_execution, stateMachineArn=barn, name="nap3")
    sfn.delete_state_machine(stateMachineArn=barn)  # again: nothing more to do
    d = finished(sfn, nap)
    assert (d["status"], d["error"], d["cause"]) == ("FAILED", "States.Runtime", "State machine Brief has been deleted."), d
    last = sfn.get_execution_history(executionArn=nap, reverseOrder=True, maxResults=1)["events"][0]
    assert last["type"] == "ExecutionFailed", last
    assert last["executionFailedEventDetails"]["cause"] == "State machine Brief has been deleted.", last
    assert "PassStateEntered" not in types(nap), types(nap)
    expect_error("StateMachineDoesNotExist", sfn.describe_state_machine, stateMachineArn=barn)

    # A Task waiting on a callback: its transition is the answer.
    asker = definition({"Ask": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken", "Parameters": {"token.$": "$$.Task.Token"}, "Next": "After"}, "After": {"Type": "Pass", "End": True}}, "Ask")
    aarn = sfn.create_state_machine(name="Asker", definition=asker, roleArn=ROLE)["stateMachineArn"]
    ask = sfn.start_execution(stateMachineArn=aarn, name="ask")["executionArn"]
    token = wait_for("the task token of ask", lambda: _read(os.path.join(TOKEN_DIR, "Asker:ask")))
    sfn.delete_state_machine(stateMachineArn=aarn)
    assert sfn.describe_state_machine(stateMachineArn=aarn)["status"] == "DELETING"
    assert sfn.describe_execution(executionArn=ask)["status"] == "RUNNING"
    sfn.send_task_success(taskToken=token, output="{}")
    d = finished(sfn, ask)
    assert (d["status"], d["error"], d["cause"]) == ("FAILED", "States.Runtime", "State machine Asker has been deleted."), d
    assert "PassStateEntered" not in types(ask), types(ask)
    expect_error("StateMachineDoesNotExist", sfn.describe_state_machine, stateMachineArn=aarn)

    # An EXPRESS machine's running executions run on; the machine is DELETING until they end.
    darn = sfn.create_state_machine(name="Dozy", definition=slow, roleArn=ROLE, type="EXPRESS")["stateMachineArn"]
    doze = sfn.start_execution(stateMachineArn=darn, name="doze")["executionArn"]
    dver = sfn.publish_state_machine_version(stateMachineArn=darn)["stateMachineVersionArn"]
    dalias = sfn.create_state_machine_alias(name="live", routingConfiguration=[{"stateMachineVersionArn": dver, "weight": 100}])["stateMachineAliasArn"]
    sfn.delete_state_machine(stateMachineArn=darn)
    assert sfn.describe_state_machine(stateMachineArn=darn)["status"] == "DELETING"
    assert sfn.describe_execution(executionArn=doze)["status"] == "RUNNING"
    expect_error("StateMachineDeleting", sfn.start_execution, stateMachineArn=darn, name="doze2")
    expect_error("StateMachineDeleting", sfn.start_sync_execution, stateMachineArn=darn, input="{}")
    expect_error("StateMachineDeleting", sfn.create_state_machine, name="Dozy", definition=slow, roleArn=ROLE, type="EXPRESS")
    expect_error("StateMachineDeleting", sfn.update_state_machine, stateMachineArn=darn, definition=slow)
    expect_error("StateMachineDeleting", sfn.publish_state_machine_version, stateMachineArn=darn)
    expect_error("StateMachineDeleting", sfn.create_state_machine_alias, name="next", routingConfiguration=[{"stateMachineVersionArn": dver, "weight": 100}])
    expect_error("StateMachineDeleting", sfn.update_state_machine_alias, stateMachineAliasArn=dalias, description="moved")
    expect_error("StateMachineDeleting", sfn.list_state_machine_aliases, stateMachineArn=darn)
    sfn.delete_state_machine(stateMachineArn=darn)  # again: nothing more to do
    sfn.stop_execution(executionArn=doze)
    expect_error("StateMachineDoesNotExist", sfn.describe_state_machine, stateMachineArn=darn)
    assert "Dozy" not in [m["name"] for m in sfn.list_state_machines()["stateMachines"]]


def express(sfn):
    quick = definition({"Add": {"Type": "Pass", "Parameters": {"sum.$": "States.MathAdd($.a, $.b)"}, "End": True}}, "Add")
    arn = sfn.create_state_machine(name="Quick", definition=quick, roleArn=ROLE, type="EXPRESS")["stateMachineArn"]
    r = sfn.start_sync_execution(stateMachineArn=arn, name="q1", input='{"a": 2, "b": 3}')
    assert (r["status"], json.loads(r["output"])) == ("SUCCEEDED", {"sum": 5}), r
    fail = definition({"F": {"Type": "Fail", "Error": "Nope", "Cause": "always"}}, "F")
    farn = sfn.create_state_machine(name="QuickFail", definition=fail, roleArn=ROLE, type="EXPRESS")["stateMachineArn"]
    r = sfn.start_sync_execution(stateMachineArn=farn, input="{}")
    assert (r["status"], r["error"], r["cause"]) == ("FAILED", "Nope", "always"), r
    expect_error("StateMachineTypeNotSupported", sfn.start_sync_execution, stateMachineArn=sm_arn("Order"), input="{}")


def validation_and_errors(sfn):
    broken = '{\n  "StartAt": "First",\n  "States": {\n    "First": {"Type": "Pass", "Next": "Missing"}\n  }\n}'
    v = sfn.validate_state_machine_definition(definition=broken)
    assert v["result"] == "FAIL", v
    diag = v["diagnostics"][0]
    assert diag["severity"] == "ERROR" and diag["location"] == "line 4, column 39", diag
    assert "Missing" in diag["message"] and "(line 4, column 39)" in diag["message"], diag
    assert sfn.validate_state_machine_definition(definition=ORDER)["result"] == "OK"
    msg = expect_error("InvalidDefinition", sfn.create_state_machine, name="Broken", definition=broken, roleArn=ROLE)
    assert "line 4, column 39" in msg, msg
    expect_error("InvalidDefinition", sfn.create_state_machine, name="NotJson", definition="{", roleArn=ROLE)

    expect_error("StateMachineDoesNotExist", sfn.describe_state_machine, stateMachineArn=sm_arn("Nobody"))
    expect_error("StateMachineDoesNotExist", sfn.start_execution, stateMachineArn=sm_arn("Nobody"))
    expect_error("ExecutionDoesNotExist", sfn.describe_execution, executionArn=f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Order:nobody")
    expect_error("InvalidArn", sfn.describe_state_machine, stateMachineArn="not-an-arn")
    expect_error("InvalidArn", sfn.describe_execution, executionArn=sm_arn("Order"))
    expect_error("InvalidName", sfn.start_execution, stateMachineArn=sm_arn("Order"), name="has space")
    expect_error("InvalidExecutionInput", sfn.start_execution, stateMachineArn=sm_arn("Order"), input="{oops")
    expect_error("InvalidExecutionInput", sfn.start_execution, stateMachineArn=sm_arn("Order"), input=json.dumps({"x": "y" * 300_000}))

    # What the SDKs never send: raw requests.
    def raw(target, body, headers=None):
        h = {"Content-Type": "application/x-amz-json-1.0"}
        if target:
            h["X-Amz-Target"] = target
        h.update(headers or {})
        req = urllib.request.Request(ENDPOINT + "/", data=body, headers=h, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    assert raw("AWSStepFunctions.Frobnicate", b"{}") [1]["__type"] == "UnknownOperationException"
    assert raw(None, b"{}")[1]["__type"] == "UnknownOperationException"
    assert raw("AWSStepFunctions.ListStateMachines", b"{not json") == (400, raw("AWSStepFunctions.ListStateMachines", b"{not json")[1])
    assert raw("AWSStepFunctions.ListStateMachines", b"{not json")[1]["__type"] == "SerializationException"
    assert raw("AWSStepFunctions.ListStateMachines", b"[1]")[1]["__type"] == "SerializationException"
    status, body = raw("AWSStepFunctions.DescribeStateMachine", b"{}")
    assert (status, body["__type"]) == (400, "ValidationException"), body
    status, body = raw("AWSStepFunctions.StartExecution", json.dumps({"stateMachineArn": sm_arn("Order"), "input": "x" * (2 << 20)}).encode())
    assert (status, body["__type"]) == (413, "RequestEntityTooLargeException"), (status, body)
    status, body = raw("AWSStepFunctions.DescribeMapRun", b"{}")
    assert (status, body["__type"]) == (400, "ValidationException") and "mapRunArn" in body["message"], body


def before_restart(sfn):
    durable = definition({"Nap": {"Type": "Wait", "Seconds": 6, "Next": "Done"}, "Done": {"Type": "Pass", "Result": "woke", "End": True}}, "Nap")
    arn = sfn.create_state_machine(name="Durable", definition=durable, roleArn=ROLE)["stateMachineArn"]
    sfn.start_execution(stateMachineArn=arn, name="across")


def after_restart(sfn):
    assert sfn.describe_state_machine(stateMachineArn=sm_arn("Durable"))["name"] == "Durable"
    d = finished(sfn, f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Durable:across")
    assert (d["status"], json.loads(d["output"])) == ("SUCCEEDED", "woke"), d


def main():
    sfn = client()
    if PHASE == "all":
        model_claims(sfn)
        for step in (machines_and_executions, callbacks, activities, stop_update_delete, express, validation_and_errors):
            step(sfn)
            print(f"ok: {step.__name__}", flush=True)
        unchecked = [op for op in CLAIMED if op not in CHECKED]
        assert not unchecked, f"operations whose responses were not checked against the model: {unchecked}"
    elif PHASE == "before-restart":
        before_restart(sfn)
    elif PHASE == "after-restart":
        after_restart(sfn)
    print(json.dumps({"phase": PHASE, "checked": CHECKED}), flush=True)


main()

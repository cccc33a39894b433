"""Drives the operations of `wfc serve` beyond its core (TestState, tags, ...) with boto3.

Run by wfc-cli/tests/serve_more.rs:  python boto3_more_suite.py ENDPOINT PHASE OPERATION...

Every response body is checked against botocore's own service model, as boto3_suite.py does
(its checker is imported from there), and PHASE `all` asserts that every OPERATION claimed was
called and checked. `before-restart` / `after-restart` check what must survive a restart.
"""

import json
import os
import re
import sys
import threading
import time

import boto3
from botocore.config import Config

sys.argv = [sys.argv[0], sys.argv[1], "/nonexistent", *sys.argv[2:]]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The shared helpers (client with the model checker, expect_error, ...), without running main().
SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "boto3_suite.py")
_source = open(SUITE).read().rsplit("\nmain()", 1)[0]
_helpers = {"__name__": "boto3_suite_helpers"}
exec(compile(_source, SUITE, "exec"), _helpers)
client, expect_error, finished, CHECKED = (
    _helpers["client"],
    _helpers["expect_error"],
    _helpers["finished"],
    _helpers["CHECKED"],
)
ENDPOINT, PHASE = sys.argv[1], sys.argv[3]
CLAIMED = sys.argv[4:]
ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/wfc-test"


def sm_arn(name):
    return f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:{name}"


def test_state(sfn):
    # A lone Pass state, with its data flow at DEBUG.
    pas = {
        "Type": "Pass",
        "InputPath": "$.order",
        "Parameters": {"id.$": "$.id", "kind": "pass"},
        "ResultPath": "$.out",
        "Next": "After",
    }
    r = sfn.test_state(definition=json.dumps(pas), input=json.dumps({"order": {"id": 7}}), inspectionLevel="DEBUG")
    assert r["status"] == "SUCCEEDED", r
    assert r["nextState"] == "After", r
    assert json.loads(r["output"]) == {"order": {"id": 7}, "out": {"id": 7, "kind": "pass"}}, r
    data = r["inspectionData"]
    assert json.loads(data["input"]) == {"order": {"id": 7}}, data
    assert json.loads(data["afterInputPath"]) == {"id": 7}, data
    assert json.loads(data["afterParameters"]) == {"id": 7, "kind": "pass"}, data
    assert json.loads(data["afterResultPath"]) == json.loads(r["output"]), data
    # INFO (the default) has no inspection data.
    r = sfn.test_state(definition=json.dumps(pas), input=json.dumps({"order": {"id": 7}}))
    assert "inspectionData" not in r, r

    # A Task with a mocked result: ResultSelector and ResultPath apply to it; nothing is called.
    task = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": "f", "Payload.$": "$"},
        "ResultSelector": {"value.$": "$.Payload.v"},
        "ResultPath": "$.r",
        "End": True,
    }
    mock = {"result": json.dumps({"Payload": {"v": 42}, "StatusCode": 200})}
    r = sfn.test_state(definition=json.dumps(task), input='{"a": 1}', mock=mock, inspectionLevel="TRACE")
    assert r["status"] == "SUCCEEDED" and "nextState" not in r, r
    assert json.loads(r["output"]) == {"a": 1, "r": {"value": 42}}, r
    d = r["inspectionData"]
    assert json.loads(d["afterParameters"]) == {"FunctionName": "f", "Payload": {"a": 1}}, d
    assert json.loads(d["result"]) == {"Payload": {"v": 42}, "StatusCode": 200}, d
    assert json.loads(d["afterResultSelector"]) == {"value": 42}, d

    # A mocked error that a retrier takes: RETRIABLE with the retrier and its back-off.
    retried = dict(
        task,
        Retry=[
            {"ErrorEquals": ["Other"], "MaxAttempts": 5},
            {"ErrorEquals": ["Boom"], "IntervalSeconds": 2, "BackoffRate": 3.0, "MaxAttempts": 2},
        ],
        Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.err", "Next": "Handle"}],
    )
    boom = {"errorOutput": {"error": "Boom", "cause": "it broke"}}
    r = sfn.test_state(definition=json.dumps(retried), input="{}", mock=boom, inspectionLevel="DEBUG")
    assert r["status"] == "RETRIABLE", r
    assert (r["error"], r["cause"]) == ("Boom", "it broke"), r
    assert r["inspectionData"]["errorDetails"] == {"retryIndex": 1, "retryBackoffIntervalSeconds": 2}, r
    r = sfn.test_state(
        definition=json.dumps(retried),
        input="{}",
        mock=boom,
        inspectionLevel="DEBUG",
        stateConfiguration={"retrierRetryCount": 1},
    )
    assert r["status"] == "RETRIABLE" and r["inspectionData"]["errorDetails"]["retryBackoffIntervalSeconds"] == 6, r
    # Its attempts used up: the Catch takes it.
    r = sfn.test_state(
        definition=json.dumps(retried),
        input='{"x": 1}',
        mock=boom,
        inspectionLevel="DEBUG",
        stateConfiguration={"retrierRetryCount": 2},
    )
    assert r["status"] == "CAUGHT_ERROR", r
    assert r["nextState"] == "Handle" and (r["error"], r["cause"]) == ("Boom", "it broke"), r
    assert json.loads(r["output"]) == {"x": 1, "err": {"Error": "Boom", "Cause": "it broke"}}, r
    assert r["inspectionData"]["errorDetails"] == {"catchIndex": 0}, r
    # No Retry nor Catch: FAILED.
    r = sfn.test_state(definition=json.dumps(task), input="{}", mock=boom)
    assert (r["status"], r["error"], r["cause"]) == ("FAILED", "Boom", "it broke"), r

    # One state of a full definition (stateName), through the server's own handler (--handlers).
    machine = {
        "StartAt": "Prepare",
        "States": {
            "Prepare": {"Type": "Pass", "Next": "Double"},
            "Double": {"Type": "Task", "Resource": "Double", "Next": "Route"},
            "Route": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.doubled", "NumericGreaterThan": 10, "Next": "Big"}],
                "Default": "Small",
            },
            "Big": {"Type": "Succeed"},
            "Small": {"Type": "Wait", "Seconds": 3600, "Next": "Big"},
        },
    }
    r = sfn.test_state(definition=json.dumps(machine), stateName="Double", input='{"n": 4}')
    assert (r["status"], r["nextState"], json.loads(r["output"])) == ("SUCCEEDED", "Route", {"doubled": 8}), r
    r = sfn.test_state(definition=json.dumps(machine), stateName="Route", input='{"doubled": 8}')
    assert (r["status"], r["nextState"]) == ("SUCCEEDED", "Small"), r
    r = sfn.test_state(definition=json.dumps(machine), stateName="Route", input='{"doubled": 12}')
    assert (r["status"], r["nextState"]) == ("SUCCEEDED", "Big"), r
    # A Wait of an hour answers at once (TestState does not wait).
    r = sfn.test_state(definition=json.dumps(machine), stateName="Small", input='{"doubled": 8}')
    assert (r["status"], r["nextState"]) == ("SUCCEEDED", "Big"), r
    # A Fail state.
    r = sfn.test_state(definition=json.dumps({"Type": "Fail", "Error": "E", "Cause": "C"}))
    assert (r["status"], r["error"], r["cause"]) == ("FAILED", "E", "C"), r
    # Variables in scope, and a JSONata state.
    jsonata = {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% $states.input.a + $x %}", "End": True}
    r = sfn.test_state(definition=json.dumps(jsonata), input='{"a": 1}', variables='{"x": 41}')
    assert (r["status"], json.loads(r["output"])) == ("SUCCEEDED", 42), r

    # Bad input: AWS's errors, with located diagnostics for a definition that does not validate.
    m = expect_error("InvalidDefinition", sfn.test_state, definition='{"Type": "Pass",\n "Next": 3}')
    assert "line 2" in m, m
    expect_error("InvalidDefinition", sfn.test_state, definition="not json")
    expect_error("ValidationException", sfn.test_state, definition=json.dumps(machine))
    expect_error("ValidationException", sfn.test_state, definition=json.dumps(machine), stateName="Nope")
    expect_error("ValidationException", sfn.test_state, definition=json.dumps(pas), mock=mock)
    expect_error(
        "ValidationException", sfn.test_state, definition=json.dumps(task), mock={"result": "{}", "errorOutput": {}}
    )
    expect_error("ValidationException", sfn.test_state, definition=json.dumps(pas), inspectionLevel="LOUD")
    expect_error("InvalidExecutionInput", sfn.test_state, definition=json.dumps(pas), input="{nope")
    expect_error("InvalidArn", sfn.test_state, definition=json.dumps(pas), roleArn="role")
    callback = {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken", "End": True}
    expect_error("ValidationException", sfn.test_state, definition=json.dumps(callback))
    # ... but mocked, it runs.
    r = sfn.test_state(definition=json.dumps(callback), mock={"result": '{"ok": true}'})
    assert (r["status"], json.loads(r["output"])) == ("SUCCEEDED", {"ok": True}), r
    test_state_context(sfn)
    test_state_map_parallel(sfn)


def test_state_context(sfn):
    # `context` is laid over the context object: named fields replace the runtime's, the
    # others (State.Name) stay.
    pas = {
        "Type": "Pass",
        "Parameters": {"name.$": "$$.Execution.Name", "token.$": "$$.Task.Token", "state.$": "$$.State.Name"},
        "End": True,
    }
    context = json.dumps({"Execution": {"Name": "given"}, "Task": {"Token": "t-1"}})
    r = sfn.test_state(definition=json.dumps(pas), context=context)
    assert (r["status"], json.loads(r["output"])) == ("SUCCEEDED", {"name": "given", "token": "t-1", "state": "TestState"}), r
    jsonata = {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% $states.context.Execution.Name %}", "End": True}
    r = sfn.test_state(definition=json.dumps(jsonata), context=context)
    assert json.loads(r["output"]) == "given", r
    # A mocked Task sees it too (its Parameters read `$$`).
    task = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"id.$": "$$.Execution.Id"}, "End": True}
    r = sfn.test_state(definition=json.dumps(task), context='{"Execution": {"Id": "x"}}', mock={"result": "{}"}, inspectionLevel="DEBUG")
    assert json.loads(r["inspectionData"]["afterParameters"]) == {"id": "x"}, r
    expect_error("InvalidExecutionInput", sfn.test_state, definition=json.dumps(pas), context="{nope")
    expect_error("InvalidExecutionInput", sfn.test_state, definition=json.dumps(pas), context="[1]")


def test_state_map_parallel(sfn):
    fan = {
        "Type": "Map",
        "ItemsPath": "$.items",
        "MaxConcurrency": 2,
        "ToleratedFailureCount": 1,
        "ItemProcessor": {"StartAt": "Work", "States": {"Work": {"Type": "Task", "Resource": "Nothing", "End": True}}},
        "ResultPath": "$.results",
        "Next": "After",
    }
    items = json.dumps({"items": [1, 2, 3]})
    # The mocked result stands for the iterations (which do not run): ResultPath applies.
    r = sfn.test_state(definition=json.dumps(fan), input=items, mock={"result": '["a", "b", "c"]'}, inspectionLevel="DEBUG")
    assert (r["status"], r["nextState"]) == ("SUCCEEDED", "After"), r
    assert json.loads(r["output"]) == {"items": [1, 2, 3], "results": ["a", "b", "c"]}, r
    d = r["inspectionData"]
    assert json.loads(d["afterItemsPath"]) == [1, 2, 3] and json.loads(d["afterItemSelector"]) == [1, 2, 3], d
    assert (d["maxConcurrency"], d["toleratedFailureCount"]) == (2, 1) and "afterParameters" not in d, d
    # Failed iterations against the tolerated count: one is tolerated, two are not.
    conf = lambda n: {"mapIterationFailureCount": n}  # noqa: E731
    r = sfn.test_state(definition=json.dumps(fan), input=items, mock={"result": "[]"}, stateConfiguration=conf(1))
    assert r["status"] == "SUCCEEDED", r
    r = sfn.test_state(definition=json.dumps(fan), input=items, mock={"result": "[]"}, stateConfiguration=conf(2))
    assert (r["status"], r["error"]) == ("FAILED", "States.ExceedToleratedFailureThreshold"), r
    caught = dict(fan, Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.err", "Next": "Recover"}])
    r = sfn.test_state(definition=json.dumps(caught), input=items, mock={"result": "[]"}, stateConfiguration=conf(2))
    assert (r["status"], r["nextState"], r["error"]) == ("CAUGHT_ERROR", "Recover", "States.ExceedToleratedFailureThreshold"), r
    # ... and against a percentage of the items (here those a Distributed Map's ItemReader read).
    reader = dict(fan, ItemReader={"Resource": "arn:aws:states:::s3:getObject", "ReaderConfig": {"InputType": "JSON"}, "Parameters": {"Bucket": "b", "Key": "k"}})
    reader["ItemProcessor"] = dict(fan["ItemProcessor"], ProcessorConfig={"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"})
    reader["ItemSelector"] = {"kind": "item"}
    del reader["ItemsPath"], reader["ToleratedFailureCount"]
    reader["ToleratedFailurePercentage"] = 50
    data = lambda n: {"mapItemReaderData": json.dumps([{"a": i} for i in range(4)]), "mapIterationFailureCount": n}  # noqa: E731
    r = sfn.test_state(definition=json.dumps(reader), mock={"result": "[]"}, stateConfiguration=data(2), inspectionLevel="DEBUG")
    assert r["status"] == "SUCCEEDED", r
    d = r["inspectionData"]
    assert json.loads(d["afterItemSelector"]) == [{"kind": "item"}] * 4 and d["toleratedFailurePercentage"] == 50, d
    r = sfn.test_state(definition=json.dumps(reader), mock={"result": "[]"}, stateConfiguration=data(3))
    assert (r["status"], r["error"]) == ("FAILED", "States.ExceedToleratedFailureThreshold"), r
    # ReaderConfig.ItemsPointer: the reader data is the JSON object as read, the pointer selects
    # the array in it (afterItemsPointer), and the items are that array.
    pointed = dict(reader, ItemReader=dict(reader["ItemReader"], ReaderConfig={"InputType": "JSON", "ItemsPointer": "/data/rows"}))
    source = json.dumps({"data": {"rows": [{"a": 0}, {"a": 1}]}, "meta": 1})
    r = sfn.test_state(definition=json.dumps(pointed), mock={"result": "[]"}, stateConfiguration={"mapItemReaderData": source}, inspectionLevel="DEBUG")
    d = r["inspectionData"]
    assert json.loads(d["afterItemsPointer"]) == [{"a": 0}, {"a": 1}] and json.loads(d["afterItemSelector"]) == [{"kind": "item"}] * 2, d
    assert "afterItemsPointer" not in sfn.test_state(definition=json.dumps(reader), mock={"result": "[]"}, stateConfiguration=data(0), inspectionLevel="DEBUG")["inspectionData"]
    # A Distributed Map's ItemBatcher (afterItemBatcher) and tolerated failures given by paths
    # into the input (inspected, and checked against the failed iterations).
    batched = dict(fan, ItemBatcher={"MaxItemsPerBatch": 2, "BatchInput": {"run": "b"}}, ToleratedFailureCountPath="$.tolerate")
    batched["ItemProcessor"] = dict(fan["ItemProcessor"], ProcessorConfig={"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"})
    del batched["ToleratedFailureCount"]
    given = lambda **kw: json.dumps(dict({"items": [1, 2, 3]}, **kw))  # noqa: E731
    r = sfn.test_state(definition=json.dumps(batched), input=given(tolerate=1), mock={"result": "[]"}, inspectionLevel="DEBUG")
    d = r["inspectionData"]
    batches = [{"Items": [1, 2], "BatchInput": {"run": "b"}}, {"Items": [3], "BatchInput": {"run": "b"}}]
    assert json.loads(d["afterItemBatcher"]) == batches and d["toleratedFailureCount"] == 1, d
    # As a run makes them: a limit given by a path into `$$`, a BatchInput reading `$$` (the
    # request's context laid over it) and drawing a UUID (once for the Map: every batch has it).
    reading = dict(batched, ItemBatcher={"MaxItemsPerBatchPath": "$$.Execution.Input.size", "BatchInput": {"run.$": "$$.Execution.Name", "id.$": "States.UUID()"}})
    r = sfn.test_state(definition=json.dumps(reading), input=given(tolerate=1, size=2), context='{"Execution": {"Name": "nightly"}}', mock={"result": "[]"}, inspectionLevel="DEBUG")
    got = json.loads(r["inspectionData"]["afterItemBatcher"])
    assert [(b["Items"], b["BatchInput"]["run"]) for b in got] == [([1, 2], "nightly"), ([3], "nightly")], got
    assert len({b["BatchInput"]["id"] for b in got}) == 1 and re.fullmatch(r"[0-9a-f-]{36}", got[0]["BatchInput"]["id"]), got
    # JSONata: limits as expressions, evaluated on the state input and `$states.context`.
    jsonata = {
        "Type": "Map",
        "QueryLanguage": "JSONata",
        "ItemProcessor": dict(batched["ItemProcessor"]),
        "ItemBatcher": {"MaxItemsPerBatch": "{% $count($states.input) - $states.context.Execution.Input[0] %}", "MaxInputBytesPerBatch": "{% 1024 %}", "BatchInput": {"kind": "batch"}},
        "End": True,
    }
    r = sfn.test_state(definition=json.dumps(jsonata), input="[2, 3, 4]", mock={"result": "[]"}, inspectionLevel="DEBUG")
    got = json.loads(r["inspectionData"]["afterItemBatcher"])
    assert got == [{"Items": [2], "BatchInput": {"kind": "batch"}}, {"Items": [3], "BatchInput": {"kind": "batch"}}, {"Items": [4], "BatchInput": {"kind": "batch"}}], r
    # ... BatchInput's `{% %}` leaves (or one expression) evaluated, after `Items` and an
    # ItemSelector reading `$states.context.Map.Item`.
    evaluated = dict(jsonata, Items="{% $states.input.xs %}", ItemSelector={"v": "{% $states.context.Map.Item.Value * 10 %}"})
    evaluated["ItemBatcher"] = {"MaxItemsPerBatch": 2, "BatchInput": {"n": "{% $count($states.input.xs) %}"}}
    r = sfn.test_state(definition=json.dumps(evaluated), input='{"xs": [1, 2, 3]}', mock={"result": "[]"}, inspectionLevel="DEBUG")
    d = r["inspectionData"]
    assert json.loads(d["afterItemSelector"]) == [{"v": 10}, {"v": 20}, {"v": 30}], d
    assert [b["BatchInput"]["n"] for b in json.loads(d["afterItemBatcher"])] == [3, 3], d
    assert [b["Items"] for b in json.loads(d["afterItemBatcher"])] == [[{"v": 10}, {"v": 20}], [{"v": 30}]], d
    evaluated["ItemBatcher"] = {"MaxItemsPerBatch": 3, "BatchInput": "{% {'first': $states.input.xs[0]} %}"}
    r = sfn.test_state(definition=json.dumps(evaluated), input='{"xs": [1, 2, 3]}', mock={"result": "[]"}, inspectionLevel="DEBUG")
    assert json.loads(r["inspectionData"]["afterItemBatcher"]) == [{"Items": [{"v": 10}, {"v": 20}, {"v": 30}], "BatchInput": {"first": 1}}], r
    ok = sfn.test_state(definition=json.dumps(batched), input=given(tolerate=1), mock={"result": "[]"}, stateConfiguration=conf(1))
    over = sfn.test_state(definition=json.dumps(batched), input=given(tolerate=1), mock={"result": "[]"}, stateConfiguration=conf(2))
    assert (ok["status"], over["status"], over["error"]) == ("SUCCEEDED", "FAILED", "States.ExceedToleratedFailureThreshold"), (ok, over)
    bad = sfn.test_state(definition=json.dumps(batched), input=given(tolerate="x"), mock={"result": "[]"}, stateConfiguration=conf(1))
    assert (bad["status"], bad["error"]) == ("FAILED", "States.Runtime") and "ToleratedFailureCountPath" in bad["cause"], bad
    shared = dict(batched, ToleratedFailurePercentagePath="$.share")
    del shared["ToleratedFailureCountPath"]
    r = sfn.test_state(definition=json.dumps(shared), input=given(share="50"), mock={"result": "[]"}, stateConfiguration=conf(1), inspectionLevel="DEBUG")
    assert (r["status"], r["inspectionData"]["toleratedFailurePercentage"]) == ("SUCCEEDED", 50), r
    r = sfn.test_state(definition=json.dumps(shared), input=given(share="50"), mock={"result": "[]"}, stateConfiguration=conf(2))
    assert (r["status"], r["error"]) == ("FAILED", "States.ExceedToleratedFailureThreshold"), r
    # A mocked error of a Map, with its Retry: RETRIABLE, as for a Task.
    retried = dict(fan, Retry=[{"ErrorEquals": ["Boom"], "MaxAttempts": 1}])
    boom = {"errorOutput": {"error": "Boom", "cause": "one item broke"}}
    r = sfn.test_state(definition=json.dumps(retried), input=items, mock=boom)
    assert (r["status"], r["error"]) == ("RETRIABLE", "Boom"), r
    r = sfn.test_state(definition=json.dumps(retried), input=items, mock=boom, stateConfiguration={"retrierRetryCount": 1})
    assert (r["status"], r["error"], r["cause"]) == ("FAILED", "Boom", "one item broke"), r

    # Parallel: one result per branch; the error of a state inside it.
    par = {
        "Type": "Parallel",
        "Branches": [
            {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}},
            {"StartAt": "B", "States": {"B": {"Type": "Task", "Resource": "Nothing", "End": True}}},
        ],
        "ResultSelector": {"first.$": "$[0]"},
        "End": True,
    }
    r = sfn.test_state(definition=json.dumps(par), mock={"result": '[{"x": 1}, 2]'})
    assert (r["status"], json.loads(r["output"])) == ("SUCCEEDED", {"first": {"x": 1}}), r
    r = sfn.test_state(definition=json.dumps(par), mock=boom, stateConfiguration={"errorCausedByState": "B"})
    assert (r["status"], r["error"], r["cause"]) == ("FAILED", "Boom", "one item broke"), r

    # Misuse: AWS's ValidationException.
    bad = [
        ({"definition": json.dumps(fan), "input": items}, "a Map without a mock"),
        ({"definition": json.dumps(par)}, "a Parallel without a mock"),
        ({"definition": json.dumps(fan), "input": items, "mock": {"result": '{"not": "an array"}'}}, "a Map result that is no array"),
        ({"definition": json.dumps(par), "mock": {"result": "[1]"}}, "a result per branch"),
        ({"definition": json.dumps(par), "mock": boom, "stateConfiguration": {"errorCausedByState": "Nope"}}, "no such inner state"),
        ({"definition": json.dumps(par), "mock": {"result": "[1, 2]"}, "stateConfiguration": {"errorCausedByState": "B"}}, "no mocked error"),
        ({"definition": json.dumps({"Type": "Pass", "End": True}), "stateConfiguration": {"mapIterationFailureCount": 1}}, "not a Map"),
        ({"definition": json.dumps(fan), "input": items, "mock": boom, "stateConfiguration": conf(1)}, "a Map with a mocked error"),
        ({"definition": json.dumps(fan), "input": items, "mock": {"result": "[]"}, "stateConfiguration": {"mapItemReaderData": "[]"}}, "no ItemReader"),
        ({"definition": json.dumps(reader), "mock": {"result": "[]"}, "stateConfiguration": {"mapItemReaderData": "{}"}}, "reader data that is no array"),
        ({"definition": json.dumps(pointed), "mock": {"result": "[]"}, "stateConfiguration": {"mapItemReaderData": '{"data": {}}'}}, "an ItemsPointer that selects no array"),
        ({"definition": json.dumps(fan), "input": items, "mock": {"result": "[]"}, "stateConfiguration": {"retrierRetryCount": 1}}, "no Retry"),
    ]
    for kwargs, why in bad:
        try:
            expect_error("ValidationException", sfn.test_state, **kwargs)
        except AssertionError as e:
            raise AssertionError(f"{why}: {e}") from e
    # With fieldValidationMode NONE, the mocked result is taken as it is.
    r = sfn.test_state(definition=json.dumps(par), mock={"result": "[1]", "fieldValidationMode": "NONE"})
    assert (r["status"], json.loads(r["output"])) == ("SUCCEEDED", {"first": 1}), r


PASS = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})


def tags(sfn):
    arn = sfn.create_state_machine(
        name="Tagged", definition=PASS, roleArn=ROLE, tags=[{"key": "team", "value": "a"}, {"key": "env"}]
    )["stateMachineArn"]
    listed = sfn.list_tags_for_resource(resourceArn=arn)["tags"]
    assert listed == [{"key": "env", "value": ""}, {"key": "team", "value": "a"}], listed
    sfn.tag_resource(resourceArn=arn, tags=[{"key": "team", "value": "b"}, {"key": "cost", "value": "1"}])
    sfn.untag_resource(resourceArn=arn, tagKeys=["env", "absent"])
    listed = sfn.list_tags_for_resource(resourceArn=arn)["tags"]
    assert listed == [{"key": "cost", "value": "1"}, {"key": "team", "value": "b"}], listed
    # An idempotent create leaves the tags alone (as on AWS).
    sfn.create_state_machine(name="Tagged", definition=PASS, roleArn=ROLE, tags=[{"key": "x", "value": "y"}])
    assert len(sfn.list_tags_for_resource(resourceArn=arn)["tags"]) == 2
    # Deleted and created again: the new machine has only its own tags.
    sfn.delete_state_machine(stateMachineArn=arn)
    expect_error("ResourceNotFound", sfn.list_tags_for_resource, resourceArn=arn)
    sfn.create_state_machine(name="Tagged", definition=PASS, roleArn=ROLE)
    assert sfn.list_tags_for_resource(resourceArn=arn)["tags"] == []
    # Activities.
    act = sfn.create_activity(name="TaggedActivity", tags=[{"key": "k", "value": "v"}])["activityArn"]
    assert sfn.list_tags_for_resource(resourceArn=act)["tags"] == [{"key": "k", "value": "v"}]
    # Bad input.
    expect_error("InvalidArn", sfn.tag_resource, resourceArn="nope", tags=[])
    ex = f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Tagged:x"
    expect_error("InvalidArn", sfn.list_tags_for_resource, resourceArn=ex)
    expect_error("ResourceNotFound", sfn.list_tags_for_resource, resourceArn=sm_arn("Nope"))
    expect_error("TooManyTags", sfn.tag_resource, resourceArn=arn, tags=[{"key": f"k{i}"} for i in range(51)])
    expect_error("ValidationException", sfn.tag_resource, resourceArn=arn, tags=[{"key": "k" * 129}])
    expect_error(
        "TooManyTags",
        sfn.create_state_machine,
        name="TooMany",
        definition=PASS,
        roleArn=ROLE,
        tags=[{"key": f"k{i}"} for i in range(51)],
    )
    expect_error("StateMachineDoesNotExist", sfn.describe_state_machine, stateMachineArn=sm_arn("TooMany"))


MOCKED = json.dumps(
    {
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "f", "Payload.$": "$"},
                "Retry": [{"ErrorEquals": ["Lambda.ResourceNotReadyException"], "IntervalSeconds": 1, "BackoffRate": 1}],
                "Catch": [{"ErrorEquals": ["Custom.Error"], "ResultPath": "$.error", "Next": "Handled"}],
                "ResultSelector": {"n.$": "$.Payload.v", "status.$": "$.StatusCode"},
                "Next": "Double",
            },
            "Double": {"Type": "Task", "Resource": "Double", "End": True},
            "Handled": {"Type": "Pass", "End": True},
        },
    }
)


def mock_config(sfn):
    arn = sfn.create_state_machine(name="Mocked", definition=MOCKED, roleArn=ROLE)["stateMachineArn"]
    # RetryPath: the mocked Lambda fails once, is retried, then answers; the next (unmocked) Task
    # runs through --handlers.
    ex = sfn.start_execution(stateMachineArn=arn + "#RetryPath", name="retry", input="{}")["executionArn"]
    assert ex == f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Mocked:retry", ex
    d = finished(sfn, ex)
    assert d["status"] == "SUCCEEDED" and json.loads(d["output"]) == {"doubled": 4}, d
    events = sfn.get_execution_history(executionArn=ex)["events"]
    failed = [e for e in events if e["type"] == "TaskFailed"]
    assert len(failed) == 1 and failed[0]["taskFailedEventDetails"]["error"] == "Lambda.ResourceNotReadyException", events
    # FailPath: the mocked error is caught.
    ex = sfn.start_execution(stateMachineArn=arn + "#FailPath", name="fail", input='{"x": 1}')["executionArn"]
    d = finished(sfn, ex)
    assert d["status"] == "SUCCEEDED", d
    assert json.loads(d["output"]) == {"x": 1, "error": {"Error": "Custom.Error", "Cause": "broken"}}, d
    # Without a test case nothing is mocked: the Lambda has no handler here.
    ex = sfn.start_execution(stateMachineArn=arn, name="plain", input="{}")["executionArn"]
    d = finished(sfn, ex)
    assert (d["status"], d["error"]) == ("FAILED", "Wfc.NoTaskHandler"), d
    expect_error("ValidationException", sfn.start_execution, stateMachineArn=arn + "#NoSuchCase")
    expect_error("StateMachineDoesNotExist", sfn.start_execution, stateMachineArn=sm_arn("Nope") + "#RetryPath")


def versions(sfn):
    v1_def = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": "v1", "End": True}}})
    v2_def = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": "v2", "End": True}}})
    created = sfn.create_state_machine(
        name="Versioned", definition=v1_def, roleArn=ROLE, publish=True, versionDescription="first"
    )
    arn, v1 = created["stateMachineArn"], created["stateMachineVersionArn"]
    assert v1 == arn + ":1", created
    # Publishing the same revision again answers with the same version.
    assert sfn.publish_state_machine_version(stateMachineArn=arn)["stateMachineVersionArn"] == v1
    revision = sfn.update_state_machine(stateMachineArn=arn, definition=v2_def)["revisionId"]
    expect_error("ConflictException", sfn.publish_state_machine_version, stateMachineArn=arn, revisionId="stale")
    v2 = sfn.publish_state_machine_version(stateMachineArn=arn, revisionId=revision, description="second")[
        "stateMachineVersionArn"
    ]
    assert v2 == arn + ":2", v2
    listed = [v["stateMachineVersionArn"] for v in sfn.list_state_machine_versions(stateMachineArn=arn)["stateMachineVersions"]]
    assert listed == [v2, v1], listed
    d = sfn.describe_state_machine(stateMachineArn=v1)
    assert (d["stateMachineArn"], d["description"], json.loads(d["definition"])["States"]["P"]["Result"]) == (v1, "first", "v1"), d
    # An execution started by version ARN runs that version's definition.
    ex = sfn.start_execution(stateMachineArn=v1, name="on-v1")["executionArn"]
    assert ex == f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Versioned:on-v1", ex
    assert json.loads(finished(sfn, ex)["output"]) == "v1"
    ex = sfn.start_execution(stateMachineArn=arn, name="on-latest")["executionArn"]
    assert json.loads(finished(sfn, ex)["output"]) == "v2"
    # Deleting a version: it is gone, its number is not reused.
    sfn.delete_state_machine_version(stateMachineVersionArn=v1)
    expect_error("StateMachineDoesNotExist", sfn.describe_state_machine, stateMachineArn=v1)
    expect_error("StateMachineDoesNotExist", sfn.start_execution, stateMachineArn=v1)
    sfn.update_state_machine(stateMachineArn=arn, definition=v1_def, publish=True)
    listed = [v["stateMachineVersionArn"] for v in sfn.list_state_machine_versions(stateMachineArn=arn)["stateMachineVersions"]]
    assert listed == [arn + ":3", v2], listed
    # Bad input.
    expect_error("ValidationException", sfn.update_state_machine, stateMachineArn=arn, definition=v2_def, versionDescription="x")
    expect_error("InvalidArn", sfn.describe_state_machine, stateMachineArn=arn + ":prod")
    expect_error("InvalidArn", sfn.delete_state_machine_version, stateMachineVersionArn=arn)
    expect_error("StateMachineDoesNotExist", sfn.describe_state_machine, stateMachineArn=arn + ":99")
    expect_error("StateMachineDoesNotExist", sfn.list_state_machine_versions, stateMachineArn=sm_arn("Nope"))
    # A deleted machine takes its versions with it.
    sfn.delete_state_machine(stateMachineArn=arn)
    sfn.create_state_machine(name="Versioned", definition=v1_def, roleArn=ROLE)
    assert sfn.list_state_machine_versions(stateMachineArn=arn)["stateMachineVersions"] == []


def role_update(sfn):
    # UpdateStateMachine changing only the roleArn: a new revision with the new role, as on AWS.
    reads_role = json.dumps(
        {"StartAt": "P", "States": {"P": {"Type": "Pass", "Parameters": {"role.$": "$$.Execution.RoleArn"}, "End": True}}}
    )
    other = f"arn:aws:iam::{ACCOUNT}:role/other"
    arn = sfn.create_state_machine(name="Roled", definition=reads_role, roleArn=ROLE, publish=True)["stateMachineArn"]
    first = sfn.describe_state_machine(stateMachineArn=arn)["revisionId"]
    before = sfn.start_execution(stateMachineArn=arn, name="before")["executionArn"]
    assert json.loads(finished(sfn, before)["output"]) == {"role": ROLE}
    revision = sfn.update_state_machine(stateMachineArn=arn, roleArn=other)["revisionId"]
    assert revision != first, revision
    d = sfn.describe_state_machine(stateMachineArn=arn)
    assert (d["roleArn"], d["revisionId"], d["definition"]) == (other, revision, reads_role), d
    after = sfn.start_execution(stateMachineArn=arn, name="after")["executionArn"]
    assert json.loads(finished(sfn, after)["output"]) == {"role": other}
    for ex, role in [(before, ROLE), (after, other)]:
        assert sfn.describe_state_machine_for_execution(executionArn=ex)["roleArn"] == role, ex
        started = sfn.get_execution_history(executionArn=ex, maxResults=1)["events"][0]
        assert started["executionStartedEventDetails"]["roleArn"] == role, started
    # The role change is a revision of its own: publishing it makes version 2, version 1 keeps its role.
    v2 = sfn.publish_state_machine_version(stateMachineArn=arn, revisionId=revision)["stateMachineVersionArn"]
    assert v2 == arn + ":2", v2
    assert sfn.describe_state_machine(stateMachineArn=arn + ":1")["roleArn"] == ROLE
    assert sfn.describe_state_machine(stateMachineArn=v2)["roleArn"] == other
    # Back to the first role: that revision again, current, with its role.
    sfn.update_state_machine(stateMachineArn=arn, roleArn=ROLE)
    assert sfn.describe_state_machine(stateMachineArn=arn)["roleArn"] == ROLE
    again = sfn.start_execution(stateMachineArn=arn, name="again")["executionArn"]
    assert json.loads(finished(sfn, again)["output"]) == {"role": ROLE}
    # Deleted and created again with the same definition and another role: that role.
    sfn.delete_state_machine(stateMachineArn=arn)
    sfn.create_state_machine(name="Roled", definition=reads_role, roleArn=other, type="EXPRESS")
    d = sfn.describe_state_machine(stateMachineArn=arn)
    assert (d["roleArn"], d["type"]) == (other, "EXPRESS"), d


def aliases(sfn):
    v1_def = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": "v1", "End": True}}})
    v2_def = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": "v2", "End": True}}})
    created = sfn.create_state_machine(name="Aliased", definition=v1_def, roleArn=ROLE, publish=True)
    arn, v1 = created["stateMachineArn"], created["stateMachineVersionArn"]
    v2 = sfn.update_state_machine(stateMachineArn=arn, definition=v2_def, publish=True)["stateMachineVersionArn"]
    assert sfn.list_state_machine_aliases(stateMachineArn=arn)["stateMachineAliases"] == []
    # One version: every execution by the alias runs it, and says so.
    r = sfn.create_state_machine_alias(
        name="prod", description="live", routingConfiguration=[{"stateMachineVersionArn": v1, "weight": 100}]
    )
    prod = r["stateMachineAliasArn"]
    assert prod == arn + ":prod", r
    # Idempotent with the same members; a conflict with others.
    again = sfn.create_state_machine_alias(
        name="prod", description="live", routingConfiguration=[{"stateMachineVersionArn": v1, "weight": 100}]
    )
    assert (again["stateMachineAliasArn"], again["creationDate"]) == (prod, r["creationDate"]), (again, r)
    expect_error(
        "ConflictException",
        sfn.create_state_machine_alias,
        name="prod",
        routingConfiguration=[{"stateMachineVersionArn": v2, "weight": 100}],
    )
    d = sfn.describe_state_machine_alias(stateMachineAliasArn=prod)
    assert (d["name"], d["description"], d["routingConfiguration"]) == (
        "prod",
        "live",
        [{"stateMachineVersionArn": v1, "weight": 100}],
    ), d
    ex = sfn.start_execution(stateMachineArn=prod, name="by-alias")["executionArn"]
    assert ex == f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Aliased:by-alias", ex
    d = finished(sfn, ex)
    assert json.loads(d["output"]) == "v1", d
    assert (d["stateMachineArn"], d["stateMachineVersionArn"], d["stateMachineAliasArn"]) == (arn, v1, prod), d
    # By version ARN: the version, no alias; by the unqualified ARN: neither (as AWS).
    d = finished(sfn, sfn.start_execution(stateMachineArn=v2, name="by-version")["executionArn"])
    assert d["stateMachineVersionArn"] == v2 and "stateMachineAliasArn" not in d, d
    d = finished(sfn, sfn.start_execution(stateMachineArn=arn, name="plain")["executionArn"])
    assert "stateMachineVersionArn" not in d and "stateMachineAliasArn" not in d, d
    listed = {e["name"]: e for e in sfn.list_executions(stateMachineArn=arn)["executions"]}
    assert listed["by-alias"]["stateMachineAliasArn"] == prod and listed["by-alias"]["stateMachineVersionArn"] == v1
    assert listed["by-version"]["stateMachineVersionArn"] == v2 and "stateMachineAliasArn" not in listed["by-version"]
    assert "stateMachineVersionArn" not in listed["plain"], listed
    # ListExecutions of an alias or version ARN: the executions started by it.
    assert [e["name"] for e in sfn.list_executions(stateMachineArn=prod)["executions"]] == ["by-alias"]
    assert [e["name"] for e in sfn.list_executions(stateMachineArn=v2)["executions"]] == ["by-version"]
    # Two versions by weight: 50/50 over 40 executions runs both (the chance of one only is 2^-39).
    sfn.update_state_machine_alias(
        stateMachineAliasArn=prod,
        routingConfiguration=[{"stateMachineVersionArn": v1, "weight": 50}, {"stateMachineVersionArn": v2, "weight": 50}],
    )
    d = sfn.describe_state_machine_alias(stateMachineAliasArn=prod)
    assert d["description"] == "live" and len(d["routingConfiguration"]) == 2 and d["updateDate"] >= d["creationDate"], d
    seen = set()
    started = [sfn.start_execution(stateMachineArn=prod, name=f"split-{i}")["executionArn"] for i in range(40)]
    for ex in started:
        e = finished(sfn, ex)
        assert e["stateMachineVersionArn"] == {'"v1"': v1, '"v2"': v2}[e["output"]], e
        seen.add(e["output"])
    assert seen == {'"v1"', '"v2"'}, seen
    # A weight of 0 never runs.
    sfn.update_state_machine_alias(
        stateMachineAliasArn=prod,
        description="canary off",
        routingConfiguration=[{"stateMachineVersionArn": v1, "weight": 100}, {"stateMachineVersionArn": v2, "weight": 0}],
    )
    started = [sfn.start_execution(stateMachineArn=prod, name=f"zero-{i}")["executionArn"] for i in range(10)]
    for ex in started:
        assert finished(sfn, ex)["output"] == '"v1"', ex
    # Pagination, oldest first; a version ARN lists the aliases routing to it.
    for name in ("beta", "gamma"):
        sfn.create_state_machine_alias(name=name, routingConfiguration=[{"stateMachineVersionArn": v2, "weight": 100}])
    page1 = sfn.list_state_machine_aliases(stateMachineArn=arn, maxResults=2)
    page2 = sfn.list_state_machine_aliases(stateMachineArn=arn, maxResults=2, nextToken=page1["nextToken"])
    names = [a["stateMachineAliasArn"] for a in page1["stateMachineAliases"] + page2["stateMachineAliases"]]
    assert names == [prod, arn + ":beta", arn + ":gamma"] and "nextToken" not in page2, (page1, page2)
    by_v1 = sfn.list_state_machine_aliases(stateMachineArn=v1)["stateMachineAliases"]
    assert [a["stateMachineAliasArn"] for a in by_v1] == [prod], by_v1
    # A version an alias routes to cannot be deleted (AWS's ConflictException).
    m = expect_error("ConflictException", sfn.delete_state_machine_version, stateMachineVersionArn=v2)
    assert "beta" in m and "gamma" in m and "prod" in m, m
    # AWS's validation of routing configurations and names.
    route = lambda *pairs: [{"stateMachineVersionArn": a, "weight": w} for a, w in pairs]
    m = expect_error("ValidationException", sfn.create_state_machine_alias, name="x", routingConfiguration=route((v1, 70), (v2, 29)))
    assert "Sum of routing configuration weights must equal 100. Received: [70, 29]" in m, m
    m = expect_error("ValidationException", sfn.create_state_machine_alias, name="x", routingConfiguration=route((v1, 50), (v1, 50)))
    assert "distinct" in m, m
    m = expect_error("ValidationException", sfn.create_state_machine_alias, name="x", routingConfiguration=route((arn, 100)))
    assert "must contain state machine version ARNs" in m, m
    expect_error("ValidationException", sfn.create_state_machine_alias, name="x", routingConfiguration=route((v1, 101)))
    expect_error(
        "ValidationException",
        sfn.create_state_machine_alias,
        name="x",
        routingConfiguration=route((v1, 50), (v2, 30), (arn + ":3", 20)),
    )
    for bad in ("123", "INVALID ALIAS", "ALIAS@", "A" * 81):
        expect_error("ValidationException", sfn.create_state_machine_alias, name=bad, routingConfiguration=route((v1, 100)))
    expect_error("ResourceNotFound", sfn.create_state_machine_alias, name="x", routingConfiguration=route((arn + ":9", 100)))
    other = sfn.create_state_machine(name="AliasedOther", definition=v1_def, roleArn=ROLE, publish=True)["stateMachineVersionArn"]
    m = expect_error("ValidationException", sfn.create_state_machine_alias, name="x", routingConfiguration=route((v1, 50), (other, 50)))
    assert "same state machine" in m, m
    expect_error("ResourceNotFound", sfn.describe_state_machine_alias, stateMachineAliasArn=arn + ":nope")
    expect_error("ResourceNotFound", sfn.update_state_machine_alias, stateMachineAliasArn=arn + ":nope", description="d")
    expect_error("ValidationException", sfn.update_state_machine_alias, stateMachineAliasArn=prod)
    expect_error("InvalidArn", sfn.describe_state_machine_alias, stateMachineAliasArn=v1)
    expect_error("StateMachineDoesNotExist", sfn.start_execution, stateMachineArn=arn + ":nope")
    # Delete: gone (and deleting again succeeds, as on AWS); its versions stay.
    sfn.delete_state_machine_alias(stateMachineAliasArn=arn + ":gamma")
    sfn.delete_state_machine_alias(stateMachineAliasArn=arn + ":gamma")
    expect_error("ResourceNotFound", sfn.describe_state_machine_alias, stateMachineAliasArn=arn + ":gamma")
    sfn.describe_state_machine(stateMachineArn=v2)
    # A deleted machine takes its aliases with it.
    sfn.delete_state_machine(stateMachineArn=arn)
    sfn.create_state_machine(name="Aliased", definition=v1_def, roleArn=ROLE)
    assert sfn.list_state_machine_aliases(stateMachineArn=arn)["stateMachineAliases"] == []


REDRIVE = json.dumps(
    {
        "StartAt": "First",
        "States": {
            "First": {"Type": "Task", "Resource": "First", "ResultPath": "$.first", "Next": "Caught"},
            "Caught": {
                "Type": "Task",
                "Resource": "Broken",
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.caught", "Next": "Flaky"}],
                "Next": "Flaky",
            },
            "Flaky": {
                "Type": "Task",
                "Resource": "Flaky",
                "ResultPath": "$.flaky",
                "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 1, "BackoffRate": 1}],
                "Next": "Check",
            },
            "Check": {"Type": "Pass", "Parameters": {"redriveCount.$": "$$.Execution.RedriveCount"}, "End": True},
        },
    }
)
TEST_DIR = os.environ.get("WFC_SERVE_TEST_DIR", "")


def ledger(execution):
    """What the redrive Tasks of `execution` ran, in order."""
    path = os.path.join(TEST_DIR, "ledger")
    lines = open(path).read().split("\n") if os.path.exists(path) else []
    return [line.split(" ", 1)[1] for line in lines if line.startswith(execution + " ")]


def fix(execution):
    open(os.path.join(TEST_DIR, "fixed-" + execution), "w").close()


def redrive(sfn):
    arn = sfn.create_state_machine(name="Redriven", definition=REDRIVE, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="r1", input="{}")["executionArn"]
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"], d["redriveStatus"]) == ("FAILED", 0, "REDRIVABLE"), d
    assert "redriveStatusReason" not in d and "redriveDate" not in d, d
    assert ledger("r1") == ["First", "Broken", "Flaky", "Flaky"], ledger("r1")
    # Redriven unfixed: only Flaky runs again (First succeeded, Broken's failure was caught),
    # its retries counted from zero; the same clientToken answers without a second redrive.
    first = sfn.redrive_execution(executionArn=ex, clientToken="token-1")["redriveDate"]
    again = sfn.redrive_execution(executionArn=ex, clientToken="token-1")["redriveDate"]
    assert first == again, (first, again)
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"], d["redriveDate"]) == ("FAILED", 1, first), d
    assert ledger("r1") == ["First", "Broken"] + ["Flaky"] * 4, ledger("r1")
    # Fixed, redriven again: it succeeds and `$$.Execution.RedriveCount` says 2.
    fix("r1")
    sfn.redrive_execution(executionArn=ex)
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"], d["redriveStatus"]) == ("SUCCEEDED", 2, "NOT_REDRIVABLE"), d
    assert d["redriveStatusReason"] == "Execution is SUCCEEDED and cannot be redriven", d
    assert json.loads(d["output"]) == {"redriveCount": 2}, d
    assert ledger("r1") == ["First", "Broken"] + ["Flaky"] * 5, ledger("r1")
    # The history keeps each ending and appends ExecutionRedriven.
    events = sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]
    kinds = [e["type"] for e in events]
    assert [e["id"] for e in events] == list(range(1, len(events) + 1)), events
    assert kinds.count("ExecutionFailed") == 2 and kinds[-1] == "ExecutionSucceeded", kinds
    redriven = [e["executionRedrivenEventDetails"]["redriveCount"] for e in events if e["type"] == "ExecutionRedriven"]
    assert redriven == [1, 2], kinds
    failed_at = kinds.index("ExecutionFailed")
    assert kinds[failed_at + 1] == "ExecutionRedriven", kinds
    assert kinds.count("TaskStateEntered") == 3, kinds
    # ListExecutions: redriveCount, redriveDate, and redriveFilter.
    sfn.start_execution(stateMachineArn=arn, name="never", input="{}")
    fix("never")
    finished(sfn, f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Redriven:never")
    items = sfn.list_executions(stateMachineArn=arn, redriveFilter="REDRIVEN")["executions"]
    assert [(i["name"], i["redriveCount"]) for i in items] == [("r1", 2)], items
    assert "redriveDate" in items[0], items
    items = sfn.list_executions(stateMachineArn=arn, redriveFilter="NOT_REDRIVEN")["executions"]
    assert [(i["name"], i["redriveCount"]) for i in items] == [("never", 0)], items
    expect_error("ValidationException", sfn.list_executions, stateMachineArn=arn, redriveFilter="SOMETIMES")
    # Refusals: succeeded, running, unknown, malformed.
    expect_error("ExecutionNotRedrivable", sfn.redrive_execution, executionArn=ex)
    wait = json.dumps({"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 600, "End": True}}})
    warn = sfn.create_state_machine(name="RedriveWait", definition=wait, roleArn=ROLE)["stateMachineArn"]
    running = sfn.start_execution(stateMachineArn=warn, name="w1")["executionArn"]
    d = sfn.describe_execution(executionArn=running)
    assert (d["redriveStatus"], d["redriveStatusReason"]) == ("NOT_REDRIVABLE", "Execution is RUNNING and cannot be redriven"), d
    expect_error("ExecutionNotRedrivable", sfn.redrive_execution, executionArn=running)
    # Aborted: redriven, it runs again (and is stopped again here).
    def waiting():
        events = sfn.get_execution_history(executionArn=running)["events"]
        return any(e["type"] == "WaitStateEntered" for e in events)

    _helpers["wait_for"]("the Wait to be entered", waiting)
    sfn.stop_execution(executionArn=running)
    assert sfn.describe_execution(executionArn=running)["status"] == "ABORTED"
    sfn.redrive_execution(executionArn=running)
    d = sfn.describe_execution(executionArn=running)
    assert (d["status"], d["redriveCount"]) == ("RUNNING", 1), d
    sfn.stop_execution(executionArn=running)
    # Its history keeps how it ended, then ExecutionRedriven, then what the redriven run did.
    events = sfn.get_execution_history(executionArn=running)["events"]
    kinds = [e["type"] for e in events]
    assert kinds == ["ExecutionStarted", "WaitStateEntered", "ExecutionAborted", "ExecutionRedriven", "ExecutionAborted"], kinds
    assert events[3]["executionRedrivenEventDetails"] == {"redriveCount": 1}, events[3]
    assert [e["id"] for e in events] == [1, 2, 3, 4, 5] and events[4]["previousEventId"] == 4, events
    expect_error("ExecutionDoesNotExist", sfn.redrive_execution, executionArn=ex.replace(":r1", ":nope"))
    expect_error("InvalidArn", sfn.redrive_execution, executionArn="arn:nope")
    expect_error("ValidationException", sfn.redrive_execution, executionArn=ex, clientToken="x" * 65)
    # A top-level Fail state (no Task attempt) redriven: re-entered, it fails again, and the
    # history shows the redrive as AWS's does (ExecutionRedriven, the state entered again).
    stop = json.dumps({"StartAt": "Stop", "States": {"Stop": {"Type": "Fail", "Error": "Top.Stopped", "Cause": "always"}}})
    arn = sfn.create_state_machine(name="RedriveFail", definition=stop, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="f1")["executionArn"]
    assert finished(sfn, ex)["status"] == "FAILED"
    date = sfn.redrive_execution(executionArn=ex)["redriveDate"]
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"], d["redriveDate"], d["error"]) == ("FAILED", 1, date, "Top.Stopped"), d
    events = sfn.get_execution_history(executionArn=ex)["events"]
    kinds = [e["type"] for e in events]
    assert kinds == [
        "ExecutionStarted",
        "FailStateEntered",
        "ExecutionFailed",
        "ExecutionRedriven",
        "FailStateEntered",
        "ExecutionFailed",
    ], kinds
    assert [(e["id"], e["previousEventId"]) for e in events[3:]] == [(4, 3), (5, 4), (6, 5)], events
    assert events[3]["executionRedrivenEventDetails"] == {"redriveCount": 1}, events[3]


NESTED = json.dumps(
    {
        "StartAt": "Fan",
        "States": {
            "Fan": {
                "Type": "Parallel",
                "ResultPath": "$.fan",
                "Next": "Each",
                "Branches": [
                    {"StartAt": "L", "States": {"L": {"Type": "Task", "Resource": "First", "End": True}}},
                    {"StartAt": "R", "States": {"R": {"Type": "Task", "Resource": "Flaky", "End": True}}},
                ],
            },
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "MaxConcurrency": 1,
                "ResultPath": "$.each",
                "End": True,
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Item",
                    "States": {"Item": {"Type": "Task", "Resource": "Item", "End": True}},
                },
            },
        },
    }
)


def redrive_nested(sfn):
    """A failure inside a Parallel branch, then inside a Map iteration: each redrive reruns only
    the failed branch or iteration (and the iteration the failure kept from starting)."""
    t0 = time.monotonic()
    arn = sfn.create_state_machine(name="RedriveNested", definition=NESTED, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="nested", input=json.dumps({"items": [1, 2, 3]}))["executionArn"]
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"]) == ("FAILED", 0), d
    # The branches run concurrently: in either order.
    assert sorted(ledger("nested")) == ["First", "Flaky"], ledger("nested")
    fix("nested")
    sfn.redrive_execution(executionArn=ex)
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"]) == ("FAILED", 1), d
    # Only the failed branch ran again; then item 2 failed (item 3 never started).
    assert ledger("nested")[2:] == ["Flaky", "Item1", "Item2"], ledger("nested")
    open(os.path.join(TEST_DIR, "fixed-nested-items"), "w").close()
    sfn.redrive_execution(executionArn=ex)
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"]) == ("SUCCEEDED", 2), d
    assert ledger("nested")[2:] == ["Flaky", "Item1", "Item2", "Item2", "Item3"], ledger("nested")
    expected = {"items": [1, 2, 3], "fan": [{"First": True}, {"Flaky": True}], "each": [{"item": n} for n in [1, 2, 3]]}
    assert json.loads(d["output"]) == expected, d
    # The history: each ending, then ExecutionRedriven, then what the redrive ran.
    events = sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]
    kinds = [e["type"] for e in events]
    assert [e["id"] for e in events] == list(range(1, len(events) + 1)), events
    redriven = [e["executionRedrivenEventDetails"]["redriveCount"] for e in events if e["type"] == "ExecutionRedriven"]
    assert redriven == [1, 2], kinds
    assert [kinds[i + 1] for i, k in enumerate(kinds) if k == "ExecutionFailed"] == ["ExecutionRedriven"] * 2, kinds
    assert kinds.count("ParallelStateFailed") == 1 and kinds.count("MapStateFailed") == 1, kinds
    assert kinds.count("TaskScheduled") == 7 and kinds[-1] == "ExecutionSucceeded", kinds
    # Item 2's iteration, rerun by the second redrive, is started again (docs/serve.md).
    started = [e["mapIterationStartedEventDetails"]["index"] for e in events if e["type"] == "MapIterationStarted"]
    assert started == [0, 1, 1, 2], kinds
    print(f"redrive_nested: {time.monotonic() - t0:.2f} s", flush=True)


def live_history(sfn):
    """A running execution's history grows as it runs, as on AWS: while it waits for an activity
    worker, GetExecutionHistory (paged, reversed, without data) shows the states passed
    through; once it ends, those events are still the first ones, unchanged."""
    machine = json.dumps(
        {
            "StartAt": "Mark",
            "States": {
                "Mark": {"Type": "Pass", "Result": {"go": True}, "Next": "Pick"},
                "Pick": {"Type": "Choice", "Choices": [{"Variable": "$.go", "BooleanEquals": True, "Next": "Work"}], "Default": "Mark"},
                "Work": {"Type": "Task", "Resource": LIVE_ACTIVITY, "End": True},
            },
        }
    )
    sfn.create_activity(name="LiveWork")
    arn = sfn.create_state_machine(name="Live", definition=machine, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="l1", input='{"n": 1}')["executionArn"]

    def waiting():
        events = sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]
        return events if any(e["type"] == "TaskStarted" for e in events) else None

    running = _helpers["wait_for"]("the running history to show the Task started", waiting)
    kinds = [e["type"] for e in running]
    assert kinds == [
        "ExecutionStarted",
        "PassStateEntered",
        "PassStateExited",
        "ChoiceStateEntered",
        "ChoiceStateExited",
        "TaskStateEntered",
        "TaskScheduled",
        "TaskStarted",
    ], kinds
    assert sfn.describe_execution(executionArn=ex)["status"] == "RUNNING"
    assert running[1]["stateEnteredEventDetails"] == {"name": "Mark", "input": '{"n":1}'}, running[1]
    assert running[2]["stateExitedEventDetails"]["output"] == '{"go":true}', running[2]
    # Paged (2 a page), newest first, without data: the same events.
    pages, token = [], None
    while True:
        args = {"executionArn": ex, "maxResults": 2, "reverseOrder": True, "includeExecutionData": False}
        page = sfn.get_execution_history(**args, **({"nextToken": token} if token else {}))
        pages += page["events"]
        token = page.get("nextToken")
        if not token:
            break
    assert [e["id"] for e in pages] == list(range(len(running), 0, -1)), pages
    assert pages[-2]["stateEnteredEventDetails"] == {"name": "Mark", "inputDetails": {"truncated": False}}, pages[-2]
    # A page token is an event index: the next reverse page after the history grew (the
    # execution ended meanwhile) goes on from where the first ended, not from an offset.
    first = sfn.get_execution_history(executionArn=ex, maxResults=2, reverseOrder=True)
    task = sfn.get_activity_task(activityArn=LIVE_ACTIVITY, workerName="live")
    sfn.send_task_success(taskToken=task["taskToken"], output='{"done": true}')
    d = finished(sfn, ex)
    assert d["status"] == "SUCCEEDED", d
    rest = sfn.get_execution_history(executionArn=ex, maxResults=100, reverseOrder=True, nextToken=first["nextToken"])
    ids = [e["id"] for e in first["events"] + rest["events"]]
    assert ids == list(range(len(running), 0, -1)), ids
    expect_error("InvalidToken", sfn.get_execution_history, executionArn=ex, nextToken=first["nextToken"])
    final = sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]
    assert final[: len(running)] == running, (final, running)
    assert [e["type"] for e in final[len(running) :]] == ["TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"], final
    # A stopped execution's history ends with ExecutionAborted, with the stop's error and cause.
    wait = json.dumps({"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 600, "End": True}}})
    warn = sfn.create_state_machine(name="LiveWait", definition=wait, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=warn, name="w1")["executionArn"]

    def entered():
        events = sfn.get_execution_history(executionArn=ex)["events"]
        return events if any(e["type"] == "WaitStateEntered" for e in events) else None

    _helpers["wait_for"]("the Wait to be entered", entered)
    sfn.stop_execution(executionArn=ex, error="Operator.Stop", cause="enough")
    events = sfn.get_execution_history(executionArn=ex)["events"]
    assert [e["type"] for e in events] == ["ExecutionStarted", "WaitStateEntered", "ExecutionAborted"], events
    assert events[-1]["executionAbortedEventDetails"] == {"error": "Operator.Stop", "cause": "enough"}, events[-1]
    assert events[-1]["previousEventId"] == 2, events[-1]


LIVE_ACTIVITY = f"arn:aws:states:us-east-1:{ACCOUNT}:activity:LiveWork"
MAP_ACTIVITY = f"arn:aws:states:us-east-1:{ACCOUNT}:activity:MapWork"


def map_runs(sfn):
    """A DISTRIBUTED Map's Map Run: listed, described while it runs and after, and updated
    while it runs (UpdateMapRun): its children are activity Tasks, one at a time until the
    update lets them all run, and the failure of one is tolerated only by the updated count."""
    machine = json.dumps(
        {
            "StartAt": "Fan",
            "States": {
                "Fan": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "MaxConcurrency": 1,
                    "Label": "fan",
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                        "StartAt": "Work",
                        "States": {"Work": {"Type": "Task", "Resource": MAP_ACTIVITY, "End": True}},
                    },
                    "End": True,
                }
            },
        }
    )
    sfn.create_activity(name="MapWork")
    arn = sfn.create_state_machine(name="Runs", definition=machine, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="r1", input=json.dumps({"items": [1, 2, 3, 4]}))["executionArn"]

    def started():
        events = sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]
        return [e for e in events if e["type"] == "MapRunStarted"]

    run_arn = _helpers["wait_for"]("the Map Run to start", started)[0]["mapRunStartedEventDetails"]["mapRunArn"]
    assert run_arn.startswith(f"arn:aws:states:us-east-1:{ACCOUNT}:mapRun:Runs/fan:"), run_arn
    runs = sfn.list_map_runs(executionArn=ex)["mapRuns"]
    assert [(r["mapRunArn"], r["executionArn"], r["stateMachineArn"]) for r in runs] == [(run_arn, ex, arn)], runs
    assert "stopDate" not in runs[0], runs
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert (d["status"], d["executionArn"], d["maxConcurrency"], d["toleratedFailureCount"]) == ("RUNNING", ex, 1, 0), d
    assert "stopDate" not in d, d
    # One child at a time: the first one's task, and no second until the update.
    first = sfn.get_activity_task(activityArn=MAP_ACTIVITY, workerName="map")
    assert json.loads(first["input"]) == 1, first
    d = sfn.describe_map_run(mapRunArn=run_arn)
    for counts in (d["itemCounts"], d["executionCounts"]):
        assert (counts["running"], counts["pending"], counts["total"], counts["succeeded"]) == (1, 3, 4, 0), d
    sfn.update_map_run(mapRunArn=run_arn, maxConcurrency=4, toleratedFailureCount=1)
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert (d["maxConcurrency"], d["toleratedFailureCount"]) == (4, 1), d
    # The other three now run beside the first (whose task is not answered yet).
    tasks = [sfn.get_activity_task(activityArn=MAP_ACTIVITY, workerName="map") for _ in range(3)]
    assert sorted(json.loads(t["input"]) for t in tasks) == [2, 3, 4], tasks
    counts = sfn.describe_map_run(mapRunArn=run_arn)["executionCounts"]
    assert (counts["running"], counts["pending"]) == (4, 0), counts
    sfn.send_task_failure(taskToken=first["taskToken"], error="Item.Bad", cause="one")
    for t in tasks:
        sfn.send_task_success(taskToken=t["taskToken"], output=t["input"])
    d = finished(sfn, ex)
    assert d["status"] == "SUCCEEDED", d
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert d["status"] == "SUCCEEDED" and "stopDate" in d, d
    counts = {k: d["itemCounts"][k] for k in ("succeeded", "failed", "total", "pending", "running")}
    assert counts == {"succeeded": 3, "failed": 1, "total": 4, "pending": 0, "running": 0}, d
    assert d["executionCounts"]["succeeded"] == 3 and d["executionCounts"]["failed"] == 1, d
    # The tolerated failure: nothing waits for a redrive once the run ended, and the failed
    # child is within its redrivable period (AWS's DescribeMapRun shows 0 and 0 here too).
    for counts in (d["itemCounts"], d["executionCounts"]):
        assert (counts["failuresNotRedrivable"], counts["pendingRedrive"]) == (0, 0), d
    assert "stopDate" in sfn.list_map_runs(executionArn=ex)["mapRuns"][0]
    # ListExecutions by mapRunArn: the run's child executions, read from the parent's journal.
    children = sfn.list_executions(mapRunArn=run_arn)["executions"]
    got = [(c["status"], c["mapRunArn"], c["itemCount"]) for c in children]
    assert got == [("FAILED", run_arn, 1)] + [("SUCCEEDED", run_arn, 1)] * 3, children
    child_arn = f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Runs/fan:"
    assert all(c["executionArn"].startswith(child_arn) and "stopDate" in c for c in children), children
    failed = sfn.list_executions(mapRunArn=run_arn, statusFilter="FAILED")["executions"]
    assert [c["name"] for c in failed] == [children[0]["name"]], failed
    first_page = sfn.list_executions(mapRunArn=run_arn, maxResults=3)
    assert first_page["executions"] == children[:3] and "nextToken" in first_page, first_page
    expect_error("ResourceNotFound", sfn.list_executions, mapRunArn=run_arn[:-4] + "0000")
    # Refusals, with AWS's codes.
    expect_error("ValidationException", sfn.update_map_run, mapRunArn=run_arn, maxConcurrency=2)
    expect_error("ResourceNotFound", sfn.describe_map_run, mapRunArn=run_arn[:-4] + "0000")
    expect_error("InvalidArn", sfn.describe_map_run, mapRunArn="arn:aws:states:us-east-1:1:nothing")
    expect_error("ExecutionDoesNotExist", sfn.list_map_runs, executionArn=ex.replace(":r1", ":r9"))
    # An execution with no Map Run (live_history's) has none.
    live = f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Live:l1"
    assert sfn.list_map_runs(executionArn=live)["mapRuns"] == []


def map_run_redrive(sfn):
    """RedriveExecution of an execution whose DISTRIBUTED Map Run failed (item 2 of 3, one child
    at a time, no failure tolerated): the redrive reruns only item 2's child (item 1's is not
    run again) and runs item 3's; the Map Run keeps its ARN, records MapRunRedriven, and
    DescribeMapRun shows its redriveCount and redriveDate."""
    machine = json.dumps(
        {
            "StartAt": "Fan",
            "States": {
                "Fan": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "MaxConcurrency": 1,
                    "Label": "dmap",
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                        "StartAt": "Each",
                        "States": {"Each": {"Type": "Task", "Resource": "MapItem", "End": True}},
                    },
                    "End": True,
                }
            },
        }
    )
    t0 = time.monotonic()
    arn = sfn.create_state_machine(name="MapRedrive", definition=machine, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="m1", input=json.dumps({"items": [1, 2, 3]}))["executionArn"]
    d = finished(sfn, ex)
    assert (d["status"], d["error"]) == ("FAILED", "States.ExceedToleratedFailureThreshold"), d
    assert ledger("dmap") == ["Item1", "Item2"], ledger("dmap")
    run_arn = sfn.list_map_runs(executionArn=ex)["mapRuns"][0]["mapRunArn"]
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert (d["status"], d["redriveCount"]) == ("FAILED", 0) and "redriveDate" not in d, d
    # Item 2 failed, item 3 never ran (aborted); the run ended, so none is pendingRedrive
    # (AWS resets it to 0 when a run completes), and both can still be redriven.
    for counts in (d["itemCounts"], d["executionCounts"]):
        got = {k: counts[k] for k in ("succeeded", "failed", "aborted", "pendingRedrive", "failuresNotRedrivable")}
        assert got == {"succeeded": 1, "failed": 1, "aborted": 1, "pendingRedrive": 0, "failuresNotRedrivable": 0}, d
    before = sfn.list_executions(mapRunArn=run_arn)["executions"]
    assert [c["status"] for c in before] == ["SUCCEEDED", "FAILED"], before
    open(os.path.join(TEST_DIR, "fixed-dmap-items"), "w").close()
    sfn.redrive_execution(executionArn=ex)
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"]) == ("SUCCEEDED", 1), d
    assert json.loads(d["output"]) == [{"item": n} for n in [1, 2, 3]], d
    assert ledger("dmap") == ["Item1", "Item2", "Item2", "Item3"], ledger("dmap")
    # The same Map Run, redriven once, every child succeeded.
    assert [r["mapRunArn"] for r in sfn.list_map_runs(executionArn=ex)["mapRuns"]] == [run_arn]
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert (d["status"], d["redriveCount"]) == ("SUCCEEDED", 1) and "redriveDate" in d, d
    for counts in (d["itemCounts"], d["executionCounts"]):
        assert (counts["succeeded"], counts["failed"], counts["total"]) == (3, 0, 3), d
        assert (counts["pendingRedrive"], counts["failuresNotRedrivable"]) == (0, 0), d
    # Item 2's child was redriven (same ARN, first start kept); item 3's ran once.
    after = sfn.list_executions(mapRunArn=run_arn)["executions"]
    assert [c["status"] for c in after] == ["SUCCEEDED"] * 3, after
    assert [c["executionArn"] for c in after[:2]] == [c["executionArn"] for c in before], (before, after)
    assert after[1]["startDate"] == before[1]["startDate"] and after[1]["redriveCount"] == 1, after
    assert "redriveDate" in after[1] and "redriveCount" not in after[0] and "redriveCount" not in after[2], after
    redriven = sfn.list_executions(mapRunArn=run_arn, redriveFilter="REDRIVEN")["executions"]
    assert [c["name"] for c in redriven] == [after[1]["name"]], redriven
    assert len(sfn.list_executions(mapRunArn=run_arn, redriveFilter="NOT_REDRIVEN")["executions"]) == 2
    assert sfn.list_executions(mapRunArn=run_arn, statusFilter="PENDING_REDRIVE")["executions"] == []
    expect_error("ValidationException", sfn.list_executions, mapRunArn=run_arn, statusFilter="SOMETIMES")
    events = sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]
    kinds = [e["type"] for e in events]
    at = kinds.index("ExecutionRedriven")
    assert kinds[at - 3 : at + 2] == ["MapRunFailed", "MapStateFailed", "ExecutionFailed", "ExecutionRedriven", "MapRunRedriven"], kinds
    assert events[at + 1]["mapRunRedrivenEventDetails"] == {"mapRunArn": run_arn, "redriveCount": 1}, events[at + 1]
    assert kinds[-4:] == ["MapRunSucceeded", "MapStateSucceeded", "MapStateExited", "ExecutionSucceeded"], kinds
    assert kinds.count("MapRunStarted") == 1, kinds
    print(f"map_run_redrive: {time.monotonic() - t0:.2f} s", flush=True)
    map_run_reader_redrive(sfn)


STOP_ACTIVITY = f"arn:aws:states:us-east-1:{ACCOUNT}:activity:StopWork"


def map_run_stopped_redrive(sfn, nested=False):
    """RedriveExecution of an execution stopped while its DISTRIBUTED Map Run ran (AWS's
    "Redriving Map Runs": the parent redrives its Map Run, whose unsuccessful children run
    again): item 1's child succeeded and is not run again; item 2's failed (tolerated) and runs
    again, redriven; item 3's was waiting for an activity task (aborted) and runs again.
    `nested`: the Map is in a Parallel branch in flight at the stop (the branch resumes on the
    redrive, and its Map Run is redriven as at the top level)."""
    label, resource = ("dstop2", "StopItem2") if nested else ("dstop", "StopItem")
    fan = {
        "Type": "Map",
        "ItemsPath": "$.items",
        "Label": label,
        "ToleratedFailureCount": 5,
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
            "StartAt": "Which",
            "States": {
                "Which": {
                    "Type": "Choice",
                    "Choices": [{"Variable": "$", "NumericEquals": 3, "Next": "Wait"}],
                    "Default": "Each",
                },
                "Each": {"Type": "Task", "Resource": resource, "End": True},
                "Wait": {"Type": "Task", "Resource": STOP_ACTIVITY, "End": True},
            },
        },
        "End": True,
    }
    if nested:
        # Two branches: the redriven run's replay may interleave them otherwise than they ran,
        # and the history must still keep the stop's ExecutionAborted and ExecutionRedriven.
        fan = {
            "Type": "Parallel",
            "Branches": [
                {"StartAt": "Fan", "States": {"Fan": fan}},
                {"StartAt": "Other", "States": {"Other": {"Type": "Pass", "Result": "other", "End": True}}},
            ],
            "End": True,
        }
    machine = json.dumps({"StartAt": "Top", "States": {"Top": fan}})
    name = "MapStoppedNested" if nested else "MapStopped"
    t0 = time.monotonic()
    if not nested:
        sfn.create_activity(name="StopWork")
    arn = sfn.create_state_machine(name=name, definition=machine, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="s1", input=json.dumps({"items": [1, 2, 3]}))["executionArn"]
    task = sfn.get_activity_task(activityArn=STOP_ACTIVITY, workerName="stop")
    assert json.loads(task["input"]) == 3, task
    run_arn = sfn.list_map_runs(executionArn=ex)["mapRuns"][0]["mapRunArn"]

    def both_ended():
        got = sorted(c["status"] for c in sfn.list_executions(mapRunArn=run_arn)["executions"])
        return "FAILED" in got and "SUCCEEDED" in got

    _helpers["wait_for"]("items 1 and 2 to end", both_ended)
    sfn.stop_execution(executionArn=ex, error="Operator.Stop", cause="mid-run")
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert d["status"] == "ABORTED" and "stopDate" in d, d
    # Aborted with its execution: the failed and the aborted child can be redriven; none is
    # pendingRedrive (AWS resets it to 0 when a run is aborted).
    counts = d["executionCounts"]
    got = {k: counts[k] for k in ("succeeded", "failed", "aborted", "pendingRedrive", "failuresNotRedrivable")}
    assert got == {"succeeded": 1, "failed": 1, "aborted": 1, "pendingRedrive": 0, "failuresNotRedrivable": 0}, d
    assert "stopDate" in sfn.list_map_runs(executionArn=ex)["mapRuns"][0], run_arn
    fix(f"{label}-items")
    events = lambda: sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]  # noqa: E731
    before = [(e["id"], e["type"], e["timestamp"]) for e in events()]
    assert before[-1][1] == "ExecutionAborted", before
    sfn.redrive_execution(executionArn=ex)
    task = sfn.get_activity_task(activityArn=STOP_ACTIVITY, workerName="stop")
    assert json.loads(task["input"]) == 3, task
    sfn.send_task_success(taskToken=task["taskToken"], output=json.dumps({"item": 3}))
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"]) == ("SUCCEEDED", 1), d
    items = [{"item": n} for n in [1, 2, 3]]
    assert json.loads(d["output"]) == ([items, "other"] if nested else items), d
    # Item 1 ran once; item 2 ran again (redriven), and succeeded.
    ran = ledger(label)  # items 1 and 2 ran at once the first time
    assert sorted(ran[:2]) == ["Item1", "Item2"] and ran[2:] == ["Item2"], ran
    assert [r["mapRunArn"] for r in sfn.list_map_runs(executionArn=ex)["mapRuns"]] == [run_arn]
    d = sfn.describe_map_run(mapRunArn=run_arn)
    history = lambda: [e["type"] for e in sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]]  # noqa: E731
    assert (d["status"], d["redriveCount"]) == ("SUCCEEDED", 1), (d, history())
    assert (d["executionCounts"]["succeeded"], d["executionCounts"]["failed"]) == (3, 0), d
    after = sfn.list_executions(mapRunArn=run_arn)["executions"]
    assert [c["status"] for c in after] == ["SUCCEEDED"] * 3, after
    assert after[1].get("redriveCount") == 1 and "redriveCount" not in after[0], after
    got = events()
    kinds = [e["type"] for e in got]
    # Every event from before the redrive is still there as it was, and the rest follow it.
    assert [(e["id"], e["type"], e["timestamp"]) for e in got[: len(before)]] == before, (before, kinds)
    assert [e["id"] for e in got] == list(range(1, len(got) + 1)), kinds
    assert all(e["previousEventId"] < e["id"] for e in got), got
    at = kinds.index("ExecutionRedriven")
    assert at == len(before), (before, kinds)
    assert kinds[at - 1 : at + 2] == ["ExecutionAborted", "ExecutionRedriven", "MapRunRedriven"], kinds
    assert kinds[-4:] == ["MapRunSucceeded", "MapStateSucceeded", "MapStateExited", "ExecutionSucceeded"] or nested, kinds
    assert kinds.count("MapRunSucceeded") == 1 and kinds[-1] == "ExecutionSucceeded", kinds
    print(f"map_run_stopped_redrive(nested={nested}): {time.monotonic() - t0:.2f} s", flush=True)


def map_run_tolerance_redrive(sfn):
    """A Map Run redriven twice, its tolerance changed by UpdateMapRun in between: each earlier
    attempt (level) is judged as it ended, not by the tolerance the run has at the redrive (AWS
    redrives a Map state that did not exit). ToleratedFailureCountPath gives 0: item 2 fails,
    the run fails. Redriven, items 2-4 run again one at a time; while item 2 waits, the run is
    updated to tolerate 1 failure, then items 2 and 3 fail: it fails again. Redriven again,
    the children that did not succeed run again (with the tolerance now, 1, the first attempt
    would count as within it); item 3 is PENDING_REDRIVE while item 2 holds the one place."""
    machine = json.dumps(
        {
            "StartAt": "Fan",
            "States": {
                "Fan": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "MaxConcurrency": 1,
                    "Label": "dtol",
                    "ToleratedFailureCountPath": "$.tolerate",
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                        "StartAt": "Each",
                        "States": {"Each": {"Type": "Task", "Resource": "TolItem", "End": True}},
                    },
                    "End": True,
                }
            },
        }
    )
    t0 = time.monotonic()
    plan = lambda fail, hold: saved("dtol-plan", json.dumps({"fail": fail, "hold": hold}))  # noqa: E731
    release = os.path.join(TEST_DIR, "dtol-release")
    plan([2], [])
    arn = sfn.create_state_machine(name="MapTolerance", definition=machine, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="t1", input=json.dumps({"items": [1, 2, 3, 4], "tolerate": 0}))["executionArn"]
    d = finished(sfn, ex)
    assert (d["status"], d["error"]) == ("FAILED", "States.ExceedToleratedFailureThreshold"), d
    assert ledger("dtol") == ["Item1", "Item2"], ledger("dtol")
    run_arn = sfn.list_map_runs(executionArn=ex)["mapRuns"][0]["mapRunArn"]

    def holding(count, running_count):
        def check():
            if ledger("dtol").count("Item2") < count:
                return None
            d = sfn.describe_map_run(mapRunArn=run_arn)
            return d if d["status"] == "RUNNING" and d["executionCounts"]["running"] == running_count else None

        return _helpers["wait_for"](f"item 2 to hold (run {count})", check)

    plan([2, 3], [2])
    sfn.redrive_execution(executionArn=ex)
    d = holding(2, 1)
    # Item 3 and 4 never ran (no child execution to redrive): pending, not pendingRedrive.
    assert (d["executionCounts"]["pending"], d["executionCounts"]["pendingRedrive"]) == (2, 0), d
    sfn.update_map_run(mapRunArn=run_arn, toleratedFailureCount=1)
    open(release, "w").close()
    d = finished(sfn, ex)
    assert (d["status"], d["error"], d["redriveCount"]) == ("FAILED", "States.ExceedToleratedFailureThreshold", 1), d
    assert ledger("dtol") == ["Item1", "Item2", "Item2", "Item3"], ledger("dtol")
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert (d["status"], d["toleratedFailureCount"]) == ("FAILED", 1), d
    os.remove(release)
    plan([], [2])
    sfn.redrive_execution(executionArn=ex)
    d = holding(3, 1)
    # Item 3 failed before and waits for the place item 2 holds: PENDING_REDRIVE (AWS's
    # "Pending redrive"); item 4 never ran, so it is only pending.
    counts = d["executionCounts"]
    assert (counts["running"], counts["pending"], counts["pendingRedrive"], counts["succeeded"]) == (1, 2, 1, 1), d
    assert d["itemCounts"]["pendingRedrive"] == 1, d
    children = sfn.list_executions(mapRunArn=run_arn)["executions"]
    assert [c["status"] for c in children] == ["SUCCEEDED", "RUNNING", "PENDING_REDRIVE"], children
    waiting = sfn.list_executions(mapRunArn=run_arn, statusFilter="PENDING_REDRIVE")["executions"]
    assert [c["name"] for c in waiting] == [children[2]["name"]] and "stopDate" not in waiting[0], waiting
    open(release, "w").close()
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"]) == ("SUCCEEDED", 2), d
    assert json.loads(d["output"]) == [{"item": n} for n in [1, 2, 3, 4]], d
    assert ledger("dtol") == ["Item1", "Item2", "Item2", "Item3", "Item2", "Item3", "Item4"], ledger("dtol")
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert (d["status"], d["redriveCount"], d["executionCounts"]["succeeded"]) == ("SUCCEEDED", 2, 4), d
    assert (d["executionCounts"]["pendingRedrive"], d["itemCounts"]["pendingRedrive"]) == (0, 0), d
    assert sfn.list_executions(mapRunArn=run_arn, statusFilter="PENDING_REDRIVE")["executions"] == []
    kinds = [e["type"] for e in sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]]
    assert kinds.count("MapRunRedriven") == 2 and kinds.count("MapRunFailed") == 2, kinds
    print(f"map_run_tolerance_redrive: {time.monotonic() - t0:.2f} s", flush=True)


def map_run_exited_redrive(sfn):
    """A Map Run that succeeded with a tolerated failed child, then a later state fails: the
    redrive runs the later state again only. The Map state exited, so AWS does not redrive its
    run ("A parent workflow redrives unsuccessful states if there's no <stateType>Exited
    event"): the failed child does not run again and no MapRunRedriven is recorded."""
    machine = json.dumps(
        {
            "StartAt": "Fan",
            "States": {
                "Fan": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "Label": "dtol",
                    "ToleratedFailureCount": 1,
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                        "StartAt": "Each",
                        "States": {"Each": {"Type": "Task", "Resource": "TolItem", "End": True}},
                    },
                    "ResultPath": "$.fan",
                    "Next": "Later",
                },
                "Later": {"Type": "Task", "Resource": "Flaky", "ResultPath": None, "End": True},
            },
        }
    )
    saved("dtol-plan", json.dumps({"fail": [6], "hold": []}))
    before = len(ledger("dtol"))
    arn = sfn.create_state_machine(name="MapThenFail", definition=machine, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="mt1", input=json.dumps({"items": [5, 6]}))["executionArn"]
    d = finished(sfn, ex)
    assert (d["status"], d["error"]) == ("FAILED", "States.TaskFailed"), d
    assert sorted(ledger("dtol")[before:]) == ["Item5", "Item6"], ledger("dtol")
    run_arn = sfn.list_map_runs(executionArn=ex)["mapRuns"][0]["mapRunArn"]
    fix("mt1")
    sfn.redrive_execution(executionArn=ex)
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"]) == ("SUCCEEDED", 1), d
    assert len(ledger("dtol")) == before + 2 and ledger("mt1") == ["Flaky", "Flaky"], (ledger("dtol"), ledger("mt1"))
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert (d["status"], d["redriveCount"], d["executionCounts"]["failed"]) == ("SUCCEEDED", 0, 1), d
    kinds = [e["type"] for e in sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]]
    assert "MapRunRedriven" not in kinds and kinds.count("MapRunSucceeded") == 1, kinds


def map_run_reader_redrive(sfn):
    """A DISTRIBUTED Map whose ItemReader reads a file of the server's --item-root and whose
    ResultWriter writes under its --result-root. Its object missing, the Map Run fails with
    States.ItemReaderFailed; redriven once the object is there, the Map state starts a new Map
    Run (as AWS does), whose ResultWriter fails (a file where its bucket's directory goes);
    redriven once that is gone, a third Map Run runs the children again and writes the results.
    The history keeps each failure and redrive."""
    machine = json.dumps(
        {
            "StartAt": "Fan",
            "States": {
                "Fan": {
                    "Type": "Map",
                    "Label": "reader",
                    "ItemReader": {
                        "Resource": "arn:aws:states:::s3:getObject",
                        "ReaderConfig": {"InputType": "JSON"},
                        "Parameters": {"Bucket": "in", "Key.$": "$.key"},
                    },
                    "ResultWriter": {"Resource": "arn:aws:states:::s3:putObject", "Parameters": {"Bucket": "out", "Prefix": "runs"}},
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                        "StartAt": "P",
                        "States": {"P": {"Type": "Pass", "Parameters": {"doubled.$": "States.MathAdd($, $)"}, "End": True}},
                    },
                    "End": True,
                }
            },
        }
    )
    arn = sfn.create_state_machine(name="MapReader", definition=machine, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="r1", input=json.dumps({"key": "list.json"}))["executionArn"]
    d = finished(sfn, ex)
    assert (d["status"], d["error"]) == ("FAILED", "States.ItemReaderFailed"), d
    run_arn = sfn.list_map_runs(executionArn=ex)["mapRuns"][0]["mapRunArn"]
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert d["status"] == "FAILED" and d["executionCounts"]["total"] == 0, d
    assert (d["itemCounts"]["pendingRedrive"], d["itemCounts"]["failuresNotRedrivable"]) == (0, 0), d
    os.makedirs(os.path.join(TEST_DIR, "items", "in"), exist_ok=True)
    with open(os.path.join(TEST_DIR, "items", "in", "list.json"), "w") as f:
        json.dump([1, 2, 3], f)
    blocker = os.path.join(TEST_DIR, "results", "out")
    os.makedirs(os.path.dirname(blocker), exist_ok=True)
    open(blocker, "w").close()
    sfn.redrive_execution(executionArn=ex)
    d = finished(sfn, ex)
    assert (d["status"], d["error"], d["redriveCount"]) == ("FAILED", "States.ResultWriterFailed", 1), d
    runs = [r["mapRunArn"] for r in sfn.list_map_runs(executionArn=ex)["mapRuns"]]
    assert len(runs) == 2 and runs[0] == run_arn, runs
    d = sfn.describe_map_run(mapRunArn=runs[1])
    assert (d["status"], d["executionCounts"]["succeeded"], d["itemCounts"]["resultsWritten"]) == ("FAILED", 3, 0), d
    os.remove(blocker)
    sfn.redrive_execution(executionArn=ex)
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"]) == ("SUCCEEDED", 2), d
    out = json.loads(d["output"])
    run_arn = out["MapRunArn"]
    assert [r["mapRunArn"] for r in sfn.list_map_runs(executionArn=ex)["mapRuns"]] == runs + [run_arn], runs
    key = out["ResultWriterDetails"]["Key"]
    assert out["ResultWriterDetails"]["Bucket"] == "out" and key.startswith("runs/"), out
    manifest = json.load(open(os.path.join(TEST_DIR, "results", "out", key)))
    assert manifest["MapRunArn"] == run_arn and manifest["DestinationBucket"] == "out", manifest
    [written] = manifest["ResultFiles"]["SUCCEEDED"]
    results = json.load(open(os.path.join(TEST_DIR, "results", "out", written["Key"])))
    assert sorted(json.loads(r["Output"])["doubled"] for r in results) == [2, 4, 6], results
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert d["status"] == "SUCCEEDED" and d["itemCounts"]["resultsWritten"] == 3, d
    kinds = [e["type"] for e in sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]]
    failed_run = ["MapRunFailed", "MapStateFailed", "ExecutionFailed", "ExecutionRedriven", "MapStateStarted", "MapRunStarted"]
    assert kinds == [
        "ExecutionStarted", "MapStateEntered", "MapStateStarted", "MapRunStarted", *failed_run, *failed_run,
        "MapRunSucceeded", "MapStateSucceeded", "MapStateExited", "ExecutionSucceeded",
    ], kinds


def map_machine(activity, label):
    """A DISTRIBUTED Map of Tasks of `resource`, one child at a time."""
    machine = json.dumps(
        {
            "StartAt": "Fan",
            "States": {
                "Fan": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "MaxConcurrency": 1,
                    "Label": label,
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                        "StartAt": "Work",
                        "States": {"Work": {"Type": "Task", "Resource": activity, "End": True}},
                    },
                    "End": True,
                }
            },
        }
    )
    return machine


def running_children(sfn, run_arn, n):
    """Waits until Map Run `run_arn` has `n` children running (DescribeMapRun), and returns
    them as ListExecutions lists them."""

    def running():
        counts = sfn.describe_map_run(mapRunArn=run_arn)["executionCounts"]
        return counts["running"] == n or None

    _helpers["wait_for"](f"{n} children of {run_arn} to run", running)
    listed = sfn.list_executions(mapRunArn=run_arn, statusFilter="RUNNING")["executions"]
    assert len(listed) == n and all(c["status"] == "RUNNING" and "stopDate" not in c for c in listed), listed
    return listed


def map_run_before_restart(sfn):
    """UpdateMapRun's limits are kept in the store: a run updated to 3 children at a time
    before the restart runs 3 at a time after it (not its definition's 1). Its children are
    `Hold` commands, which wait for the release file."""
    arn = sfn.create_state_machine(name="MapKeep", definition=map_machine("Hold", "keep"), roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="k1", input=json.dumps({"items": [1, 2, 3, 4]}))["executionArn"]

    def started():
        return sfn.list_map_runs(executionArn=ex)["mapRuns"]

    run_arn = _helpers["wait_for"]("the Map Run to start", started)[0]["mapRunArn"]
    running_children(sfn, run_arn, 1)
    sfn.update_map_run(mapRunArn=run_arn, maxConcurrency=3, toleratedFailureCount=1)
    running_children(sfn, run_arn, 3)
    _helpers["wait_for"]("3 children to start", lambda: sorted(ledger("hold")) == ["1", "2", "3"])
    saved("keep-run", run_arn)


KEEP_ACTIVITY = f"arn:aws:states:us-east-1:{ACCOUNT}:activity:MapKeepWork"


def map_activity_before_restart(sfn):
    """A Map Run child's activity task handed to a worker before a restart is answered after
    it: the resumed child takes over the task it queued (fenced by its parent's epoch)."""
    sfn.create_activity(name="MapKeepWork")
    arn = sfn.create_state_machine(name="MapAct", definition=map_machine(KEEP_ACTIVITY, "act"), roleArn=ROLE)["stateMachineArn"]
    sfn.start_execution(stateMachineArn=arn, name="a1", input=json.dumps({"items": [7]}))
    task = sfn.get_activity_task(activityArn=KEEP_ACTIVITY, workerName="before")
    assert json.loads(task["input"]) == 7, task
    saved("map-act-token", task["taskToken"])


GONE_ACTIVITY = f"arn:aws:states:us-east-1:{ACCOUNT}:activity:GoneWork"


def gone_before_restart(sfn):
    """An activity task handed out before the restart, whose execution is stopped while no
    server runs (`wfc executions stop`, between the phases): the CLI deletes its rows (serve_more.rs
    checks the store), so its token is answered TaskDoesNotExist (not taken as an answer)."""
    sfn.create_activity(name="GoneWork")
    machine = json.dumps({"StartAt": "W", "States": {"W": {"Type": "Task", "Resource": GONE_ACTIVITY, "End": True}}})
    arn = sfn.create_state_machine(name="Gone", definition=machine, roleArn=ROLE)["stateMachineArn"]
    sfn.start_execution(stateMachineArn=arn, name="g1", input=json.dumps({"n": 1}))
    task = sfn.get_activity_task(activityArn=GONE_ACTIVITY, workerName="before")
    assert json.loads(task["input"]) == {"n": 1}, task
    saved("gone-token", task["taskToken"])


def gone_after_restart(sfn):
    d = sfn.describe_execution(executionArn=f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Gone:g1")
    assert d["status"] == "ABORTED", d
    expect_error("TaskDoesNotExist", sfn.send_task_success, taskToken=saved("gone-token"), output="{}")
    expect_error("TaskDoesNotExist", sfn.send_task_heartbeat, taskToken=saved("gone-token"))


def map_activity_after_restart(sfn):
    sfn.send_task_success(taskToken=saved("map-act-token"), output='"done"')
    d = finished(sfn, f"arn:aws:states:us-east-1:{ACCOUNT}:execution:MapAct:a1")
    assert (d["status"], json.loads(d["output"])) == ("SUCCEEDED", ["done"]), d


def map_run_after_restart(sfn):
    run_arn = saved("keep-run")
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert (d["status"], d["maxConcurrency"], d["toleratedFailureCount"]) == ("RUNNING", 3, 1), d
    # Resumed, it runs 3 children at a time again (they start again, item 4 still waits).
    _helpers["wait_for"]("3 children to start again", lambda: len(ledger("hold")) >= 6)
    assert sorted(ledger("hold")) == ["1", "1", "2", "2", "3", "3"], ledger("hold")
    listed = running_children(sfn, run_arn, 3)
    counts = sfn.describe_map_run(mapRunArn=run_arn)["itemCounts"]
    assert (counts["running"], counts["pending"], counts["total"]) == (3, 1, 4), counts
    # Released: item 1 fails, tolerated by the updated count; the others succeed.
    open(os.path.join(TEST_DIR, "release-hold"), "w").close()
    d = finished(sfn, f"arn:aws:states:us-east-1:{ACCOUNT}:execution:MapKeep:k1")
    assert (d["status"], json.loads(d["output"])[1:]) == ("SUCCEEDED", [2, 3, 4]), d
    d = sfn.describe_map_run(mapRunArn=run_arn)
    assert (d["status"], d["executionCounts"]["succeeded"], d["executionCounts"]["failed"]) == ("SUCCEEDED", 3, 1), d
    children = sfn.list_executions(mapRunArn=run_arn)["executions"]
    assert [c["executionArn"] for c in children[:3]] == [c["executionArn"] for c in listed], (listed, children)


QUEUED_ACTIVITY = f"arn:aws:states:us-east-1:{ACCOUNT}:activity:QueuedWork"
GATE_ACTIVITY = f"arn:aws:states:us-east-1:{ACCOUNT}:activity:GateWork"
SHARED_ACTIVITY = f"arn:aws:states:us-east-1:{ACCOUNT}:activity:SharedWork"
# A mocked Task (its invocations counted per execution), then an activity gate and the Task
# again, until its second answer: run across a restart, the count goes on where it was.
GATED = json.dumps(
    {
        "StartAt": "Call",
        "States": {
            "Call": {"Type": "Task", "Resource": "Counted", "ResultPath": "$.call", "Next": "Check"},
            "Check": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.call.n", "NumericEquals": 1, "Next": "Done"}],
                "Default": "Gate",
            },
            "Gate": {"Type": "Task", "Resource": GATE_ACTIVITY, "ResultPath": None, "Next": "Call"},
            "Done": {"Type": "Succeed"},
        },
    }
)


def task_started(sfn, ex, count=1):
    def started():
        events = sfn.get_execution_history(executionArn=ex, maxResults=1000)["events"]
        return sum(e["type"] == "TaskStarted" for e in events) >= count

    _helpers["wait_for"](f"{ex} to wait for its activity task", started)


def saved(name, value=None):
    path = os.path.join(TEST_DIR, name)
    if value is not None:
        open(path, "w").write(value)
    return open(path).read()


def queues_before_restart(sfn):
    """Activity tasks, mock counters and redrive client tokens are in the store: written here,
    used after the restart (queues_after_restart)."""
    sfn.create_activity(name="QueuedWork")
    arn = sfn.create_state_machine(
        name="Queued",
        definition=json.dumps({"StartAt": "W", "States": {"W": {"Type": "Task", "Resource": QUEUED_ACTIVITY, "End": True}}}),
        roleArn=ROLE,
    )["stateMachineArn"]
    # One task handed to a worker before the restart (answered after it), one still queued.
    handed = sfn.start_execution(stateMachineArn=arn, name="handed", input='{"k": "handed"}')["executionArn"]
    task_started(sfn, handed)
    task = sfn.get_activity_task(activityArn=QUEUED_ACTIVITY, workerName="before")
    assert json.loads(task["input"]) == {"k": "handed"}, task
    saved("handed-token", task["taskToken"])
    queued = sfn.start_execution(stateMachineArn=arn, name="queued", input='{"k": "queued"}')["executionArn"]
    task_started(sfn, queued)
    # The mocked Call answered once (invocation 0), the execution waits at the gate.
    sfn.create_activity(name="GateWork")
    gated = sfn.create_state_machine(name="Gated", definition=GATED, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=gated + "#Counted", name="counted", input="{}")["executionArn"]
    task_started(sfn, ex, 2)
    # Redriven with a client token before the restart: the same token after it redrives nothing.
    arn = sfn.create_state_machine(name="Tokened", definition=REDRIVE, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="tokened", input="{}")["executionArn"]
    assert finished(sfn, ex)["status"] == "FAILED"
    saved("redrive-date", str(sfn.redrive_execution(executionArn=ex, clientToken="keep-1")["redriveDate"]))
    d = finished(sfn, ex)
    assert (d["status"], d["redriveCount"]) == ("FAILED", 1), d


def queues_after_restart(sfn):
    ex = lambda name: f"arn:aws:states:us-east-1:{ACCOUNT}:execution:{name}"  # noqa: E731
    # The queued task is still queued; the handed-out one is answered with its old token.
    task = sfn.get_activity_task(activityArn=QUEUED_ACTIVITY, workerName="after")
    assert json.loads(task["input"]) == {"k": "queued"}, task
    sfn.send_task_success(taskToken=task["taskToken"], output='{"done": "queued"}')
    sfn.send_task_success(taskToken=saved("handed-token"), output='{"done": "handed"}')
    for name in ("queued", "handed"):
        d = finished(sfn, ex(f"Queued:{name}"))
        assert (d["status"], json.loads(d["output"])) == ("SUCCEEDED", {"done": name}), d
    expect_error("TaskDoesNotExist", sfn.send_task_success, taskToken=saved("handed-token"), output="{}")
    # The gate opens; the Call's second invocation answers n = 1 (a count started again would
    # answer n = 0 and wait at the gate again).
    gate = sfn.get_activity_task(activityArn=GATE_ACTIVITY, workerName="after")
    sfn.send_task_success(taskToken=gate["taskToken"], output="{}")
    d = finished(sfn, ex("Gated:counted"))
    assert (d["status"], json.loads(d["output"])["call"]) == ("SUCCEEDED", {"n": 1}), d
    # The client token of the redrive before the restart: the same date, no second redrive.
    tokened = ex("Tokened:tokened")
    date = sfn.redrive_execution(executionArn=tokened, clientToken="keep-1")["redriveDate"]
    assert str(date) == saved("redrive-date"), (date, saved("redrive-date"))
    d = sfn.describe_execution(executionArn=tokened)
    assert (d["status"], d["redriveCount"]) == ("FAILED", 1), d


def two_servers_a(sfn):
    """Server A (the only one yet) queues two tasks; two_servers_b, on server B of the same store,
    hands them to a worker, which heartbeats one through A and one through B (each Task's
    HeartbeatSeconds would end it otherwise) and answers both through B."""
    sfn.create_activity(name="SharedWork")
    task = {"Type": "Task", "Resource": SHARED_ACTIVITY, "HeartbeatSeconds": 2, "End": True}
    arn = sfn.create_state_machine(
        name="Shared", definition=json.dumps({"StartAt": "W", "States": {"W": task}}), roleArn=ROLE
    )["stateMachineArn"]
    for name in ("s0", "s1"):
        ex = sfn.start_execution(stateMachineArn=arn, name=name, input=json.dumps({"on": "A", "n": name}))["executionArn"]
        task_started(sfn, ex)
    # An execution on A that makes a state transition every second until its machine is
    # deleted (two_servers_b deletes it through B).
    again = {"Type": "Choice", "Choices": [{"Variable": "$.done", "IsPresent": True, "Next": "Done"}], "Default": "Nap"}
    loop = {"Nap": {"Type": "Wait", "Seconds": 1, "Next": "Again"}, "Again": again, "Done": {"Type": "Succeed"}}
    arn = sfn.create_state_machine(
        name="SharedDeleted", definition=json.dumps({"StartAt": "Nap", "States": loop}), roleArn=ROLE
    )["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="loop")["executionArn"]
    types = lambda: [e["type"] for e in sfn.get_execution_history(executionArn=ex)["events"]]
    _helpers["wait_for"]("the loop to enter its Wait", lambda: "WaitStateEntered" in types())


SHARED_MAP_ACTIVITY = f"arn:aws:states:us-east-1:{ACCOUNT}:activity:SharedMapWork"


def two_servers_map_a(sfn):
    """A runs a Map Run (one child at a time); two_servers_map_b describes, updates and lists
    it through B."""
    sfn.create_activity(name="SharedMapWork")
    machine = map_machine(SHARED_MAP_ACTIVITY, "shared")
    arn = sfn.create_state_machine(name="SharedMap", definition=machine, roleArn=ROLE)["stateMachineArn"]
    ex = sfn.start_execution(stateMachineArn=arn, name="m1", input=json.dumps({"items": [1, 2, 3]}))["executionArn"]

    def started():
        return sfn.list_map_runs(executionArn=ex)["mapRuns"]

    run_arn = _helpers["wait_for"]("the Map Run to start", started)[0]["mapRunArn"]
    running_children(sfn, run_arn, 1)
    saved("shared-run", run_arn)


def two_servers_map_b(sfn):
    # B does not run it: its counts and children come from the run's rows in the store.
    run_arn = saved("shared-run")
    running_children(sfn, run_arn, 1)
    counts = sfn.describe_map_run(mapRunArn=run_arn)["itemCounts"]
    assert (counts["running"], counts["pending"], counts["total"]) == (1, 2, 3), counts
    # Updated through B, the run on A lets all three run (B signals A to read the limits: A
    # reads them on its own only every hour here).
    sfn.update_map_run(mapRunArn=run_arn, maxConcurrency=3)
    assert sfn.describe_map_run(mapRunArn=run_arn)["maxConcurrency"] == 3
    running_children(sfn, run_arn, 3)
    a = other_client()
    # Its limits changed at once through both servers, each update a different limit: all of
    # them land (the limits are one row; each update is written only over the row it read,
    # else read and made again: before, the last row written won and dropped the others).
    errors = []

    def update(client, **limits):
        try:
            client.update_map_run(mapRunArn=run_arn, **limits)
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(e))

    for i in range(8):
        threads = [
            threading.Thread(target=update, args=(a,), kwargs={"toleratedFailureCount": 10 + i}),
            threading.Thread(target=update, args=(sfn,), kwargs={"toleratedFailurePercentage": 10.0 + i}),
            threading.Thread(target=update, args=(clients_of(i, a, sfn),), kwargs={"maxConcurrency": 3 + i}),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        # B reads the row; A, which runs the Map Run, applies what B wrote when B's signal
        # reaches it.
        want = (10 + i, 10.0 + i, 3 + i)

        def limits(client):
            d = client.describe_map_run(mapRunArn=run_arn)
            return (d["toleratedFailureCount"], d["toleratedFailurePercentage"], d["maxConcurrency"])

        assert limits(sfn) == want, (i, limits(sfn))
        _helpers["wait_for"]("A to apply the limits", lambda: limits(a) == want or None)
    tasks = [sfn.get_activity_task(activityArn=SHARED_MAP_ACTIVITY, workerName="on-b") for _ in range(3)]
    # B's counts are A's as they are now (B asks A to write them and waits for its answer),
    # not as A last wrote them (every 0.4 s): once A counts the first child succeeded, B does.
    sfn.send_task_success(taskToken=tasks[0]["taskToken"], output=tasks[0]["input"])

    def counted_on_a():
        counts = a.describe_map_run(mapRunArn=run_arn)["executionCounts"]
        return counts if counts["succeeded"] == 1 else None

    on_a = _helpers["wait_for"]("A to count the first child", counted_on_a)
    # (A writes its progress row on its own only every hour here: WFC_MAP_RUN_SYNC_MS.)
    on_b = sfn.describe_map_run(mapRunArn=run_arn)["executionCounts"]
    assert on_b == on_a and (on_b["running"], on_b["succeeded"]) == (2, 1), (on_a, on_b)
    listed = sfn.list_executions(mapRunArn=run_arn, statusFilter="RUNNING")["executions"]
    assert len(listed) == 2, listed
    for t in tasks[1:]:
        sfn.send_task_success(taskToken=t["taskToken"], output=t["input"])
    d = finished(sfn, f"arn:aws:states:us-east-1:{ACCOUNT}:execution:SharedMap:m1")
    assert (d["status"], json.loads(d["output"])) == ("SUCCEEDED", [1, 2, 3]), d


def clients_of(i, a, b):
    """A for even rounds, B for odd ones."""
    return a if i % 2 == 0 else b


def other_client():
    """A client of server A (the suite's own client is B's)."""
    return boto3.client(
        "stepfunctions",
        endpoint_url=os.environ["WFC_SERVE_OTHER_ENDPOINT"],
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}),
    )


def two_servers_share_versions_and_aliases(sfn):
    """Versions and aliases changed at once through both servers of one store: each list is one
    stored document written whole, so a write that read it before another's landed must read it
    again (the store's conditional replace of its current version), or that change is lost."""
    a = other_client()
    arn = sfn.create_state_machine(name="Raced", definition=PASS, roleArn=ROLE)["stateMachineArn"]
    versions = []
    for i in range(8):
        body = json.loads(PASS)
        body["Comment"] = f"revision {i}"
        sfn.update_state_machine(stateMachineArn=arn, definition=json.dumps(body))
        versions.append(sfn.publish_state_machine_version(stateMachineArn=arn)["stateMachineVersionArn"])
    assert versions == [f"{arn}:{n}" for n in range(1, 9)], versions
    errors = []

    def run(work):
        try:
            work()
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(e))

    # Sixteen aliases created at once, half through each server: none may be lost.
    clients = [a, sfn]
    threads = [
        threading.Thread(
            target=run,
            args=(lambda i=i: clients[i % 2].create_state_machine_alias(
                name=f"a{i}", routingConfiguration=[{"stateMachineVersionArn": versions[i % 8], "weight": 100}]),),
        )
        for i in range(16)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    listed = sorted(x["stateMachineAliasArn"].rsplit(":", 1)[1] for x in sfn.list_state_machine_aliases(stateMachineArn=arn)["stateMachineAliases"])
    assert listed == sorted(f"a{i}" for i in range(16)), listed
    for i in range(16):
        sfn.delete_state_machine_alias(stateMachineAliasArn=f"{arn}:a{i}")
    # The eight versions deleted at once through both servers: none may come back.
    threads = [
        threading.Thread(target=run, args=(lambda v=v, i=i: clients[i % 2].delete_state_machine_version(stateMachineVersionArn=v),))
        for i, v in enumerate(versions)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    left = sfn.list_state_machine_versions(stateMachineArn=arn)["stateMachineVersions"]
    assert left == [], left
    sfn.delete_state_machine(stateMachineArn=arn)


def two_servers_b(sfn):
    a = other_client()
    tasks = [sfn.get_activity_task(activityArn=SHARED_ACTIVITY, workerName="on-b") for _ in range(2)]
    by_name = {json.loads(t["input"])["n"]: t["taskToken"] for t in tasks}
    assert sorted(by_name) == ["s0", "s1"], tasks
    # Longer than HeartbeatSeconds (2 s), with a heartbeat every 0.4 s: s0's through A (where
    # its Task waits), s1's through B (it reaches A through the store).
    for _ in range(8):
        a.send_task_heartbeat(taskToken=by_name["s0"])
        sfn.send_task_heartbeat(taskToken=by_name["s1"])
        time.sleep(0.4)
    # A worker long-polling B while A queues a task: B's poll is woken by A's NOTIFY (the
    # servers' fallback read of the store is an hour here, longer than the poll).
    polled = {}
    poller = threading.Thread(
        target=lambda: polled.update(sfn.get_activity_task(activityArn=SHARED_ACTIVITY, workerName="waiting-on-b"))
    )
    poller.start()
    time.sleep(0.3)  # let the poll start waiting (it passes either way if not)
    arn = f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:Shared"
    a.start_execution(stateMachineArn=arn, name="s2", input=json.dumps({"on": "A", "n": "s2"}))
    poller.join()
    assert json.loads(polled.get("input", "{}")).get("n") == "s2", polled
    by_name["s2"] = polled["taskToken"]
    for name, token in by_name.items():
        sfn.send_task_success(taskToken=token, output=json.dumps({"by": "B", "n": name}))
    for name in ("s0", "s1", "s2"):
        d = finished(sfn, f"arn:aws:states:us-east-1:{ACCOUNT}:execution:Shared:{name}")
        assert (d["status"], json.loads(d["output"])) == ("SUCCEEDED", {"by": "B", "n": name}), d
    # Deleted through B while A runs its execution: A learns of it through the store's signal
    # (its fallback read of the store is an hour here), and the execution fails at its next
    # transition on A; without the signal it would loop on.
    arn = f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:SharedDeleted"
    sfn.delete_state_machine(stateMachineArn=arn)
    d = finished(a, f"arn:aws:states:us-east-1:{ACCOUNT}:execution:SharedDeleted:loop")
    cause = "State machine SharedDeleted has been deleted."
    assert (d["status"], d["error"], d["cause"]) == ("FAILED", "States.Runtime", cause), d
    expect_error("StateMachineDoesNotExist", a.describe_state_machine, stateMachineArn=arn)


def main():
    sfn = client()
    if PHASE == "all":
        names = set(sfn.meta.service_model.operation_names)
        missing = [op for op in CLAIMED if op not in names]
        assert not missing, f"operations not in the service model: {missing}"
        test_state(sfn)
        tags(sfn)
        mock_config(sfn)
        versions(sfn)
        role_update(sfn)
        aliases(sfn)
        redrive(sfn)
        redrive_nested(sfn)
        live_history(sfn)
        map_runs(sfn)
        map_run_redrive(sfn)
        map_run_stopped_redrive(sfn)
        map_run_stopped_redrive(sfn, nested=True)
        map_run_tolerance_redrive(sfn)
        t0 = time.monotonic()
        map_run_exited_redrive(sfn)
        print(f"map_run_exited_redrive: {time.monotonic() - t0:.2f} s", flush=True)
        unchecked = [op for op in CLAIMED if op not in CHECKED]
        assert not unchecked, f"operations whose responses were not checked against the model: {unchecked}"
    elif PHASE == "before-restart":
        arn = sfn.create_state_machine(name="Durable", definition=PASS, roleArn=ROLE)["stateMachineArn"]
        sfn.tag_resource(resourceArn=arn, tags=[{"key": "kept", "value": "yes"}])
        act = sfn.create_activity(name="DurableWork", tags=[{"key": "kept", "value": "too"}])
        gone = sfn.create_activity(name="DeletedWork")["activityArn"]
        sfn.delete_activity(activityArn=gone)
        assert act["activityArn"].endswith(":activity:DurableWork"), act
        v = sfn.publish_state_machine_version(stateMachineArn=arn)["stateMachineVersionArn"]
        sfn.create_state_machine_alias(name="live", routingConfiguration=[{"stateMachineVersionArn": v, "weight": 100}])
        # A failed execution, redriven after the restart.
        arn = sfn.create_state_machine(name="RedriveLater", definition=REDRIVE, roleArn=ROLE)["stateMachineArn"]
        d = finished(sfn, sfn.start_execution(stateMachineArn=arn, name="later", input="{}")["executionArn"])
        assert d["status"] == "FAILED", d
        queues_before_restart(sfn)
        t0 = time.monotonic()
        map_run_before_restart(sfn)
        print(f"map_run_before_restart: {time.monotonic() - t0:.2f} s", flush=True)
        t0 = time.monotonic()
        map_activity_before_restart(sfn)
        gone_before_restart(sfn)
        print(f"map_activity_before_restart: {time.monotonic() - t0:.2f} s", flush=True)
    elif PHASE == "after-restart":
        listed = sfn.list_tags_for_resource(resourceArn=sm_arn("Durable"))["tags"]
        assert listed == [{"key": "kept", "value": "yes"}], listed
        # Activities are in the store: there after the restart, with their tags; a deleted one is not.
        act = f"arn:aws:states:us-east-1:{ACCOUNT}:activity:DurableWork"
        d = sfn.describe_activity(activityArn=act)
        assert d["name"] == "DurableWork", d
        assert sfn.list_tags_for_resource(resourceArn=act)["tags"] == [{"key": "kept", "value": "too"}]
        names = [a["name"] for a in sfn.list_activities()["activities"]]
        assert "DurableWork" in names and "DeletedWork" not in names, names
        expect_error("ActivityDoesNotExist", sfn.describe_activity, activityArn=act.replace("DurableWork", "DeletedWork"))
        # Created again: the same creation date (idempotent), as it was never forgotten.
        assert sfn.create_activity(name="DurableWork")["creationDate"] == d["creationDate"]
        d = sfn.describe_state_machine_alias(stateMachineAliasArn=sm_arn("Durable") + ":live")
        assert d["routingConfiguration"] == [{"stateMachineVersionArn": sm_arn("Durable") + ":1", "weight": 100}], d
        d = finished(sfn, sfn.start_execution(stateMachineArn=sm_arn("Durable") + ":live")["executionArn"])
        assert d["stateMachineAliasArn"] == sm_arn("Durable") + ":live", d
        # Redriven after the restart: the journal is in the store, so First does not run again.
        ex = f"arn:aws:states:us-east-1:{ACCOUNT}:execution:RedriveLater:later"
        assert ledger("later") == ["First", "Broken", "Flaky", "Flaky"], ledger("later")
        fix("later")
        sfn.redrive_execution(executionArn=ex)
        d = finished(sfn, ex)
        assert (d["status"], d["redriveCount"], json.loads(d["output"])) == ("SUCCEEDED", 1, {"redriveCount": 1}), d
        assert ledger("later") == ["First", "Broken", "Flaky", "Flaky", "Flaky"], ledger("later")
        queues_after_restart(sfn)
        t0 = time.monotonic()
        map_run_after_restart(sfn)
        print(f"map_run_after_restart: {time.monotonic() - t0:.2f} s", flush=True)
        t0 = time.monotonic()
        map_activity_after_restart(sfn)
        gone_after_restart(sfn)
        print(f"map_activity_after_restart: {time.monotonic() - t0:.2f} s", flush=True)
    elif PHASE == "two-servers-a":
        two_servers_a(sfn)
        t0 = time.monotonic()
        two_servers_map_a(sfn)
        print(f"two_servers_map_a: {time.monotonic() - t0:.2f} s", flush=True)
    elif PHASE == "two-servers-b":
        two_servers_b(sfn)
        two_servers_share_versions_and_aliases(sfn)
        t0 = time.monotonic()
        two_servers_map_b(sfn)
        print(f"two_servers_map_b: {time.monotonic() - t0:.2f} s", flush=True)
    print(json.dumps({"phase": PHASE, "checked": CHECKED}), flush=True)


main()

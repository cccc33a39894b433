//! The optimized Lambda integration, `arn:aws:states:::lambda:invoke`: the state's Parameters
//! (or Arguments) are the Lambda `Invoke` request, the handler is the function, and the task's
//! result is the `Invoke` response as Step Functions returns it (asl-anchor §15, recorded):
//! `{"ExecutedVersion", "Payload", "SdkHttpMetadata", "SdkResponseMetadata", "StatusCode"}`.
//!
//! A plain Lambda ARN (`arn:aws:lambda:...:function:name`) is not this integration: its handler
//! gets the effective input and its result is the task's result, unwrapped.

use serde_json::{Value, json};

use crate::Failure;

/// The resource of the request-response Lambda integration (the `.waitForTaskToken` form is a
/// callback, not covered here).
pub const INVOKE_RESOURCE: &str = "arn:aws:states:::lambda:invoke";

/// Whether `resource` is the request-response `lambda:invoke` integration.
pub fn is_invoke(resource: &str) -> bool {
    resource == INVOKE_RESOURCE
}

/// Whether `resource` is a bare Lambda function ARN (`arn:aws:lambda:<region>:<account>:function:
/// <name>[:<qualifier>]`): AWS records such a Task's attempts as `LambdaFunction*` events, not
/// `Task*` ones.
pub fn is_function_arn(resource: &str) -> bool {
    // Every Task visit asks, so without a splitter (a `split(':')` cost ~1,100 instructions a
    // visit, an eighth of a trivial Task's): the fields are `arn`, a partition, `lambda`, a
    // region, an account, `function`, then a non-empty name; the literal ones are compared in
    // place and only the others are scanned for their end.
    let bytes = resource.as_bytes();
    let field_end = |from: usize| bytes.get(from..)?.iter().position(|&b| b == b':').map(|at| from + at);
    let literal = |from: usize, text: &[u8]| bytes.get(from..from + text.len()) == Some(text);
    let checked = || -> Option<bool> {
        if !literal(0, b"arn:") {
            return Some(false);
        }
        let lambda = field_end(4)? + 1;
        if !literal(lambda, b"lambda:") {
            return Some(false);
        }
        let account = field_end(lambda + 7)? + 1;
        let function = field_end(account)? + 1;
        if !literal(function, b"function:") {
            return Some(false);
        }
        Some(bytes.get(function + 9).is_some_and(|&first| first != b':'))
    };
    checked().unwrap_or(false)
}

/// [`is_function_arn`] as a `const fn`, which generated code evaluates when it is compiled
/// (`TaskCode::is_lambda_function`); the same answer (tested), by byte loops a `const fn` can
/// run, slower at run time than [`is_function_arn`]'s.
pub const fn is_function_arn_const(resource: &str) -> bool {
    let bytes = resource.as_bytes();
    if !literal_at(bytes, 0, b"arn:") {
        return false;
    }
    let Some(partition_end) = field_end(bytes, 4) else { return false };
    let lambda = partition_end + 1;
    if !literal_at(bytes, lambda, b"lambda:") {
        return false;
    }
    let Some(region_end) = field_end(bytes, lambda + 7) else { return false };
    let account = region_end + 1;
    let Some(account_end) = field_end(bytes, account) else { return false };
    let function = account_end + 1;
    if !literal_at(bytes, function, b"function:") {
        return false;
    }
    function + 9 < bytes.len() && bytes[function + 9] != b':'
}

/// Whether `text` appears in `bytes` at `at`.
const fn literal_at(bytes: &[u8], at: usize, text: &[u8]) -> bool {
    if at + text.len() > bytes.len() {
        return false;
    }
    let mut i = 0;
    while i < text.len() {
        if bytes[at + i] != text[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The index of the first `:` in `bytes` at or after `from`.
const fn field_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < bytes.len() {
        if bytes[i] == b':' {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// What a Task's handler returns for a mocked service response: Step Functions Local's
/// MockConfigFile `Return` (and `wfc serve`'s `--mock-config`) is the service call's whole
/// response, so for Lambda it is the `Invoke` response (`{"StatusCode": 200, "Payload": ...}`),
/// for `arn:aws:states:::lambda:invoke` and for a function ARN alike, as Step Functions Local
/// reads it. A handler stands for the function, though: the runtime builds the `Invoke` response
/// around a `lambda:invoke` handler's result ([`response`]) and hands a function ARN's result on
/// as the Task's result (Step Functions' legacy Lambda integration keeps only the `Payload`).
/// So for both the handler gives the response's `Payload`; every other resource gets the
/// response itself.
///
/// The rest of a Lambda response is carried as Step Functions carries a real one:
/// - `FunctionError` (Lambda's word that the function failed) fails the Task: the error is the
///   `Payload`'s `errorType` (`Lambda.Unknown` without one) and the cause the `Payload`'s text,
///   as a real function error under `--lambda-endpoint` (Step Functions Local's emulations read
///   a mocked `FunctionError` the same way);
/// - for `lambda:invoke`, a `StatusCode` other than 200 and the other `Invoke` fields given
///   (`ExecutedVersion`, `LogResult`, ...) are the Task result's, over wfc's own
///   ([`MOCKED_INVOKE_RESPONSE`] carries them to [`response`]).
///
/// A Lambda response without a `Payload` (and without `FunctionError`) is refused
/// (`States.Runtime`, saying what is missing) rather than taken for the function's result, which
/// would wrap it twice.
///
/// Every engine answers MockConfigFile `Return`s through this one function: `wfc run`,
/// `wfc worker`, `wfc test` and `wfc serve`.
pub fn mocked_response_result(resource: &str, response: Value) -> Result<Value, Failure> {
    if !is_invoke(resource) && !is_function_arn(resource) {
        return Ok(response);
    }
    let fields = match response {
        Value::Object(fields) if fields.contains_key("Payload") || has_function_error(&fields) => fields,
        other => {
            return Err(Failure::runtime(format!(
                "a mocked response of the Lambda resource '{resource}' is the Lambda Invoke response, \
                 like {{\"StatusCode\": 200, \"Payload\": <the function's result>}}; this one has no \"Payload\": {other}"
            )));
        }
    };
    if has_function_error(&fields) {
        return Err(function_error(fields.get("Payload").unwrap_or(&Value::Null)));
    }
    // Only Payload and a StatusCode of 200: what the runtime builds anyway.
    let plain = fields.iter().all(|(k, v)| k == "Payload" || (k == "StatusCode" && v == &json!(200)));
    if is_function_arn(resource) || plain {
        let mut fields = fields;
        return Ok(fields.remove("Payload").unwrap_or(Value::Null));
    }
    Ok(json!({ MOCKED_INVOKE_RESPONSE: Value::Object(fields) }))
}

/// The one member of a mocked `lambda:invoke` handler result that carries a mocked `Invoke`
/// response with more than a `Payload` ([`mocked_response_result`]): [`response`] builds the
/// Task's result from it. A handler result is journaled as it is, so a replayed attempt gives
/// the same Task result; no function's own result is read this way unless it is exactly this
/// one-member object.
pub const MOCKED_INVOKE_RESPONSE: &str = "$wfc.mockedInvokeResponse";

fn has_function_error(fields: &serde_json::Map<String, Value>) -> bool {
    fields.get("FunctionError").is_some_and(|e| !e.is_null())
}

/// The failure of a function that failed (`FunctionError`): named by the payload's `errorType`
/// (`Lambda.Unknown` without one), the payload's text as the cause, as Step Functions records it.
/// For a mocked response and for a real `Invoke` answer (wfc's `--lambda-endpoint` tasks) alike.
pub fn function_error(payload: &Value) -> Failure {
    // A payload may be the JSON document as text (the wire form).
    let parsed = match payload {
        Value::String(text) => serde_json::from_str::<Value>(text).ok(),
        other => Some(other.clone()),
    };
    let error = parsed
        .as_ref()
        .and_then(|v| v.get("errorType"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .unwrap_or("Lambda.Unknown")
        .to_owned();
    let cause = match payload {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    Failure::new(error, cause)
}

/// An `Invoke` request as Step Functions sends it to Lambda.
#[derive(Debug, Clone, PartialEq)]
pub struct Invoke {
    /// The function the request names (a name, a partial or a full ARN, maybe qualified).
    pub function_name: String,
    /// The event the function receives, or the failure Lambda answers instead of calling it.
    pub event: Result<Value, Failure>,
    /// `LogType: "Tail"`: the response carries `LogResult` (the base64 tail of the function's log).
    pub log_tail: bool,
}

/// The `Invoke` request in a task's Parameters (or Arguments). A request without `FunctionName`
/// is refused before the call, as the Lambda API refuses it (`States.Runtime`).
///
/// What the function receives is the `Payload` as the request body, as AWS sends it (recorded):
/// - absent or `null`: `{}` (a function echoing its event returns `{}`);
/// - a string: its text **is** the JSON body, so `"0.0"` arrives as the number `0.0` and
///   `"\"HelloWorld\""` as the string `"HelloWorld"`. Text that is not JSON is refused by Lambda:
///   the task fails with `Lambda.InvalidRequestContentException` (wording not recorded on AWS);
/// - anything else: itself.
pub fn request(request: &Value) -> Result<Invoke, Failure> {
    let Some(fields) = request.as_object() else {
        return Err(Failure::runtime(format!(
            "The Parameters of a '{INVOKE_RESOURCE}' task must be an object with 'FunctionName', got {request}"
        )));
    };
    let function_name = match fields.get("FunctionName") {
        Some(Value::String(name)) => name.clone(),
        _ => {
            return Err(Failure::runtime(format!(
                "The Parameters of a '{INVOKE_RESOURCE}' task must have a string field 'FunctionName'"
            )));
        }
    };
    let event = match fields.get("Payload") {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::String(text)) => serde_json::from_str::<Value>(text).map_err(|e| {
            Failure::new(
                "Lambda.InvalidRequestContentException",
                format!("Could not parse request body into json: {e} (Service: Lambda, Status Code: 400)"),
            )
        }),
        Some(other) => Ok(other.clone()),
    };
    let log_tail = fields.get("LogType").and_then(Value::as_str) == Some("Tail");
    Ok(Invoke { function_name, event, log_tail })
}

/// The request id every local call reports: fixed, so runs stay reproducible.
const REQUEST_ID: &str = "00000000-0000-0000-0000-000000000000";

/// The `Invoke` response Step Functions hands on, around the function's return value, with the
/// headers AWS's wrapper records: `Content-Length` is the length of the body as a Python Lambda
/// serializes the value (`json.dumps`: `", "` and `": "` separators, non-ASCII escaped; matches
/// every recorded length), `Date` is `now` in HTTP form, `X-Amzn-Trace-Id` a trace header minted
/// from `now`. There is no HTTP call locally, so the rest is fixed: version `$LATEST`, status
/// 200, one request id. With `LogType: Tail`, `LogResult` (and the `X-Amz-Log-Result` header)
/// holds the base64 of the log lines the Lambda runtime writes for the call.
///
/// A mocked Invoke response ([`MOCKED_INVOKE_RESPONSE`]) gives its own fields over these: its
/// `Payload` is the function's result, its `StatusCode` the status (the HTTP metadata's too).
pub fn response(function_result: Value, invoke: &Invoke, now: jiff::Timestamp) -> Value {
    let (function_result, mocked) = match function_result {
        Value::Object(mut one) if one.len() == 1 => match one.remove(MOCKED_INVOKE_RESPONSE) {
            Some(Value::Object(mut mocked)) => (mocked.remove("Payload").unwrap_or(Value::Null), Some(mocked)),
            // Any other one-member object is a function's own result.
            Some(other) => (json!({ MOCKED_INVOKE_RESPONSE: other }), None),
            None => (Value::Object(one), None),
        },
        other => (other, None),
    };
    let mut out = built_response(function_result, invoke, now);
    for (field, value) in mocked.into_iter().flatten() {
        if field == "StatusCode" {
            out["SdkHttpMetadata"]["HttpStatusCode"] = value.clone();
        }
        out[field.as_str()] = value;
    }
    out
}

fn built_response(function_result: Value, invoke: &Invoke, now: jiff::Timestamp) -> Value {
    let length = python_json_len(&function_result).to_string();
    let date = now.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let trace = format!("Root=1-{:08x}-000000000000000000000000;Sampled=0", now.as_second());
    let mut all = json!({
        "X-Amz-Executed-Version": ["$LATEST"],
        "x-amzn-Remapped-Content-Length": ["0"],
        "Connection": ["keep-alive"],
        "x-amzn-RequestId": [REQUEST_ID],
        "Content-Length": [length],
        "Date": [date],
        "X-Amzn-Trace-Id": [trace],
        "Content-Type": ["application/json"],
    });
    let mut headers = json!({
        "Connection": "keep-alive",
        "Content-Length": length,
        "Content-Type": "application/json",
        "Date": date,
        "X-Amz-Executed-Version": "$LATEST",
        "x-amzn-Remapped-Content-Length": "0",
        "x-amzn-RequestId": REQUEST_ID,
        "X-Amzn-Trace-Id": trace,
    });
    let log = invoke.log_tail.then(log_tail);
    if let Some(log) = &log {
        all["X-Amz-Log-Result"] = json!([log]);
        headers["X-Amz-Log-Result"] = json!(log);
    }
    let mut out = json!({
        "ExecutedVersion": "$LATEST",
        "Payload": function_result,
        "SdkHttpMetadata": {
            "AllHttpHeaders": all,
            "HttpHeaders": headers,
            "HttpStatusCode": 200,
        },
        "SdkResponseMetadata": { "RequestId": REQUEST_ID },
        "StatusCode": 200,
    });
    if let Some(log) = log {
        out["LogResult"] = json!(log);
    }
    out
}

/// The base64 log tail of one call: the lines the Lambda runtime itself writes (a local handler
/// writes nothing to a Lambda log).
fn log_tail() -> String {
    use base64::Engine as _;
    let text = format!(
        "START RequestId: {REQUEST_ID} Version: $LATEST\nEND RequestId: {REQUEST_ID}\nREPORT RequestId: {REQUEST_ID}\tDuration: 1.00 ms\tBilled Duration: 1 ms\tMemory Size: 128 MB\tMax Memory Used: 1 MB\t\n"
    );
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// The length in bytes of `v` as Python's `json.dumps(v)` writes it (what a Python Lambda
/// returns as its body): `", "` and `": "` separators, non-ASCII characters as `\uXXXX` escapes.
pub fn python_json_len(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(n) => python_number(n).len(),
        Value::String(s) => python_string_len(s),
        Value::Array(items) => 2 + items.iter().map(python_json_len).sum::<usize>() + 2 * items.len().saturating_sub(1),
        Value::Object(map) => {
            2 + map.iter().map(|(k, v)| python_string_len(k) + 2 + python_json_len(v)).sum::<usize>()
                + 2 * map.len().saturating_sub(1)
        }
    }
}

/// A number as Python prints it: integers as they are, floats by `repr` (`0.0`, `1e+20`).
fn python_number(n: &serde_json::Number) -> String {
    if n.is_f64() {
        let f = n.as_f64().unwrap_or_default();
        let text = format!("{f:?}");
        // Rust writes `1e20`, Python `1e+20`.
        match text.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => text,
        }
    } else {
        n.to_string()
    }
}

/// A string's length as a JSON string with Python's escapes (`ensure_ascii`).
fn python_string_len(s: &str) -> usize {
    2 + s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c if c.is_ascii() => 1,
            c if (c as u32) > 0xffff => 12,
            _ => 6,
        })
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(request: Value) -> Result<Value, Failure> {
        super::request(&request).unwrap().event
    }

    #[test]
    fn function_arns() {
        assert!(is_function_arn("arn:aws:lambda:us-east-1:111111111111:function:f"));
        assert!(is_function_arn("arn:aws:lambda:us-east-1:111111111111:function:f:live"));
        assert!(!is_function_arn(INVOKE_RESOURCE));
        assert!(!is_function_arn("arn:aws:states:::lambda:invoke.waitForTaskToken"));
        assert!(!is_function_arn("arn:aws:lambda:us-east-1:111111111111:function:"));
        assert!(!is_function_arn("arn:aws:lambda:us-east-1:111111111111:function"));
        assert!(!is_function_arn("arn:aws:lambda:us-east-1:111111111111:layer:f"));
        assert!(!is_function_arn("work"));
        assert!(!is_function_arn("arn:aws:lambda:us-east-1:111111111111:function::live"));
        assert!(!is_function_arn("arnx:aws:lambda:us-east-1:111111111111:function:f"));
    }

    /// The `const fn` generated code evaluates answers as the run-time one, on the cases above
    /// and on every prefix of them (cut fields, missing colons).
    #[test]
    fn the_const_function_arn_check_agrees() {
        const _: () = assert!(is_function_arn_const("arn:aws:lambda:us-east-1:1:function:f"));
        let cases = [
            "arn:aws:lambda:us-east-1:111111111111:function:f",
            "arn:aws:lambda:us-east-1:111111111111:function:f:live",
            INVOKE_RESOURCE,
            "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "arn:aws:lambda:us-east-1:111111111111:layer:f",
            "arn:aws:lambda:us-east-1:111111111111:function::live",
            "arnx:aws:lambda:us-east-1:111111111111:function:f",
            "arn:aws-cn:lambda:cn-north-1:1:function:name-with-dash",
            "https://example.com/api/do_it",
            "",
        ];
        for case in cases {
            for end in 0..=case.len() {
                let text = &case[..end];
                assert_eq!(is_function_arn_const(text), is_function_arn(text), "{text:?}");
            }
        }
    }

    #[test]
    fn mocked_lambda_responses_give_their_payload() {
        let response = json!({"StatusCode": 200, "Payload": {"v": 1}});
        assert_eq!(mocked_response_result(INVOKE_RESOURCE, response.clone()), Ok(json!({"v": 1})));
        let function = "arn:aws:lambda:us-east-1:123456789012:function:f";
        assert_eq!(mocked_response_result(function, response.clone()), Ok(json!({"v": 1})));
        // Any other service's response is the Task's result as it is.
        assert_eq!(mocked_response_result("arn:aws:states:::sqs:sendMessage", response.clone()), Ok(response));
        let missing = mocked_response_result(INVOKE_RESOURCE, json!({"v": 1})).unwrap_err();
        assert_eq!(missing.error, "States.Runtime");
        assert!(missing.cause.contains("has no \"Payload\": {\"v\":1}"), "{}", missing.cause);
    }

    #[test]
    fn mocked_function_errors_fail_and_other_invoke_fields_are_carried() {
        let function = "arn:aws:lambda:us-east-1:123456789012:function:f";
        for resource in [INVOKE_RESOURCE, function] {
            let unhandled = json!({"StatusCode": 200, "FunctionError": "Unhandled",
                "Payload": {"errorType": "ValueError", "errorMessage": "bad"}});
            let f = mocked_response_result(resource, unhandled).unwrap_err();
            assert_eq!(
                (f.error.as_str(), f.cause.as_str()),
                ("ValueError", r#"{"errorType":"ValueError","errorMessage":"bad"}"#)
            );
            // Without an errorType (or a Payload) Lambda's error is unknown.
            let f =
                mocked_response_result(resource, json!({"FunctionError": "Unhandled", "Payload": "Process exited"}))
                    .unwrap_err();
            assert_eq!((f.error.as_str(), f.cause.as_str()), ("Lambda.Unknown", "Process exited"));
            let f = mocked_response_result(resource, json!({"FunctionError": "Unhandled"})).unwrap_err();
            assert_eq!((f.error.as_str(), f.cause.as_str()), ("Lambda.Unknown", ""));
        }
        // A function ARN's result is the Payload whatever the status.
        assert_eq!(mocked_response_result(function, json!({"StatusCode": 202, "Payload": 1})), Ok(json!(1)));
        // lambda:invoke: the Task's result is wfc's Invoke response with the mocked fields over it.
        let mocked = json!({"StatusCode": 202, "Payload": "", "ExecutedVersion": "7"});
        let carried = mocked_response_result(INVOKE_RESOURCE, mocked).unwrap();
        let invoke = Invoke { function_name: "f".into(), event: Ok(json!({})), log_tail: false };
        let now: jiff::Timestamp = "2024-03-01T10:20:30Z".parse().unwrap();
        let r = response(carried, &invoke, now);
        assert_eq!((&r["StatusCode"], &r["Payload"], &r["ExecutedVersion"]), (&json!(202), &json!(""), &json!("7")));
        assert_eq!(r["SdkHttpMetadata"]["HttpStatusCode"], json!(202));
        // A function's own one-member result of that name that is not an object stays its own.
        let own = json!({ MOCKED_INVOKE_RESPONSE: 1 });
        assert_eq!(response(own.clone(), &invoke, now)["Payload"], own);
    }

    #[test]
    fn payload_as_the_request_body() {
        assert_eq!(event(json!({"FunctionName": "f", "Payload": {"a": 1}})), Ok(json!({"a": 1})));
        assert_eq!(event(json!({"FunctionName": "f"})), Ok(json!({})));
        assert_eq!(event(json!({"FunctionName": "f", "Payload": null})), Ok(json!({})));
        // A string is the body's text, as AWS sends it (recorded: "0.0" arrives as 0.0).
        assert_eq!(event(json!({"FunctionName": "f", "Payload": "0.0"})), Ok(json!(0.0)));
        assert_eq!(event(json!({"FunctionName": "f", "Payload": "\"HelloWorld\""})), Ok(json!("HelloWorld")));
        assert_eq!(event(json!({"FunctionName": "f", "Payload": "[]"})), Ok(json!([])));
        let bad = event(json!({"FunctionName": "f", "Payload": "HelloWorld"})).unwrap_err();
        assert_eq!(bad.error, "Lambda.InvalidRequestContentException");
        assert_eq!(super::request(&json!({"Payload": 1})).unwrap_err().error, "States.Runtime");
    }

    #[test]
    fn response_headers_as_aws_records_them() {
        let now: jiff::Timestamp = "2024-03-01T10:20:30Z".parse().unwrap();
        let plain = Invoke { function_name: "f".into(), event: Ok(json!({})), log_tail: false };
        let r = response(json!({"theAnswer": 42, "s": "x"}), &plain, now);
        assert_eq!(r["Payload"], json!({"theAnswer": 42, "s": "x"}));
        assert_eq!(r["StatusCode"], json!(200));
        assert_eq!(r["ExecutedVersion"], json!("$LATEST"));
        let headers = &r["SdkHttpMetadata"]["HttpHeaders"];
        // {"theAnswer": 42, "s": "x"} as json.dumps writes it: 27 bytes.
        assert_eq!(headers["Content-Length"], json!("27"));
        assert_eq!(r["SdkHttpMetadata"]["AllHttpHeaders"]["Content-Length"], json!(["27"]));
        assert_eq!(headers["Date"], json!("Fri, 01 Mar 2024 10:20:30 GMT"));
        assert!(headers["X-Amzn-Trace-Id"].as_str().unwrap().starts_with("Root=1-65e1abee-"));
        assert!(r.get("LogResult").is_none());
        let tail = Invoke { function_name: "f".into(), event: Ok(json!({})), log_tail: true };
        let r = response(json!("HelloWorld"), &tail, now);
        assert_eq!(r["SdkHttpMetadata"]["HttpHeaders"]["Content-Length"], json!("12"));
        let log = r["LogResult"].as_str().unwrap();
        assert_eq!(r["SdkHttpMetadata"]["HttpHeaders"]["X-Amz-Log-Result"], json!(log));
        use base64::Engine as _;
        let text = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(log).unwrap()).unwrap();
        assert!(text.starts_with("START RequestId: "), "{text}");
    }

    #[test]
    fn python_lengths() {
        // The recorded Content-Lengths: 0.0 → 3, 0 → 1, [] → 2, {} → 2, "HelloWorld" → 12.
        for (v, n) in [(json!(0.0), 3), (json!(0), 1), (json!([]), 2), (json!({}), 2), (json!("HelloWorld"), 12)] {
            assert_eq!(python_json_len(&v), n, "{v}");
        }
        assert_eq!(python_json_len(&json!({"status": "completed"})), 23);
        assert_eq!(python_json_len(&json!({"input_value": "string literal", "input_values": [1, 2, 3]})), 60);
        assert_eq!(python_json_len(&json!(["é", "\n", 1e20, null, true])), 35);
    }
}

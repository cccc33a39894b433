//! Invalid definitions: each case asserts the diagnostic code and the 1-based line:column it
//! points at. Cases are small multi-line documents so positions are meaningful.

use wfc_core::Source;

/// (what, path, text, code, line, column)
type Case = (&'static str, &'static str, &'static str, &'static str, usize, usize);

const CASES: &[Case] = &[
    // ---- syntax ----
    ("trailing comma", "t.json", "{\n  \"StartAt\": \"A\",\n}", "WFC0101", 2, 17),
    ("comment in JSON", "t.json", "{\n  // hi\n  \"StartAt\": \"A\"\n}", "WFC0101", 2, 3),
    ("empty document", "t.json", "", "WFC0101", 1, 1),
    ("duplicate key", "t.json", "{\n  \"StartAt\": \"A\",\n  \"StartAt\": \"B\"\n}", "WFC0105", 3, 3),
    ("YAML syntax error", "t.yaml", "StartAt: A\nStates: [\n", "WFC0102", 3, 1),
    ("YAML non-string key", "t.yaml", "StartAt: A\nStates:\n  1:\n    Type: Succeed\n", "WFC0106", 3, 3),
    ("YAML duplicate key", "t.yaml", "StartAt: A\nStartAt: B\n", "WFC0105", 2, 1),
    // ---- structure ----
    ("top level not an object", "t.json", "[1, 2]", "WFC0201", 1, 1),
    ("missing StartAt", "t.json", "{\n  \"States\": {\"A\": {\"Type\": \"Succeed\"}}\n}", "WFC0202", 1, 1),
    ("missing States", "t.json", "{\n  \"StartAt\": \"A\"\n}", "WFC0202", 1, 1),
    (
        "unknown top-level field",
        "t.json",
        "{\n  \"StartAt\": \"A\",\n  \"Stats\": 1,\n  \"States\": {\"A\": {\"Type\": \"Succeed\"}}\n}",
        "WFC0203",
        3,
        3,
    ),
    (
        "unknown state field",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\n    \"Type\": \"Pass\",\n    \"Resul\": 1,\n    \"End\": true}}}",
        "WFC0203",
        4,
        5,
    ),
    ("missing Type", "t.json", "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"End\": true}}}", "WFC0202", 2, 3),
    (
        "unknown Type",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Tsak\", \"End\": true}}}",
        "WFC0204",
        2,
        17,
    ),
    (
        "distributed Map state",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Map\", \"ItemProcessor\": {\"ProcessorConfig\": {\"Mode\": \"DISTRIBUTED\"}, \"StartAt\": \"B\", \"States\": {\"B\": {\"Type\": \"Succeed\"}}}, \"End\": true}}}",
        "WFC0222",
        2,
        70,
    ),
    (
        "unknown QueryLanguage",
        "t.json",
        "{\"QueryLanguage\": \"JSONatta\",\n \"StartAt\": \"A\", \"States\": {\"A\": {\"Type\": \"Succeed\"}}}",
        "WFC0904",
        1,
        19,
    ),
    (
        "bad Version",
        "t.json",
        "{\"Version\": \"2.0\",\n \"StartAt\": \"A\", \"States\": {\"A\": {\"Type\": \"Succeed\"}}}",
        "WFC0207",
        1,
        13,
    ),
    (
        "machine TimeoutSeconds zero",
        "t.json",
        "{\"TimeoutSeconds\": 0,\n \"StartAt\": \"A\", \"States\": {\"A\": {\"Type\": \"Succeed\"}}}",
        "WFC0208",
        1,
        20,
    ),
    (
        "Parallel without branches",
        "t.json",
        "{\"StartAt\": \"P\", \"States\": {\n  \"P\": {\"Type\": \"Parallel\", \"Branches\": [], \"End\": true}}}",
        "WFC0209",
        2,
        41,
    ),
    (
        "Fail Error and ErrorPath",
        "t.json",
        "{\"StartAt\": \"F\", \"States\": {\n  \"F\": {\"Type\": \"Fail\", \"Error\": \"E\",\n    \"ErrorPath\": \"$.e\"}}}",
        "WFC0211",
        3,
        5,
    ),
    (
        "Comment not a string",
        "t.json",
        "{\"Comment\": 5,\n \"StartAt\": \"A\", \"States\": {\"A\": {\"Type\": \"Succeed\"}}}",
        "WFC0201",
        1,
        13,
    ),
    (
        "Pass with Resource",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Resource\": \"x\", \"End\": true}}}",
        "WFC0203",
        2,
        25,
    ),
    (
        "Assign on a Succeed state",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Succeed\", \"Assign\": {}}}}",
        "WFC0908",
        2,
        28,
    ),
    // ---- graph ----
    (
        "unknown Next",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Next\": \"Bee\"},\n  \"B\": {\"Type\": \"Succeed\"}}}",
        "WFC0301",
        2,
        33,
    ),
    (
        "unknown StartAt",
        "t.json",
        "{\"StartAt\": \"Nope\",\n \"States\": {\"A\": {\"Type\": \"Succeed\"}}}",
        "WFC0301",
        1,
        13,
    ),
    (
        "unknown Default",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Choices\": [{\"Variable\": \"$.x\", \"IsNull\": true, \"Next\": \"D\"}],\n    \"Default\": \"E\"},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0301",
        3,
        16,
    ),
    (
        "Next into a branch",
        "t.json",
        "{\"StartAt\": \"P\", \"States\": {\n  \"P\": {\"Type\": \"Parallel\", \"Branches\": [{\"StartAt\": \"In\", \"States\": {\"In\": {\"Type\": \"Succeed\"}}}], \"Next\": \"In\"}}}",
        "WFC0302",
        2,
        109,
    ),
    (
        "Next out of a branch",
        "t.json",
        "{\"StartAt\": \"P\", \"States\": {\n  \"P\": {\"Type\": \"Parallel\", \"End\": true, \"Branches\": [{\"StartAt\": \"In\", \"States\": {\n    \"In\": {\"Type\": \"Pass\", \"Next\": \"P\"}}}]}}}",
        "WFC0302",
        3,
        36,
    ),
    (
        "duplicate state name across branches",
        "t.json",
        "{\"StartAt\": \"P\", \"States\": {\n  \"P\": {\"Type\": \"Parallel\", \"End\": true, \"Branches\": [{\"StartAt\": \"P\", \"States\": {\n    \"P\": {\"Type\": \"Succeed\"}}}]}}}",
        "WFC0303",
        3,
        5,
    ),
    (
        "state name too long",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Next\": \"B\"},\n  \"BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\": {\"Type\": \"Succeed\"}}}",
        "WFC0304",
        3,
        3,
    ),
    (
        "neither Next nor End",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\"}}}",
        "WFC0305",
        2,
        3,
    ),
    (
        "both Next and End",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Next\": \"B\",\n    \"End\": true},\n  \"B\": {\"Type\": \"Succeed\"}}}",
        "WFC0306",
        3,
        5,
    ),
    (
        "End false",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"End\": false}}}",
        "WFC0307",
        2,
        32,
    ),
    (
        "Succeed with Next",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Succeed\", \"Next\": \"A\"}}}",
        "WFC0308",
        2,
        28,
    ),
    (
        "Choice with End",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"End\": true, \"Choices\": [{\"Variable\": \"$.x\", \"IsNull\": true, \"Next\": \"D\"}], \"Default\": \"D\"},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0308",
        2,
        27,
    ),
    (
        "unreachable state",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Succeed\"},\n  \"Orphan\": {\"Type\": \"Succeed\"}}}",
        "WFC0309",
        3,
        3,
    ),
    ("empty States", "t.json", "{\"StartAt\": \"A\",\n \"States\": {}}", "WFC0310", 2, 12),
    (
        "no terminal state",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Next\": \"B\"},\n  \"B\": {\"Type\": \"Pass\", \"Next\": \"A\"}}}",
        "WFC0311",
        1,
        28,
    ),
    // ---- paths ----
    (
        "bad InputPath",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"InputPath\": \"input\", \"End\": true}}}",
        "WFC0401",
        2,
        39,
    ),
    (
        "bad path in template",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Parameters\": {\"x.$\": \"$.a..\"}, \"End\": true}}}",
        "WFC0401",
        2,
        51,
    ),
    (
        "ResultPath into the context object",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"ResultPath\": \"$$.x\", \"End\": true}}}",
        "WFC0402",
        2,
        40,
    ),
    (
        "intrinsic function where a path is required",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"InputPath\": \"States.Format('{}', $.a)\", \"End\": true}}}",
        "WFC0403",
        2,
        38,
    ),
    (
        "template .$ value not a string",
        "t.json",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Parameters\": {\"x.$\": 5}, \"End\": true}}}",
        "WFC0404",
        2,
        47,
    ),
    (
        "null SecondsPath",
        "t.json",
        "{\"StartAt\": \"W\", \"States\": {\n  \"W\": {\"Type\": \"Wait\", \"SecondsPath\": null, \"End\": true}}}",
        "WFC0405",
        2,
        40,
    ),
    // ---- Choice ----
    (
        "empty Choices",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Choices\": [], \"Default\": \"D\"},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0501",
        2,
        38,
    ),
    (
        "rule without Next",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"Variable\": \"$.x\", \"IsNull\": true}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0502",
        3,
        5,
    ),
    (
        "nested rule with Next",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"Not\": {\"Variable\": \"$.x\", \"IsNull\": true, \"Next\": \"D\"}, \"Next\": \"D\"}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0503",
        3,
        49,
    ),
    (
        "rule without operator",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"Variable\": \"$.x\", \"Next\": \"D\"}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0504",
        3,
        5,
    ),
    (
        "two operators",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"Variable\": \"$.x\", \"IsNull\": true, \"IsString\": true, \"Next\": \"D\"}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0505",
        3,
        41,
    ),
    (
        "empty And",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"And\": [], \"Next\": \"D\"}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0506",
        3,
        13,
    ),
    (
        "Not with an array",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"Not\": [{\"Variable\": \"$.x\", \"IsNull\": true}], \"Next\": \"D\"}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0507",
        3,
        13,
    ),
    (
        "NumericEquals with a string",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"Variable\": \"$.x\", \"NumericEquals\": \"5\", \"Next\": \"D\"}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0508",
        3,
        42,
    ),
    (
        "IsNull with a string",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"Variable\": \"$.x\", \"IsNull\": \"true\", \"Next\": \"D\"}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0508",
        3,
        35,
    ),
    (
        "StringEqualsPath with a number",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"Variable\": \"$.x\", \"StringEqualsPath\": 1, \"Next\": \"D\"}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0508",
        3,
        45,
    ),
    (
        "Variable missing",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"StringEquals\": \"a\", \"Next\": \"D\"}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0509",
        3,
        6,
    ),
    (
        "invalid Variable path",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"Variable\": \"x\", \"IsNull\": true, \"Next\": \"D\"}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0401",
        3,
        19,
    ),
    (
        "bad timestamp literal in Choice",
        "t.json",
        "{\"StartAt\": \"C\", \"States\": {\n  \"C\": {\"Type\": \"Choice\", \"Default\": \"D\", \"Choices\": [\n    {\"Variable\": \"$.t\", \"TimestampEquals\": \"2016-03-14t01:59:00Z\", \"Next\": \"D\"}]},\n  \"D\": {\"Type\": \"Succeed\"}}}",
        "WFC0702",
        3,
        44,
    ),
    // ---- Retry / Catch ----
    (
        "empty ErrorEquals",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"End\": true,\n    \"Retry\": [{\"ErrorEquals\": []}]}}}",
        "WFC0601",
        3,
        31,
    ),
    (
        "States.ALL not alone",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"End\": true,\n    \"Retry\": [{\"ErrorEquals\": [\"E\", \"States.ALL\"]}]}}}",
        "WFC0602",
        3,
        37,
    ),
    (
        "States.ALL not last",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"End\": true,\n    \"Retry\": [{\"ErrorEquals\": [\"States.ALL\"]}, {\"ErrorEquals\": [\"E\"]}]}}}",
        "WFC0603",
        3,
        32,
    ),
    (
        "unknown States. error",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"End\": true,\n    \"Retry\": [{\"ErrorEquals\": [\"States.Timout\"]}]}}}",
        "WFC0604",
        3,
        32,
    ),
    (
        "IntervalSeconds zero",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"End\": true,\n    \"Retry\": [{\"ErrorEquals\": [\"E\"], \"IntervalSeconds\": 0}]}}}",
        "WFC0605",
        3,
        57,
    ),
    (
        "MaxAttempts negative",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"End\": true,\n    \"Retry\": [{\"ErrorEquals\": [\"E\"], \"MaxAttempts\": -1}]}}}",
        "WFC0606",
        3,
        53,
    ),
    (
        "BackoffRate below one",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"End\": true,\n    \"Retry\": [{\"ErrorEquals\": [\"E\"], \"BackoffRate\": 0.5}]}}}",
        "WFC0607",
        3,
        53,
    ),
    (
        "MaxDelaySeconds zero",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"End\": true,\n    \"Retry\": [{\"ErrorEquals\": [\"E\"], \"MaxDelaySeconds\": 0}]}}}",
        "WFC0608",
        3,
        57,
    ),
    (
        "JitterStrategy lower case",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"End\": true,\n    \"Retry\": [{\"ErrorEquals\": [\"E\"], \"JitterStrategy\": \"full\"}]}}}",
        "WFC0609",
        3,
        56,
    ),
    (
        "Catch without Next",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"End\": true,\n    \"Catch\": [{\"ErrorEquals\": [\"E\"]}]}}}",
        "WFC0202",
        3,
        15,
    ),
    (
        "Catch Next unknown",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"End\": true,\n    \"Catch\": [{\"ErrorEquals\": [\"E\"], \"Next\": \"Recover\"}]}}}",
        "WFC0301",
        3,
        46,
    ),
    // ---- Wait ----
    (
        "Wait without duration",
        "t.json",
        "{\"StartAt\": \"W\", \"States\": {\n  \"W\": {\"Type\": \"Wait\", \"End\": true}}}",
        "WFC0701",
        2,
        3,
    ),
    (
        "Wait bad timestamp",
        "t.json",
        "{\"StartAt\": \"W\", \"States\": {\n  \"W\": {\"Type\": \"Wait\", \"Timestamp\": \"2016-03-14 01:59:00Z\", \"End\": true}}}",
        "WFC0702",
        2,
        38,
    ),
    (
        "Wait negative Seconds",
        "t.json",
        "{\"StartAt\": \"W\", \"States\": {\n  \"W\": {\"Type\": \"Wait\", \"Seconds\": -5, \"End\": true}}}",
        "WFC0703",
        2,
        36,
    ),
    (
        "Wait Seconds beyond AWS's bound of 2^31 - 1",
        "t.json",
        "{\"StartAt\": \"W\", \"States\": {\n  \"W\": {\"Type\": \"Wait\", \"Seconds\": 2147483648, \"End\": true}}}",
        "WFC0703",
        2,
        36,
    ),
    (
        "Wait fractional Seconds",
        "t.json",
        "{\"StartAt\": \"W\", \"States\": {\n  \"W\": {\"Type\": \"Wait\", \"Seconds\": 1.5, \"End\": true}}}",
        "WFC0703",
        2,
        36,
    ),
    (
        "Wait two durations",
        "t.json",
        "{\"StartAt\": \"W\", \"States\": {\n  \"W\": {\"Type\": \"Wait\", \"Seconds\": 5,\n    \"SecondsPath\": \"$.s\", \"End\": true}}}",
        "WFC0704",
        3,
        5,
    ),
    // ---- Task ----
    (
        "Task without Resource",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"End\": true}}}",
        "WFC0202",
        2,
        8,
    ),
    (
        "Task Resource not a string",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": 42, \"End\": true}}}",
        "WFC0201",
        2,
        37,
    ),
    (
        "Task empty Resource",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"\", \"End\": true}}}",
        "WFC0801",
        2,
        37,
    ),
    (
        "TimeoutSeconds zero",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"TimeoutSeconds\": 0, \"End\": true}}}",
        "WFC0802",
        2,
        60,
    ),
    (
        "HeartbeatSeconds not an integer",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"HeartbeatSeconds\": 2.5, \"End\": true}}}",
        "WFC0803",
        2,
        62,
    ),
    (
        "HeartbeatSeconds above TimeoutSeconds",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"TimeoutSeconds\": 10,\n    \"HeartbeatSeconds\": 10, \"End\": true}}}",
        "WFC0804",
        3,
        25,
    ),
    (
        "TimeoutSeconds and TimeoutSecondsPath",
        "t.json",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"TimeoutSeconds\": 10,\n    \"TimeoutSecondsPath\": \"$.t\", \"End\": true}}}",
        "WFC0805",
        3,
        5,
    ),
    // ---- YAML versions ----
    (
        "YAML unknown Next",
        "t.asl.yaml",
        "StartAt: A\nStates:\n  A:\n    Type: Pass\n    Next: Bee\n  B:\n    Type: Succeed\n",
        "WFC0301",
        5,
        11,
    ),
    ("YAML unknown field", "t.asl.yaml", "StartAt: A\nStates:\n  A:\n    Type: Pass\n    Ned: true\n", "WFC0203", 5, 5),
    (
        "YAML bad path",
        "t.asl.yml",
        "StartAt: A\nStates:\n  A:\n    Type: Pass\n    InputPath: $.a[\n    End: true\n",
        "WFC0401",
        5,
        19,
    ),
    (
        "YAML bad Seconds",
        "t.asl.yaml",
        "StartAt: W\nStates:\n  W:\n    Type: Wait\n    Seconds: -1\n    End: true\n",
        "WFC0703",
        5,
        14,
    ),
];

#[test]
fn each_invalid_definition_reports_its_code_at_its_position() {
    let mut failures = Vec::new();
    for (what, path, text, code, line, column) in CASES {
        match wfc_core::asl::load(Source { path, text }) {
            Ok(_) => failures.push(format!("{what}: loaded, expected {code}")),
            Err(d) => {
                let located = d.located();
                let hit = located.iter().find(|l| l.code == *code);
                match hit {
                    Some(l) if (l.line, l.column) == (*line, *column) => {}
                    Some(l) => failures.push(format!(
                        "{what}: {code} at {}:{}, expected {line}:{column}\n{}",
                        l.line,
                        l.column,
                        d.render(false)
                    )),
                    None => failures.push(format!("{what}: no {code}; got:\n{}", d.render(false))),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n\n{}", failures.len(), CASES.len(), failures.join("\n\n"));
}

#[test]
fn there_are_many_cases_with_distinct_codes() {
    assert!(CASES.len() >= 40);
    let codes: std::collections::BTreeSet<&str> = CASES.iter().map(|c| c.3).collect();
    assert!(codes.len() >= 50, "{} distinct codes", codes.len());
    for c in &codes {
        assert!(wfc_core::diagnostics::codes::title(c).is_some(), "{c} is not in the code table");
    }
}

/// Each `fixtures/asl/invalid/<name>.asl.{json,yaml}` has a `<name>.expected` listing every
/// diagnostic it must produce, one `CODE line:column` per line, in order.
#[test]
fn invalid_fixtures_produce_exactly_their_expected_diagnostics() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/asl/invalid");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("fixture dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if name.ends_with(".expected") {
            continue;
        }
        let stem = name.split('.').next().unwrap_or_default();
        let expected = std::fs::read_to_string(dir.join(format!("{stem}.expected"))).expect("expected file");
        let text = std::fs::read_to_string(&path).expect("fixture");
        let shown = format!("tests/fixtures/asl/invalid/{name}");
        let d =
            wfc_core::asl::load(Source { path: &shown, text: &text }).err().unwrap_or_else(|| panic!("{name} loaded"));
        let got: Vec<String> = d.located().iter().map(|l| format!("{} {}:{}", l.code, l.line, l.column)).collect();
        let want: Vec<&str> = expected.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(got, want, "{name}:\n{}", d.render(false));
        checked += 1;
    }
    assert!(checked >= 3);
}

//! The state graph: a workflow is a [`StateMachine`] of [`State`]s joined by transitions.
//!
//! Everything here is plain data with serde derives, validated before it is built: a value of
//! these types is a machine the compiler accepted. Transitions are indices into the enclosing
//! [`StateMachine::states`], so a dangling target cannot be represented. Optional ASL fields keep
//! their three ASL meanings apart: absent (the default `$`), `null`, and a path.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::jsonata::{JsonataExpr, JsonataTemplate};
use crate::jsonpath::{Path, ReferencePath};

/// Index of a state within its enclosing [`StateMachine::states`].
pub type StateId = usize;

/// A whole workflow: the top-level machine plus execution-wide settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workflow {
    /// The workflow's name (from the file name, or a front end's `name`/`id` field).
    pub name: String,
    /// Human description (ASL `Comment`, SW `description`).
    pub comment: Option<String>,
    /// Definition version (ASL `Version`).
    pub version: Option<String>,
    /// Execution-wide time limit; breaching it ends the execution TIMED_OUT with `States.Timeout`.
    pub timeout_seconds: Option<u64>,
    /// The top-level state machine.
    pub machine: StateMachine,
}

/// A set of states with a start state: the top level, one Parallel branch, or a Map's item
/// processor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateMachine {
    /// Index of the first state to run.
    pub start_at: StateId,
    /// The states, in definition order.
    pub states: Vec<State>,
}

impl StateMachine {
    /// The state named `name`, if this machine (not its branches) has one.
    pub fn find(&self, name: &str) -> Option<StateId> {
        self.states.iter().position(|s| s.name == name)
    }
}

/// One state: its name, where it was defined, and what it does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The state's name, unique across the whole workflow.
    pub name: String,
    /// ASL `Comment`.
    pub comment: Option<String>,
    /// Where the state was defined, for messages and generated docs.
    pub location: Option<Location>,
    /// The state's type and fields.
    pub kind: StateKind,
}

/// A 1-based line and column in the definition file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

/// Where control goes after a state finishes normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Transition {
    /// Continue with this state of the same machine.
    Next(StateId),
    /// The machine (or branch) ends with this state's output.
    End,
}

/// The eight state types: the seven of the 2016 spec and Map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StateKind {
    /// Passes its input to its output, optionally injecting a fixed `Result`.
    Pass(PassState),
    /// Calls a handler for `Resource`.
    Task(TaskState),
    /// Branches on rules over its input.
    Choice(ChoiceState),
    /// Delays for a time or until an instant.
    Wait(WaitState),
    /// Ends the machine successfully.
    Succeed(SucceedState),
    /// Ends the machine with an error.
    Fail(FailState),
    /// Runs branches concurrently and gathers their outputs into an array.
    Parallel(ParallelState),
    /// Runs one machine per item of an array (inline mode) and gathers the outputs in item order.
    Map(MapState),
    /// A Serverless Workflow state (see [`crate::sw`]).
    Sw(Box<crate::sw::SwState>),
}

impl StateKind {
    /// The ASL `Type` name.
    pub fn type_name(&self) -> &'static str {
        match self {
            StateKind::Pass(_) => "Pass",
            StateKind::Task(_) => "Task",
            StateKind::Choice(_) => "Choice",
            StateKind::Wait(_) => "Wait",
            StateKind::Succeed(_) => "Succeed",
            StateKind::Fail(_) => "Fail",
            StateKind::Parallel(_) => "Parallel",
            StateKind::Map(_) => "Map",
            StateKind::Sw(_) => "Sw",
        }
    }
}

/// `InputPath`: `None` is ASL `null` (the effective input is `{}`); the default is `$`.
pub type InputPath = Option<Path>;
/// `OutputPath`: `None` is ASL `null` (the effective output is `{}`); the default is `$`.
pub type OutputPath = Option<Path>;
/// `ResultPath`: `None` is ASL `null` (the result is discarded and the raw input passes on).
pub type ResultPath = Option<ReferencePath>;

/// A payload template (`Parameters`, `ResultSelector`): JSON whose `"key.$"` entries are
/// replaced by what their path selects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Template {
    /// A subtree with no `.$` keys, copied as is.
    Literal(Value),
    /// An object; keys have had their `.$` suffix removed.
    Object(Vec<(String, Template)>),
    /// An array of templates.
    Array(Vec<Template>),
    /// The value selected by a path (`$` input, `$$` context object).
    Path(Path),
    /// The result of an intrinsic function call (`"key.$": "States.Format(...)"`).
    Intrinsic(crate::intrinsics::Intrinsic),
}

/// `Assign` (AWS, 2024): the workflow variables a state (or a Choice rule, or a catcher) sets.
/// Every value is evaluated against the variables as they were when the state was entered; the
/// new values are visible from the next state on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Assign {
    /// In a JSONPath state: `"name": literal`, `"name.$": path or intrinsic`, where `$` is the
    /// state's result (Pass: its `Result`/effective input; Task, Parallel, Map: the raw result;
    /// Choice, Wait: the effective input; a catcher: the Error Output).
    JsonPath(Vec<(String, Template)>),
    /// In a JSONata state: values that may be `{% %}` expressions over `$states`.
    Jsonata(Vec<(String, JsonataTemplate)>),
}

impl Assign {
    /// The names assigned, in order.
    pub fn names(&self) -> Vec<&str> {
        match self {
            Assign::JsonPath(entries) => entries.iter().map(|(n, _)| n.as_str()).collect(),
            Assign::Jsonata(entries) => entries.iter().map(|(n, _)| n.as_str()).collect(),
        }
    }
}

/// A string computed at run time: a Fail state's `ErrorPath`/`CausePath` intrinsic function,
/// or its JSONata `Error`/`Cause` expression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ComputedString {
    /// An intrinsic function that returns a string (`States.Format(...)`).
    Intrinsic(crate::intrinsics::Intrinsic),
    /// A `{% %}` expression.
    Jsonata(JsonataExpr),
}

/// A Pass state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassState {
    /// `InputPath`.
    pub input_path: InputPath,
    /// `Parameters`.
    pub parameters: Option<Template>,
    /// `Result`: when present, it is the state's result instead of the effective input.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::present::value")]
    pub result: Option<Value>,
    /// `ResultPath`.
    pub result_path: ResultPath,
    /// `OutputPath`.
    pub output_path: OutputPath,
    /// `Next` or `End`.
    pub transition: Transition,
    /// `Assign`: variables set by this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assign: Option<Assign>,
    /// `Output` (JSONata states): the state's output, in place of the JSONPath pipeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<JsonataTemplate>,
}

/// A number of seconds given literally or read from the input at run time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Seconds {
    /// A literal, positive number of seconds.
    Fixed(u64),
    /// A path into the effective input that must select a positive integer.
    Path(Path),
    /// A JSONata expression that must yield a positive integer.
    Jsonata(JsonataExpr),
}

/// A Task state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    /// `Resource`: the handler to call. Distinct resources become distinct handler methods.
    pub resource: String,
    /// `InputPath`.
    pub input_path: InputPath,
    /// `Parameters`.
    pub parameters: Option<Template>,
    /// `ResultSelector`.
    pub result_selector: Option<Template>,
    /// `ResultPath`.
    pub result_path: ResultPath,
    /// `OutputPath`.
    pub output_path: OutputPath,
    /// `TimeoutSeconds`. AWS has no default (it is 99,999,999 s), unlike the 2016 spec's 60 s.
    pub timeout: Option<Seconds>,
    /// `HeartbeatSeconds`.
    pub heartbeat: Option<Seconds>,
    /// `Retry`, in order; the first retrier whose `ErrorEquals` matches applies.
    pub retry: Vec<Retrier>,
    /// `Catch`, in order.
    pub catch: Vec<Catcher>,
    /// `Next` or `End`.
    pub transition: Transition,
    /// `Assign`: variables set by this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assign: Option<Assign>,
    /// `Arguments` (JSONata states): the effective input, in place of `Parameters`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonataTemplate>,
    /// `Output` (JSONata states): the state's output, in place of the JSONPath pipeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<JsonataTemplate>,
    /// `Credentials`: the role AWS would assume for the call, evaluated per attempt and handed
    /// to the handler (see `TaskContext::role_arn` in the runtime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<crate::TaskCredentials>,
}

/// A Choice state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChoiceState {
    /// `InputPath`.
    pub input_path: InputPath,
    /// `OutputPath`.
    pub output_path: OutputPath,
    /// `Choices`, tried in order.
    pub choices: Vec<ChoiceBranch>,
    /// `Default`: where to go when no rule matches. Without it, no match is `States.NoChoiceMatched`.
    pub default: Option<StateId>,
    /// State-level `Assign`: used only when no rule matches (the `Default` path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assign: Option<Assign>,
    /// State-level `Output` (JSONata): used only when no rule matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<JsonataTemplate>,
}

/// One top-level Choice rule and its target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChoiceBranch {
    /// The rule.
    pub condition: Condition,
    /// `Next`.
    pub next: StateId,
    /// The rule's `Assign`, used when it matches (instead of the state's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assign: Option<Assign>,
    /// The rule's `Output` (JSONata), used when it matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<JsonataTemplate>,
}

/// A Boolean expression over the effective input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Condition {
    /// `And`: all (non-empty).
    And(Vec<Condition>),
    /// `Or`: any (non-empty).
    Or(Vec<Condition>),
    /// `Not`.
    Not(Box<Condition>),
    /// A data-test expression: `Variable` compared with an operand.
    Compare(Comparison),
    /// A JSONata `Condition` (`{% ... %}`, or a literal `true`/`false` written as `{% true %}`).
    Jsonata(JsonataExpr),
}

/// `Variable` compared by one operator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// `Variable`.
    pub variable: Path,
    /// The comparison operator.
    pub operator: Operator,
    /// What the variable is compared with: the literal, or the value at a path for `*Path` forms.
    pub operand: Operand,
}

/// The right-hand side of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Operand {
    /// A literal of the operator's type (a string, number, Boolean or timestamp string).
    Literal(Value),
    /// A path into the effective input (the `*Path` operator forms).
    Path(Path),
    /// A literal prepared at build time (timestamp parsed, pattern tokenized, number split) by
    /// the optimizer's `native-choice` pass.
    Native(crate::native::NativeLiteral),
}

/// Choice comparison operators. The `*Path` forms use the same operator with [`Operand::Path`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[allow(missing_docs)] // Each variant is the ASL operator of the same name.
pub enum Operator {
    StringEquals,
    StringLessThan,
    StringGreaterThan,
    StringLessThanEquals,
    StringGreaterThanEquals,
    StringMatches,
    NumericEquals,
    NumericLessThan,
    NumericGreaterThan,
    NumericLessThanEquals,
    NumericGreaterThanEquals,
    BooleanEquals,
    TimestampEquals,
    TimestampLessThan,
    TimestampGreaterThan,
    TimestampLessThanEquals,
    TimestampGreaterThanEquals,
    IsNull,
    IsPresent,
    IsNumeric,
    IsString,
    IsBoolean,
    IsTimestamp,
}

impl Operator {
    /// Every operator, in declaration order.
    pub const ALL: [Operator; 23] = [
        Operator::StringEquals,
        Operator::StringLessThan,
        Operator::StringGreaterThan,
        Operator::StringLessThanEquals,
        Operator::StringGreaterThanEquals,
        Operator::StringMatches,
        Operator::NumericEquals,
        Operator::NumericLessThan,
        Operator::NumericGreaterThan,
        Operator::NumericLessThanEquals,
        Operator::NumericGreaterThanEquals,
        Operator::BooleanEquals,
        Operator::TimestampEquals,
        Operator::TimestampLessThan,
        Operator::TimestampGreaterThan,
        Operator::TimestampLessThanEquals,
        Operator::TimestampGreaterThanEquals,
        Operator::IsNull,
        Operator::IsPresent,
        Operator::IsNumeric,
        Operator::IsString,
        Operator::IsBoolean,
        Operator::IsTimestamp,
    ];

    /// The ASL field name of the literal form (`StringEquals`).
    pub fn name(self) -> &'static str {
        match self {
            Operator::StringEquals => "StringEquals",
            Operator::StringLessThan => "StringLessThan",
            Operator::StringGreaterThan => "StringGreaterThan",
            Operator::StringLessThanEquals => "StringLessThanEquals",
            Operator::StringGreaterThanEquals => "StringGreaterThanEquals",
            Operator::StringMatches => "StringMatches",
            Operator::NumericEquals => "NumericEquals",
            Operator::NumericLessThan => "NumericLessThan",
            Operator::NumericGreaterThan => "NumericGreaterThan",
            Operator::NumericLessThanEquals => "NumericLessThanEquals",
            Operator::NumericGreaterThanEquals => "NumericGreaterThanEquals",
            Operator::BooleanEquals => "BooleanEquals",
            Operator::TimestampEquals => "TimestampEquals",
            Operator::TimestampLessThan => "TimestampLessThan",
            Operator::TimestampGreaterThan => "TimestampGreaterThan",
            Operator::TimestampLessThanEquals => "TimestampLessThanEquals",
            Operator::TimestampGreaterThanEquals => "TimestampGreaterThanEquals",
            Operator::IsNull => "IsNull",
            Operator::IsPresent => "IsPresent",
            Operator::IsNumeric => "IsNumeric",
            Operator::IsString => "IsString",
            Operator::IsBoolean => "IsBoolean",
            Operator::IsTimestamp => "IsTimestamp",
        }
    }

    /// The operator whose literal-form field name is `name`.
    pub fn from_name(name: &str) -> Option<Operator> {
        Operator::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether a `{name}Path` form exists (all comparisons except the `Is*` tests and StringMatches).
    pub fn has_path_form(self) -> bool {
        !matches!(
            self,
            Operator::StringMatches
                | Operator::IsNull
                | Operator::IsPresent
                | Operator::IsNumeric
                | Operator::IsString
                | Operator::IsBoolean
                | Operator::IsTimestamp
        )
    }
}

/// A Wait state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitState {
    /// `InputPath`.
    pub input_path: InputPath,
    /// `OutputPath`.
    pub output_path: OutputPath,
    /// Which of the four forms, and its value.
    pub duration: WaitDuration,
    /// `Next` or `End`.
    pub transition: Transition,
    /// `Assign`: variables set by this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assign: Option<Assign>,
    /// `Output` (JSONata states): the state's output, in place of the JSONPath pipeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<JsonataTemplate>,
}

/// The longest Wait AWS accepts, in seconds: 2³¹ − 1 (a Java `int`). AWS's recorded boundary
/// case refuses a wait of 24,856 days (2,147,558,400 s) with `States.Runtime` "Wait state delay
/// is too long."; 24,855 days is within the bound. A literal `Seconds` above it is a
/// compile-time error (WFC0703), a longer wait computed at run time that failure.
pub const MAX_WAIT_SECONDS: u64 = i32::MAX as u64;

/// The four forms of a Wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WaitDuration {
    /// `Seconds`: a non-negative integer.
    Seconds(u64),
    /// `Timestamp`: an ASL timestamp, already validated (see [`crate::timestamp::parse`]).
    Timestamp(String),
    /// `SecondsPath`: a path to a non-negative integer in the effective input.
    SecondsPath(Path),
    /// `TimestampPath`: a path to an ASL timestamp string in the effective input.
    TimestampPath(Path),
    /// JSONata `Seconds`: an expression that must yield a non-negative integer.
    SecondsJsonata(JsonataExpr),
    /// JSONata `Timestamp`: an expression that must yield an ASL timestamp string.
    TimestampJsonata(JsonataExpr),
}

/// A Succeed state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SucceedState {
    /// `InputPath`.
    pub input_path: InputPath,
    /// `OutputPath`.
    pub output_path: OutputPath,
    /// `Output` (JSONata states): the state's output, in place of the JSONPath pipeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<JsonataTemplate>,
}

/// A Fail state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailState {
    /// `Error`.
    pub error: Option<String>,
    /// `Cause`.
    pub cause: Option<String>,
    /// `ErrorPath` (AWS, 2023): a path to the error name in the raw input.
    pub error_path: Option<Path>,
    /// `CausePath` (AWS, 2023): a path to the cause in the raw input.
    pub cause_path: Option<Path>,
    /// `ErrorPath` as an intrinsic function, or JSONata `Error`: computed at run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_computed: Option<ComputedString>,
    /// `CausePath` as an intrinsic function, or JSONata `Cause`: computed at run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause_computed: Option<ComputedString>,
}

/// A Parallel state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParallelState {
    /// `InputPath`.
    pub input_path: InputPath,
    /// `Parameters`.
    pub parameters: Option<Template>,
    /// `ResultSelector`.
    pub result_selector: Option<Template>,
    /// `ResultPath`.
    pub result_path: ResultPath,
    /// `OutputPath`.
    pub output_path: OutputPath,
    /// `Branches`: each a closed machine run on the effective input.
    pub branches: Vec<StateMachine>,
    /// `Retry`.
    pub retry: Vec<Retrier>,
    /// `Catch`.
    pub catch: Vec<Catcher>,
    /// `Next` or `End`.
    pub transition: Transition,
    /// `Assign`: variables set by this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assign: Option<Assign>,
    /// `Arguments` (JSONata states): the effective input, in place of `Parameters`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonataTemplate>,
    /// `Output` (JSONata states): the state's output, in place of the JSONPath pipeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<JsonataTemplate>,
}

/// A Map state: INLINE (iterations inside the execution) or DISTRIBUTED (child executions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapState {
    /// `InputPath`.
    pub input_path: InputPath,
    /// `ItemsPath`: a Reference Path into the effective input that must select an array
    /// (default `$`).
    pub items_path: Path,
    /// `ItemSelector` (or the legacy `Parameters`): each iteration's input, evaluated against
    /// the effective input with `$$.Map.Item.Index` and `$$.Map.Item.Value` in the context
    /// object. Without it, an iteration's input is the item itself.
    pub item_selector: Option<Template>,
    /// `ItemProcessor` (or the legacy `Iterator`): the closed machine each item runs through.
    pub item_processor: StateMachine,
    /// `MaxConcurrency`: at most this many iterations in flight; 0 means no limit.
    pub max_concurrency: u64,
    /// `MaxConcurrencyPath`: replaces `max_concurrency` with the integer it selects from the
    /// effective input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency_path: Option<Path>,
    /// `MaxConcurrency` as a JSONata expression (JSONata states): replaces `max_concurrency`
    /// with the non-negative integer it yields when the state is entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency_jsonata: Option<JsonataExpr>,
    /// The DISTRIBUTED mode's fields; `None` is an INLINE Map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed: Option<Box<crate::DistributedMap>>,
    /// `ResultSelector`, applied to the array of iteration outputs.
    pub result_selector: Option<Template>,
    /// `ResultPath`.
    pub result_path: ResultPath,
    /// `OutputPath`.
    pub output_path: OutputPath,
    /// `Retry`: a retry re-runs every iteration.
    pub retry: Vec<Retrier>,
    /// `Catch`.
    pub catch: Vec<Catcher>,
    /// `Next` or `End`.
    pub transition: Transition,
    /// `Assign`: variables set by this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assign: Option<Assign>,
    /// `Items` (JSONata): the array to iterate, in place of `ItemsPath`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<JsonataTemplate>,
    /// `ItemSelector` in a JSONata Map: each iteration's input, with `$states.context.Map.Item`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_selector_jsonata: Option<JsonataTemplate>,
    /// `Output` (JSONata states): the state's output, in place of the JSONPath pipeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<JsonataTemplate>,
    /// A JSONata state (its own `QueryLanguage` or the machine's): without `Items`, the state
    /// input itself must be an array (`States.QueryEvaluationError`, not the JSONPath
    /// `ItemsPath` failure).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub jsonata: bool,
}

/// One entry of `Retry`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Retrier {
    /// `ErrorEquals` (non-empty; `States.ALL` only alone and last).
    pub error_equals: Vec<String>,
    /// `IntervalSeconds` (default 1).
    pub interval_seconds: u64,
    /// `MaxAttempts` (default 3): the number of retries, so 3 means up to 4 runs. 0 never retries.
    pub max_attempts: u32,
    /// `BackoffRate` (default 2.0, at least 1.0).
    pub backoff_rate: f64,
    /// `MaxDelaySeconds` (AWS, 2023): caps each interval.
    pub max_delay_seconds: Option<u64>,
    /// `JitterStrategy` (AWS, 2023).
    pub jitter: Jitter,
}

impl Retrier {
    /// The defaults of the spec: 1 s, 3 retries, rate 2.0, no cap, no jitter.
    pub fn new(error_equals: Vec<String>) -> Retrier {
        Retrier {
            error_equals,
            interval_seconds: 1,
            max_attempts: 3,
            backoff_rate: 2.0,
            max_delay_seconds: None,
            jitter: Jitter::None,
        }
    }
}

/// `JitterStrategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Jitter {
    /// `NONE`: wait exactly the computed interval.
    None,
    /// `FULL`: wait a uniformly random time in `[0, interval]`.
    Full,
}

/// One entry of `Catch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Catcher {
    /// `ErrorEquals`.
    pub error_equals: Vec<String>,
    /// `ResultPath` for the Error Output `{"Error", "Cause"}`, applied to the raw input (default `$`).
    pub result_path: ResultPath,
    /// `Next`.
    pub next: StateId,
    /// The catcher's `Assign`, evaluated with `$` (or `$states.errorOutput`) the Error Output;
    /// when a catcher matches, the state's own `Assign` is not evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assign: Option<Assign>,
    /// The catcher's `Output` (JSONata), in place of `ResultPath`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<JsonataTemplate>,
}

impl Workflow {
    /// A hash of the IR as JSON (the first 16 bytes of its SHA-256, in hex): what durable stores
    /// record with an execution to match it to the definition that started it. The compiler
    /// computes it at build time (generated code carries it as a constant, not the IR); the
    /// interpreter from the IR it loaded. It must stay byte-identical across releases for a
    /// given IR, or executions in existing stores no longer resume.
    pub fn definition_hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let text = serde_json::to_string(self).unwrap_or_default();
        let digest = Sha256::digest(text.as_bytes());
        digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
    }

    /// Visits every state machine (the top level first, then Parallel branches and Map item
    /// processors depth-first, in order).
    pub fn machines(&self) -> Vec<&StateMachine> {
        fn walk<'a>(m: &'a StateMachine, out: &mut Vec<&'a StateMachine>) {
            out.push(m);
            for s in &m.states {
                match &s.kind {
                    StateKind::Parallel(p) => {
                        for b in &p.branches {
                            walk(b, out);
                        }
                    }
                    StateKind::Map(map) => walk(&map.item_processor, out),
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.machine, &mut out);
        out
    }

    /// The distinct Task resources, sorted, each with the names of the states that use it.
    pub fn resources(&self) -> Vec<(&str, Vec<&str>)> {
        let mut map: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for m in self.machines() {
            for s in &m.states {
                if let StateKind::Task(t) = &s.kind {
                    map.entry(t.resource.as_str()).or_default().push(s.name.as_str());
                }
                // An SW function is a resource named after the function.
                if let StateKind::Sw(sw) = &s.kind {
                    for f in sw.functions() {
                        let states = map.entry(f).or_default();
                        if !states.contains(&s.name.as_str()) {
                            states.push(s.name.as_str());
                        }
                    }
                }
            }
        }
        map.into_iter().collect()
    }
}

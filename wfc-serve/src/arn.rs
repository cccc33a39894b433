//! ARNs as AWS shapes them, and the names they carry:
//!
//! - state machine `arn:aws:states:<region>:<account>:stateMachine:<name>` (a Step Functions
//!   Local `#<TestCase>` suffix is split off by [`Arns::state_machine`]);
//! - execution `arn:aws:states:<region>:<account>:execution:<machine>:<name>`, and an
//!   EXPRESS run of StartSyncExecution `...:express:<machine>:<name>:<id>`;
//! - activity `arn:aws:states:<region>:<account>:activity:<name>`.
//!
//! AWS names never contain `:` (nor whitespace, brackets, wildcards or `"#%\^|~`$&,;/`), so
//! `<machine>:<name>` (the part after `execution:`) is the execution's unique name in the store.

use crate::error::ApiError;

/// The region and account this server answers for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arns {
    /// The region in every ARN (default `us-east-1`).
    pub region: String,
    /// The account id in every ARN (default `123456789012`).
    pub account: String,
}

impl Default for Arns {
    fn default() -> Arns {
        Arns { region: "us-east-1".into(), account: "123456789012".into() }
    }
}

/// A state machine ARN taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineRef {
    /// The state machine's name.
    pub name: String,
    /// The Step Functions Local mock test case (`#<TestCase>` suffix), if any.
    pub test_case: Option<String>,
}

/// Checks an AWS name (state machine, execution, activity): 1 to 80 characters, none of the
/// characters AWS refuses. `what` names the member in the message.
pub fn check_name(name: &str, what: &str) -> Result<(), ApiError> {
    let bad = |c: char| {
        c.is_whitespace()
            || c.is_control()
            || matches!(
                c,
                '<' | '>'
                    | '{'
                    | '}'
                    | '['
                    | ']'
                    | '?'
                    | '*'
                    | '"'
                    | '#'
                    | '%'
                    | '\\'
                    | '^'
                    | '|'
                    | '~'
                    | '`'
                    | '$'
                    | '&'
                    | ','
                    | ';'
                    | ':'
                    | '/'
            )
    };
    let count = name.chars().count();
    if count == 0 || count > 80 {
        return Err(ApiError::client(
            "InvalidName",
            format!("Invalid Name: '{name}' ({what} must be 1 to 80 characters)"),
        ));
    }
    if let Some(c) = name.chars().find(|c| bad(*c)) {
        return Err(ApiError::client("InvalidName", format!("Invalid Name: '{name}' ({what} must not contain {c:?})")));
    }
    Ok(())
}

impl Arns {
    fn prefix(&self) -> String {
        format!("arn:aws:states:{}:{}:", self.region, self.account)
    }

    /// The ARN of state machine `name`.
    pub fn machine_arn(&self, name: &str) -> String {
        format!("{}stateMachine:{name}", self.prefix())
    }

    /// The ARN of execution `name` of machine `machine`.
    pub fn execution_arn(&self, machine: &str, name: &str) -> String {
        format!("{}execution:{machine}:{name}", self.prefix())
    }

    /// The ARN of an EXPRESS run (StartSyncExecution).
    pub fn express_arn(&self, machine: &str, name: &str, id: &str) -> String {
        format!("{}express:{machine}:{name}:{id}", self.prefix())
    }

    /// The ARN of activity `name`.
    pub fn activity_arn(&self, name: &str) -> String {
        format!("{}activity:{name}", self.prefix())
    }

    /// The resource part of an ARN of this server (`stateMachine:x`), checking its shape. An
    /// ARN of another region or account names nothing here: `missing` is returned for it.
    fn resource<'a>(&self, arn: &'a str, kind: &str, missing: impl Fn() -> ApiError) -> Result<&'a str, ApiError> {
        let invalid = || {
            ApiError::client(
                "InvalidArn",
                format!("Invalid Arn: '{arn}' (expected arn:aws:states:<region>:<account>:{kind}:...)"),
            )
        };
        let parts: Vec<&str> = arn.splitn(6, ':').collect();
        let [scheme, partition, service, region, account, resource] = parts.as_slice() else {
            return Err(invalid());
        };
        if *scheme != "arn" || partition.is_empty() || *service != "states" || region.is_empty() || account.is_empty() {
            return Err(invalid());
        }
        let Some(rest) = resource.strip_prefix(kind).and_then(|r| r.strip_prefix(':')) else {
            return Err(invalid());
        };
        if rest.is_empty() {
            return Err(invalid());
        }
        if *partition != "aws" || *region != self.region || *account != self.account {
            return Err(missing());
        }
        Ok(rest)
    }

    /// The state machine an ARN names. A qualified ARN (`...:<name>:<version or alias>`) is
    /// refused: versions and aliases are not implemented yet.
    pub fn state_machine(&self, arn: &str) -> Result<MachineRef, ApiError> {
        let missing = || ApiError::client("StateMachineDoesNotExist", format!("State Machine Does Not Exist: '{arn}'"));
        let rest = self.resource(arn, "stateMachine", missing)?;
        let (name, test_case) = match rest.split_once('#') {
            Some((name, case)) if !case.is_empty() => (name, Some(case.to_owned())),
            Some(_) => {
                return Err(ApiError::client(
                    "InvalidArn",
                    format!("Invalid Arn: '{arn}' (empty test case after '#')"),
                ));
            }
            None => (rest, None),
        };
        if name.contains(':') {
            return Err(ApiError::validation(format!(
                "'{arn}' is a state machine version or alias ARN, which this operation does not take"
            )));
        }
        check_name(name, "a state machine name")
            .map_err(|_| ApiError::client("InvalidArn", format!("Invalid Arn: '{arn}'")))?;
        Ok(MachineRef { name: name.to_owned(), test_case })
    }

    /// The store name (`<machine>:<name>`) and the machine of an execution ARN.
    pub fn execution(&self, arn: &str) -> Result<(String, String), ApiError> {
        let missing = || ApiError::client("ExecutionDoesNotExist", format!("Execution Does Not Exist: '{arn}'"));
        if arn.contains(":express:") {
            return Err(ApiError::client(
                "ExecutionDoesNotExist",
                format!("Execution Does Not Exist: '{arn}' (EXPRESS executions keep no record, as on AWS)"),
            ));
        }
        let rest = self.resource(arn, "execution", missing)?;
        let Some((machine, name)) = rest.split_once(':') else {
            return Err(ApiError::client(
                "InvalidArn",
                format!("Invalid Arn: '{arn}' (expected ...:execution:<state machine>:<name>)"),
            ));
        };
        let invalid = || ApiError::client("InvalidArn", format!("Invalid Arn: '{arn}'"));
        check_name(machine, "a state machine name").map_err(|_| invalid())?;
        check_name(name, "an execution name").map_err(|_| invalid())?;
        Ok((rest.to_owned(), machine.to_owned()))
    }

    /// The name of an activity ARN.
    pub fn activity(&self, arn: &str) -> Result<String, ApiError> {
        let missing = || ApiError::client("ActivityDoesNotExist", format!("Activity Does Not Exist: '{arn}'"));
        let name = self.resource(arn, "activity", missing)?;
        check_name(name, "an activity name")
            .map_err(|_| ApiError::client("InvalidArn", format!("Invalid Arn: '{arn}'")))?;
        Ok(name.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arns_round_trip_and_bad_ones_are_refused() {
        let arns = Arns::default();
        let m = arns.machine_arn("Order");
        assert_eq!(m, "arn:aws:states:us-east-1:123456789012:stateMachine:Order");
        assert_eq!(arns.state_machine(&m).unwrap(), MachineRef { name: "Order".into(), test_case: None });
        let with_case = arns.state_machine(&format!("{m}#HappyPath")).unwrap();
        assert_eq!(with_case.test_case.as_deref(), Some("HappyPath"));
        let e = arns.execution_arn("Order", "run-1");
        assert_eq!(arns.execution(&e).unwrap(), ("Order:run-1".to_owned(), "Order".to_owned()));
        assert_eq!(arns.activity(&arns.activity_arn("Pack")).unwrap(), "Pack");
        for bad in [
            "",
            "nope",
            "arn:aws:lambda:us-east-1:123456789012:function:x",
            "arn:aws:states:us-east-1:123456789012:stateMachine:",
        ] {
            assert_eq!(arns.state_machine(bad).unwrap_err().code, "InvalidArn", "{bad}");
        }
        assert_eq!(arns.execution(&m).unwrap_err().code, "InvalidArn");
        let other = "arn:aws:states:eu-west-1:123456789012:stateMachine:Order";
        assert_eq!(arns.state_machine(other).unwrap_err().code, "StateMachineDoesNotExist");
        assert_eq!(arns.state_machine(&format!("{m}:1")).unwrap_err().code, "ValidationException");
        assert_eq!(check_name("a b", "x").unwrap_err().code, "InvalidName");
        assert_eq!(check_name(&"x".repeat(81), "x").unwrap_err().code, "InvalidName");
    }
}

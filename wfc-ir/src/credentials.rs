//! Task `Credentials` (AWS, 2023): the IAM role Step Functions assumes for one Task's call
//! (cross-account access). The value is the whole `Credentials` object; its one field,
//! `RoleArn`, is read from it when the Task runs.

use serde::{Deserialize, Serialize};

use crate::{JsonataTemplate, Template};

/// A Task's `Credentials` object as written, checked by the compiler: it has exactly one key,
/// `RoleArn` (or `RoleArn.$` in a JSONPath state).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TaskCredentials {
    /// In a JSONPath state: `{"RoleArn": "arn:..."}` or `{"RoleArn.$": path or intrinsic}`,
    /// evaluated like `Parameters` against the effective input (after InputPath).
    JsonPath(Template),
    /// In a JSONata state: `{"RoleArn": "arn:..." | "{% expression %}"}`.
    Jsonata(JsonataTemplate),
}

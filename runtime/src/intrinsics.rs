//! Evaluation of ASL intrinsic functions in payload templates. The evaluator itself is
//! [`wfc_ir::intrinsics::eval`], shared with the optimizer (which folds calls whose arguments
//! are all literals); this module raises its failures as `States.Runtime`, which is what AWS
//! raises (see that module for the quirks kept).

use rand::Rng;
use serde_json::Value;
use wfc_ir::intrinsics::Intrinsic;
use wfc_ir::intrinsics::eval::{self, IntrinsicFailure};

use crate::Failure;

// `$hash` of JSONata uses the same hashing as `States.Hash`.
#[cfg(feature = "jsonata")]
pub(crate) use eval::hash_hex;
pub(crate) use eval::uuid_v4;

fn runtime(failure: IntrinsicFailure) -> Failure {
    Failure::runtime(failure.cause)
}

/// Evaluates `intrinsic`, the value of the template field `field` (named in messages as
/// written, with its `.$`), against the effective input (`$`) and the context object (`$$`).
/// `rng` is the execution's random source (`States.UUID`, unseeded `States.MathRandom`).
pub fn evaluate(
    intrinsic: &Intrinsic,
    field: &str,
    input: &Value,
    context: &Value,
    rng: &mut dyn Rng,
) -> Result<Value, Failure> {
    eval::evaluate(intrinsic, field, input, context, rng).map_err(runtime)
}

/// [`evaluate`] for the template entry `"key.$"`: the field name is only built when a message
/// needs it (this runs on every visit of a state whose template calls an intrinsic).
pub fn evaluate_entry(
    intrinsic: &Intrinsic,
    key: &str,
    input: &Value,
    context: &Value,
    rng: &mut dyn Rng,
) -> Result<Value, Failure> {
    eval::evaluate_entry(intrinsic, key, input, context, rng).map_err(runtime)
}

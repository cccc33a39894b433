//! Mutable walks over the parts of states that the expression-level passes rewrite: every
//! JSONPath, every payload template, every Choice comparison.
//!
//! The matches are exhaustive on purpose: a new state kind or field holding a path must be
//! listed here, or the passes would silently skip it (which is safe, only slower).

use wfc_ir::{Assign, Condition, Path, ReferencePath, StateKind, StateMachine, Template, WaitDuration, Workflow};

use super::graph;

/// Something a walk can visit: the three kinds of node the passes rewrite.
pub(crate) trait Visitor {
    /// A path (InputPath, OutputPath, a template's `.$` path, a Choice `Variable` or `*Path`
    /// operand, Wait's `SecondsPath`/`TimestampPath`, Map's `ItemsPath`, Fail's `ErrorPath`...).
    fn path(&mut self, _path: &mut Path) -> bool {
        false
    }
    /// A ResultPath (or a catcher's).
    fn reference(&mut self, _path: &mut ReferencePath) -> bool {
        false
    }
    /// A payload template, visited top-down (the visitor recurses itself if it needs to).
    fn template(&mut self, _template: &mut Template) -> bool {
        false
    }
    /// A Choice condition, at the top of each rule (the visitor recurses itself).
    fn condition(&mut self, _condition: &mut Condition) -> bool {
        false
    }
}

/// Runs `v` over every state of every machine of `workflow`; returns whether anything changed.
pub(crate) fn workflow(workflow: &mut Workflow, v: &mut impl Visitor) -> bool {
    graph::each_machine(workflow, &mut |m: &mut StateMachine| {
        m.states.iter_mut().fold(false, |changed, s| state(&mut s.kind, v) | changed)
    })
}

fn opt_path(p: &mut Option<Path>, v: &mut impl Visitor) -> bool {
    p.as_mut().is_some_and(|p| v.path(p))
}

fn opt_reference(p: &mut Option<ReferencePath>, v: &mut impl Visitor) -> bool {
    p.as_mut().is_some_and(|p| v.reference(p))
}

fn opt_template(t: &mut Option<Template>, v: &mut impl Visitor) -> bool {
    t.as_mut().is_some_and(|t| v.template(t))
}

fn assign(a: &mut Option<Assign>, v: &mut impl Visitor) -> bool {
    match a {
        Some(Assign::JsonPath(entries)) => entries.iter_mut().fold(false, |c, (_, t)| v.template(t) | c),
        Some(Assign::Jsonata(_)) | None => false,
    }
}

fn catchers(catch: &mut [wfc_ir::Catcher], v: &mut impl Visitor) -> bool {
    catch.iter_mut().fold(false, |c, k| opt_reference(&mut k.result_path, v) | assign(&mut k.assign, v) | c)
}

fn state(kind: &mut StateKind, v: &mut impl Visitor) -> bool {
    match kind {
        StateKind::Pass(s) => {
            opt_path(&mut s.input_path, v)
                | opt_template(&mut s.parameters, v)
                | opt_reference(&mut s.result_path, v)
                | opt_path(&mut s.output_path, v)
                | assign(&mut s.assign, v)
        }
        StateKind::Task(s) => {
            let timeouts = [&mut s.timeout, &mut s.heartbeat].into_iter().fold(false, |c, t| match t {
                Some(wfc_ir::Seconds::Path(p)) => v.path(p) | c,
                _ => c,
            });
            opt_path(&mut s.input_path, v)
                | opt_template(&mut s.parameters, v)
                | opt_template(&mut s.result_selector, v)
                | opt_reference(&mut s.result_path, v)
                | opt_path(&mut s.output_path, v)
                | assign(&mut s.assign, v)
                | catchers(&mut s.catch, v)
                | timeouts
        }
        StateKind::Choice(s) => {
            let rules =
                s.choices.iter_mut().fold(false, |c, b| v.condition(&mut b.condition) | assign(&mut b.assign, v) | c);
            opt_path(&mut s.input_path, v) | opt_path(&mut s.output_path, v) | assign(&mut s.assign, v) | rules
        }
        StateKind::Wait(s) => {
            let duration = match &mut s.duration {
                WaitDuration::SecondsPath(p) | WaitDuration::TimestampPath(p) => v.path(p),
                WaitDuration::Seconds(_)
                | WaitDuration::Timestamp(_)
                | WaitDuration::SecondsJsonata(_)
                | WaitDuration::TimestampJsonata(_) => false,
            };
            opt_path(&mut s.input_path, v) | opt_path(&mut s.output_path, v) | assign(&mut s.assign, v) | duration
        }
        StateKind::Succeed(s) => opt_path(&mut s.input_path, v) | opt_path(&mut s.output_path, v),
        StateKind::Fail(s) => {
            // ErrorPath/CausePath intrinsics (`error_computed`) are not visited: a Fail state
            // runs at most once per execution.
            opt_path(&mut s.error_path, v) | opt_path(&mut s.cause_path, v)
        }
        StateKind::Parallel(s) => {
            opt_path(&mut s.input_path, v)
                | opt_template(&mut s.parameters, v)
                | opt_template(&mut s.result_selector, v)
                | opt_reference(&mut s.result_path, v)
                | opt_path(&mut s.output_path, v)
                | assign(&mut s.assign, v)
                | catchers(&mut s.catch, v)
        }
        StateKind::Map(s) => {
            opt_path(&mut s.input_path, v)
                | v.path(&mut s.items_path)
                | opt_path(&mut s.max_concurrency_path, v)
                | opt_template(&mut s.item_selector, v)
                | opt_template(&mut s.result_selector, v)
                | opt_reference(&mut s.result_path, v)
                | opt_path(&mut s.output_path, v)
                | assign(&mut s.assign, v)
                | catchers(&mut s.catch, v)
        }
        // Serverless Workflow states hold jq/JSONata expressions, not JSONPath.
        StateKind::Sw(_) => false,
    }
}

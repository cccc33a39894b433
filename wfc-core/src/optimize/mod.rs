//! The optimizer: a pipeline of passes over a lowered [`Workflow`], run by [`crate::load`] and
//! [`crate::compile`] after lowering and before code generation.
//!
//! Each pass is its own module and has a name (used by [`Passes::disable`], the CLI's
//! `--no-opt PASS` and `--opt PASS`). Passes fall into two groups, and the group decides whether
//! a pass runs by default:
//!
//! | pass | observable history | default |
//! |---|---|---|
//! | [`fold_intrinsics`] (`fold-intrinsics`) | identical | on |
//! | [`paths`] (`paths`) | identical | on |
//! | [`unreachable`] (`unreachable`) | identical | on |
//! | [`direct_paths`] (`direct-paths`) | identical | on |
//! | [`native_choice`] (`native-choice`) | identical | on |
//! | [`fold_pass`] (`fold-pass`) | fewer Pass events | off |
//! | [`thread_choice`] (`thread-choice`) | fewer Choice events | off |
//!
//! Why the split: an execution's history is part of what wfc promises to match (AWS-shaped
//! `GetExecutionHistory`, and `wfc test --engine both` compares whole histories). A pass that
//! removes states from the executed path removes their `*StateEntered`/`*StateExited` events,
//! so it changes what a user observes even though outputs and task calls stay the same. Those
//! passes are opt-in ([`Passes::enable`]); the default pipeline keeps histories identical.

pub mod direct_paths;
pub mod fold_intrinsics;
pub mod fold_pass;
pub mod native_choice;
pub mod paths;
pub mod thread_choice;
pub mod unreachable;

mod eval;
mod graph;
mod visit;

use std::fmt;
use std::str::FromStr;

use wfc_ir::Workflow;

/// One optimization pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pass {
    /// Folds intrinsic calls whose arguments are all literals into their value ([`fold_intrinsics`]).
    FoldIntrinsics,
    /// Normalizes paths and templates so the runtime's fast paths apply ([`paths`]).
    Paths,
    /// Folds chains of Pass states whose input is a compile-time constant ([`fold_pass`]).
    FoldPass,
    /// Jumps over Choice states whose outcome is known at compile time ([`thread_choice`]).
    ThreadChoice,
    /// Removes states no transition reaches and renumbers the rest ([`unreachable`]).
    Unreachable,
    /// Compiles plain `$` paths to direct field access ([`direct_paths`]).
    DirectPaths,
    /// Prepares Choice literals (timestamps, numbers, patterns) at build time ([`native_choice`]).
    NativeChoice,
}

impl Pass {
    /// Every pass, in the order the pipeline runs them: intrinsic folding and normalization
    /// first (they turn more templates and Pass states into constants), then folding and
    /// threading, the removal of the states those left behind, and last the passes that compile
    /// what remains (paths and Choice literals) into their run-time forms.
    pub const ALL: [Pass; 7] = [
        Pass::FoldIntrinsics,
        Pass::Paths,
        Pass::FoldPass,
        Pass::ThreadChoice,
        Pass::Unreachable,
        Pass::DirectPaths,
        Pass::NativeChoice,
    ];

    /// The pass's name on the command line and in [`Passes::disable`].
    pub fn name(self) -> &'static str {
        match self {
            Pass::FoldIntrinsics => "fold-intrinsics",
            Pass::Paths => "paths",
            Pass::DirectPaths => "direct-paths",
            Pass::NativeChoice => "native-choice",
            Pass::FoldPass => "fold-pass",
            Pass::ThreadChoice => "thread-choice",
            Pass::Unreachable => "unreachable",
        }
    }

    /// The pass named `name`.
    pub fn from_name(name: &str) -> Option<Pass> {
        Pass::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether the pass leaves every execution's history exactly as it was (and so runs by
    /// default). The others only keep outputs, errors and task calls.
    pub fn preserves_history(self) -> bool {
        match self {
            Pass::FoldIntrinsics | Pass::Paths | Pass::Unreachable | Pass::DirectPaths | Pass::NativeChoice => true,
            Pass::FoldPass | Pass::ThreadChoice => false,
        }
    }

    /// Runs this pass alone over `workflow`; returns whether it changed anything.
    pub fn run(self, workflow: &mut Workflow) -> bool {
        match self {
            Pass::FoldIntrinsics => fold_intrinsics::run(workflow),
            Pass::Paths => paths::run(workflow),
            Pass::DirectPaths => direct_paths::run(workflow),
            Pass::NativeChoice => native_choice::run(workflow),
            Pass::FoldPass => fold_pass::run(workflow),
            Pass::ThreadChoice => thread_choice::run(workflow),
            Pass::Unreachable => unreachable::run(workflow),
        }
    }
}

impl fmt::Display for Pass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for a pass name that does not exist; its message lists the valid names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown optimizer pass `{name}`; expected one of: all, {}", pass_names())]
pub struct UnknownPass {
    /// The name as given.
    pub name: String,
}

fn pass_names() -> String {
    Pass::ALL.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
}

impl FromStr for Pass {
    type Err = UnknownPass;

    fn from_str(s: &str) -> Result<Pass, UnknownPass> {
        Pass::from_name(s).ok_or_else(|| UnknownPass { name: s.to_owned() })
    }
}

/// Which passes run. [`Passes::default`] is every history-preserving pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Passes {
    /// One flag per pass, indexed like [`Pass::ALL`].
    enabled: [bool; Pass::ALL.len()],
}

impl Default for Passes {
    fn default() -> Passes {
        Passes { enabled: Pass::ALL.map(Pass::preserves_history) }
    }
}

impl Passes {
    /// No pass at all: the IR exactly as lowered.
    pub fn none() -> Passes {
        Passes { enabled: [false; Pass::ALL.len()] }
    }

    /// Every pass, including those that change histories.
    pub fn all() -> Passes {
        Passes { enabled: [true; Pass::ALL.len()] }
    }

    fn index(pass: Pass) -> usize {
        Pass::ALL.iter().position(|p| *p == pass).unwrap_or(0)
    }

    /// Turns `pass` on.
    pub fn enable(&mut self, pass: Pass) -> &mut Passes {
        self.enabled[Passes::index(pass)] = true;
        self
    }

    /// Turns `pass` off.
    pub fn disable(&mut self, pass: Pass) -> &mut Passes {
        self.enabled[Passes::index(pass)] = false;
        self
    }

    /// Turns off the pass named `name`, or every pass for `all`.
    pub fn disable_named(&mut self, name: &str) -> Result<&mut Passes, UnknownPass> {
        if name == "all" {
            *self = Passes::none();
        } else {
            self.disable(name.parse()?);
        }
        Ok(self)
    }

    /// Turns on the pass named `name`, or every pass for `all`.
    pub fn enable_named(&mut self, name: &str) -> Result<&mut Passes, UnknownPass> {
        if name == "all" {
            *self = Passes::all();
        } else {
            self.enable(name.parse()?);
        }
        Ok(self)
    }

    /// Whether `pass` runs.
    pub fn is_enabled(&self, pass: Pass) -> bool {
        self.enabled[Passes::index(pass)]
    }

    /// The passes that run, in pipeline order.
    pub fn enabled(&self) -> Vec<Pass> {
        Pass::ALL.into_iter().filter(|p| self.is_enabled(*p)).collect()
    }
}

/// Runs the enabled passes over `workflow`, in [`Pass::ALL`] order, and returns the passes that
/// changed something.
///
/// Folding and threading feed each other (a threaded jump can make the next Pass state's input
/// constant), so those two repeat until neither changes anything; the number of rounds is bounded
/// by the number of states, since every change removes a state from some path.
pub fn optimize(workflow: &mut Workflow, passes: &Passes) -> Vec<Pass> {
    let mut changed = Vec::new();
    let note = |pass: Pass, did: bool, changed: &mut Vec<Pass>| {
        if did && !changed.contains(&pass) {
            changed.push(pass);
        }
    };
    if passes.is_enabled(Pass::FoldIntrinsics) {
        let did = fold_intrinsics::run(workflow);
        note(Pass::FoldIntrinsics, did, &mut changed);
    }
    if passes.is_enabled(Pass::Paths) {
        let did = paths::run(workflow);
        note(Pass::Paths, did, &mut changed);
    }
    let rounds = workflow.machines().iter().map(|m| m.states.len()).sum::<usize>() + 1;
    for _ in 0..rounds {
        let mut any = false;
        for pass in [Pass::FoldPass, Pass::ThreadChoice] {
            if passes.is_enabled(pass) {
                let did = pass.run(workflow);
                note(pass, did, &mut changed);
                any |= did;
            }
        }
        if !any {
            break;
        }
    }
    if passes.is_enabled(Pass::Unreachable) {
        let did = unreachable::run(workflow);
        note(Pass::Unreachable, did, &mut changed);
    }
    for pass in [Pass::DirectPaths, Pass::NativeChoice] {
        if passes.is_enabled(pass) {
            let did = pass.run(workflow);
            note(pass, did, &mut changed);
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for pass in Pass::ALL {
            assert_eq!(Pass::from_name(pass.name()), Some(pass));
            assert_eq!(pass.to_string().parse::<Pass>(), Ok(pass));
        }
        let err = "fold".parse::<Pass>().unwrap_err();
        assert!(err.to_string().contains("fold-pass"), "{err}");
    }

    #[test]
    fn default_runs_only_history_preserving_passes() {
        let d = Passes::default();
        assert_eq!(
            d.enabled(),
            vec![Pass::FoldIntrinsics, Pass::Paths, Pass::Unreachable, Pass::DirectPaths, Pass::NativeChoice]
        );
        let mut p = Passes::default();
        p.disable_named("all").unwrap();
        assert!(p.enabled().is_empty());
        p.enable_named("fold-pass").unwrap();
        assert_eq!(p.enabled(), vec![Pass::FoldPass]);
        assert!(p.disable_named("nope").is_err());
        assert_eq!(Passes::all().enabled(), Pass::ALL.to_vec());
    }
}

/// Builders for the passes' unit tests.
#[cfg(test)]
pub(crate) mod tests_support {
    use serde_json::Value;
    use wfc_ir::{
        Catcher, ChoiceBranch, ChoiceState, Comparison, Condition, Operand, Operator, ParallelState, PassState, Path,
        ReferencePath, State, StateKind, StateMachine, TaskState, Transition, Workflow,
    };

    fn dollar() -> Option<Path> {
        Path::parse("$").ok()
    }

    pub(crate) fn machine(states: Vec<State>) -> StateMachine {
        StateMachine { start_at: 0, states }
    }

    pub(crate) fn workflow(states: Vec<State>) -> Workflow {
        Workflow { name: "t".into(), comment: None, version: None, timeout_seconds: None, machine: machine(states) }
    }

    fn state(name: &str, kind: StateKind) -> State {
        State { name: name.into(), comment: None, location: None, kind }
    }

    /// `{"Type": "Pass"}`.
    pub(crate) fn pass_state(name: &str, transition: Transition) -> State {
        state(
            name,
            StateKind::Pass(PassState { assign: None, output: None,
                input_path: dollar(),
                parameters: None,
                result: None,
                result_path: ReferencePath::parse("$").ok(),
                output_path: dollar(),
                transition,
            }),
        )
    }

    /// A Pass with `Result`.
    pub(crate) fn const_pass(name: &str, result: Value, transition: Transition) -> State {
        let mut s = pass_state(name, transition);
        if let StateKind::Pass(p) = &mut s.kind {
            p.result = Some(result);
        }
        s
    }

    /// A Pass with an InputPath.
    pub(crate) fn path_pass(name: &str, input_path: &str, transition: Transition) -> State {
        let mut s = pass_state(name, transition);
        if let StateKind::Pass(p) = &mut s.kind {
            p.input_path = Path::parse(input_path).ok();
        }
        s
    }

    /// A Task, optionally with a `States.ALL` catcher going to `catch_to`.
    pub(crate) fn task_state(name: &str, transition: Transition, catch_to: Option<usize>) -> State {
        state(
            name,
            StateKind::Task(TaskState { arguments: None, assign: None, output: None,
                credentials: None,
                resource: "arn:aws:lambda:us-east-1:123456789012:function:Work".into(),
                input_path: dollar(),
                parameters: None,
                result_selector: None,
                result_path: ReferencePath::parse("$").ok(),
                output_path: dollar(),
                timeout: None,
                heartbeat: None,
                retry: vec![],
                catch: catch_to
                    .map(|next| Catcher { assign: None, output: None,
                        error_equals: vec!["States.ALL".into()],
                        result_path: ReferencePath::parse("$").ok(),
                        next,
                    })
                    .into_iter()
                    .collect(),
                transition,
            }),
        )
    }

    /// A Parallel that ends the machine.
    pub(crate) fn parallel_state(name: &str, branches: Vec<StateMachine>) -> State {
        state(
            name,
            StateKind::Parallel(ParallelState { arguments: None, assign: None, output: None,
                input_path: dollar(),
                parameters: None,
                result_selector: None,
                result_path: ReferencePath::parse("$").ok(),
                output_path: dollar(),
                branches,
                retry: vec![],
                catch: vec![],
                transition: Transition::End,
            }),
        )
    }

    /// A Choice with one literal comparison per rule.
    pub(crate) fn choice_state(
        name: &str,
        rules: Vec<(&str, Operator, Value, usize)>,
        default: Option<usize>,
    ) -> State {
        let choices = rules
            .into_iter()
            .map(|(var, operator, operand, next)| ChoiceBranch { assign: None, output: None,
                condition: Condition::Compare(Comparison {
                    variable: Path::parse(var).expect("test path"),
                    operator,
                    operand: Operand::Literal(operand),
                }),
                next,
            })
            .collect();
        state(name, StateKind::Choice(ChoiceState { assign: None, output: None, input_path: dollar(), output_path: dollar(), choices, default }))
    }
}

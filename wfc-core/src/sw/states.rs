//! SW states, actions, transitions and error handling: validation and lowering.

use wfc_ir::sw::{
    Action, ActionCall, ActionMode, Body, Branch, Completion, DataCondition, ErrorMatch, EventCondition, EventDef,
    OnEvents, ProduceEvent, SwKind, SwNext, SwOnError, SwRetry, SwState,
};
use wfc_ir::{State, StateKind, Workflow};

use super::{Cx, Defs, MAX_SUBFLOW_DEPTH, STATE_COMMON, time, workflow_id};
use crate::Source;
use crate::diagnostics::{Diagnostic, codes};
use crate::syntax::SpannedValue;

impl Cx<'_, '_> {
    pub(super) fn state(&mut self, s: &SpannedValue, defs: &Defs) -> Option<State> {
        if !self.is_object(s, "a state") {
            return None;
        }
        let name = self.required(s, "name", "a state").and_then(|v| self.string(v, "a state `name`"));
        let ty_v = self.required(s, "type", "a state");
        let ty = ty_v.and_then(|v| self.string(v, "a state `type`"));
        let what = format!("the state `{}`", name.as_deref().unwrap_or("?"));
        let (input_filter, output_filter) = match s.get("stateDataFilter") {
            Some(f) if self.is_object(f, "`stateDataFilter`") => {
                self.unknown_fields(f, &["dataInputPath", "dataOutputPath"], &[], "`stateDataFilter`");
                (
                    f.get("dataInputPath").and_then(|v| self.path_expr(v, "`dataInputPath`")),
                    f.get("dataOutputPath").and_then(|v| self.path_expr(v, "`dataOutputPath`")),
                )
            }
            _ => (None, None),
        };
        let is_switch = ty.as_deref() == Some("switch");
        let next = match (s.get("transition"), s.get("end")) {
            (Some(t), Some(e)) => {
                self.diags.push(
                    Diagnostic::error(
                        codes::SW_TRANSITION_AND_END,
                        format!("{what} has both `transition` and `end`"),
                        t.span.clone(),
                    )
                    .with_label(e.span.clone(), "`end` here"),
                );
                None
            }
            (Some(t), None) => {
                if is_switch {
                    self.error(
                        codes::SW_SWITCH_TRANSITION,
                        format!("{what} is a switch: its conditions and `default` transition, not `transition`"),
                        t.span.clone(),
                    );
                }
                self.transition(t, defs)
            }
            (None, Some(e)) => {
                if is_switch {
                    self.error(codes::SW_SWITCH_END, format!("{what} is a switch, which cannot be an end state: give each condition and the `default` a transition"), e.span.clone());
                    None
                } else {
                    self.end(e, defs)
                }
            }
            (None, None) if is_switch => Some(SwNext::None),
            (None, None) => {
                self.error(
                    codes::SW_NO_TRANSITION,
                    format!("{what} has neither `transition` nor `end`"),
                    s.span.clone(),
                );
                None
            }
        };
        let retry = match s.get("retry") {
            Some(r) => self.array(r, "`retry`").iter().filter_map(|r| self.retry(r)).collect(),
            None => Vec::new(),
        };
        // The draft's `onError`, or v0.5's `onErrors` (the spelling of the release's examples):
        // the same list, and never both.
        let on_error = match (s.get("onError"), s.get("onErrors")) {
            (Some(a), Some(b)) => {
                self.diags.push(
                    Diagnostic::error(
                        codes::SW_BAD_VALUE,
                        format!("{what} has both `onError` (the draft) and `onErrors` (v0.5): write one list"),
                        b.span.clone(),
                    )
                    .with_label(a.span.clone(), "`onError` here"),
                );
                Vec::new()
            }
            (Some(r), None) | (None, Some(r)) => {
                self.array(r, "`onError`").iter().filter_map(|r| self.on_error(r, defs)).collect()
            }
            (None, None) => Vec::new(),
        };
        let input_schema = self.schema(s, "dataInputSchema");
        let output_schema = self.schema(s, "dataOutputSchema");
        let kind = match ty.as_deref() {
            Some("operation") => {
                self.unknown_fields(s, STATE_COMMON, &["actionMode", "actions", "timeout"], &what);
                let mode = self.action_mode(s);
                let actions = self.actions(s.get("actions"), s, defs, &what, true);
                Some(SwKind::Operation { mode, actions })
            }
            Some("event") => {
                self.unknown_fields(s, STATE_COMMON, &["exclusive", "onEvents", "eventsActions", "timeout"], &what);
                let exclusive = match s.get("exclusive") {
                    None => true,
                    Some(v) => match v.kind {
                        crate::syntax::ValueKind::Bool(b) => b,
                        _ => {
                            self.error(codes::SW_WRONG_TYPE, "`exclusive` must be true or false", v.span.clone());
                            true
                        }
                    },
                };
                let timeout = self.opt_duration(s, "timeout", &what);
                let on = s.get("onEvents").or_else(|| s.get("eventsActions"));
                let Some(on) = on else {
                    self.error(codes::SW_MISSING_FIELD, format!("{what} has no `onEvents`"), s.span.clone());
                    return None;
                };
                let mut on_events = Vec::new();
                for o in self.array(on, "`onEvents`") {
                    if !self.is_object(o, "an `onEvents` entry") {
                        continue;
                    }
                    self.unknown_fields(
                        o,
                        &["eventRefs", "actionMode", "actions", "eventDataFilter"],
                        &[],
                        "an `onEvents` entry",
                    );
                    let mut events = Vec::new();
                    if let Some(refs) = self.required(o, "eventRefs", "an `onEvents` entry") {
                        for r in self.array(refs, "`eventRefs`") {
                            if let Some(e) = self.event_ref(r, defs) {
                                events.push(e);
                            }
                        }
                        if events.is_empty() && refs.as_array().is_some_and(<[_]>::is_empty) {
                            self.error(codes::SW_MISSING_FIELD, "`eventRefs` is empty", refs.span.clone());
                        }
                    }
                    let mode = self.action_mode(o);
                    let actions = self.actions(o.get("actions"), o, defs, "an `onEvents` entry", false);
                    let filter = self.event_filter(o);
                    on_events.push(OnEvents { events, mode, actions, filter });
                }
                Some(SwKind::Event { exclusive, on_events, timeout })
            }
            Some("switch") => {
                self.unknown_fields(
                    s,
                    STATE_COMMON,
                    &["dataConditions", "eventConditions", "eventTimeout", "default"],
                    &what,
                );
                let mut data = Vec::new();
                let mut events = Vec::new();
                if let Some(dc) = s.get("dataConditions") {
                    for c in self.array(dc, "`dataConditions`") {
                        if !self.is_object(c, "a data condition") {
                            continue;
                        }
                        self.unknown_fields(
                            c,
                            &["name", "condition", "transition", "end", "metadata"],
                            &[],
                            "a data condition",
                        );
                        let cond = self
                            .required(c, "condition", "a data condition")
                            .and_then(|v| self.condition(v, "`condition`"));
                        let next = self.condition_next(c, defs);
                        if let (Some(condition), Some(next)) = (cond, next) {
                            data.push(DataCondition { condition, next });
                        }
                    }
                }
                if let Some(ec) = s.get("eventConditions") {
                    for c in self.array(ec, "`eventConditions`") {
                        if !self.is_object(c, "an event condition") {
                            continue;
                        }
                        self.unknown_fields(
                            c,
                            &["name", "eventRef", "transition", "end", "eventDataFilter", "metadata"],
                            &[],
                            "an event condition",
                        );
                        let event =
                            self.required(c, "eventRef", "an event condition").and_then(|v| self.event_ref(v, defs));
                        let filter = self.event_filter(c);
                        let next = self.condition_next(c, defs);
                        if let (Some(event), Some(next)) = (event, next) {
                            events.push(EventCondition { event, filter, next });
                        }
                    }
                }
                match (s.get("dataConditions"), s.get("eventConditions")) {
                    (None, None) => self.error(
                        codes::SW_MISSING_FIELD,
                        format!("{what} has neither `dataConditions` nor `eventConditions`"),
                        s.span.clone(),
                    ),
                    (Some(d), Some(_)) => self.error(
                        codes::SW_BAD_VALUE,
                        format!("{what} has both `dataConditions` and `eventConditions`"),
                        d.span.clone(),
                    ),
                    _ => {}
                }
                let event_timeout = self.opt_duration(s, "eventTimeout", &what);
                let default = match s.get("default") {
                    Some(d) => self.default_next(d, defs),
                    None => None,
                };
                Some(SwKind::Switch { data, events, event_timeout, default })
            }
            Some("delay") => {
                self.unknown_fields(s, STATE_COMMON, &["timeDelay"], &what);
                let seconds = self.required(s, "timeDelay", &what).and_then(|v| self.duration(v, "`timeDelay`"));
                Some(SwKind::Delay { seconds: seconds? })
            }
            Some("inject") => {
                self.unknown_fields(s, STATE_COMMON, &["data"], &what);
                let data = self.required(s, "data", &what)?;
                if !self.is_object(data, "an inject state's `data`") {
                    return None;
                }
                Some(SwKind::Inject { data: data.to_json() })
            }
            Some("foreach") => {
                self.unknown_fields(
                    s,
                    STATE_COMMON,
                    &[
                        "inputCollection",
                        "outputCollection",
                        "iterationParam",
                        "max",
                        "actions",
                        "workflowId",
                        "timeout",
                    ],
                    &what,
                );
                let input_collection =
                    self.required(s, "inputCollection", &what).and_then(|v| self.path_expr(v, "`inputCollection`"));
                let output_collection = s.get("outputCollection").and_then(|v| self.path_expr(v, "`outputCollection`"));
                if let Some(oc) = &output_collection
                    && !oc.as_path().is_some_and(|p| p.is_singular())
                    && let Some(v) = s.get("outputCollection")
                {
                    self.error(
                        codes::SW_BAD_EXPRESSION,
                        "`outputCollection` must name one place (`{{ $.results }}`), not a filter or wildcard",
                        v.span.clone(),
                    );
                }
                let iteration_param = self.opt_string(s, "iterationParam", &what).unwrap_or_else(|| "item".to_owned());
                let max = match s.get("max") {
                    None => None,
                    Some(v) => match v.kind {
                        crate::syntax::ValueKind::Number(ref n) if n.as_u64().is_some() => n.as_u64(),
                        crate::syntax::ValueKind::String(ref t) if t.parse::<u64>().is_ok() => t.parse().ok(),
                        _ => {
                            self.error(
                                codes::SW_BAD_VALUE,
                                "`max` must be a whole number (0: no limit)",
                                v.span.clone(),
                            );
                            None
                        }
                    },
                };
                let body = self.body(s, defs, &what)?;
                Some(SwKind::ForEach {
                    input_collection: input_collection?,
                    output_collection,
                    iteration_param,
                    max,
                    body,
                })
            }
            Some("parallel") => {
                self.unknown_fields(s, STATE_COMMON, &["branches", "completionType", "n"], &what);
                let mut branches = Vec::new();
                if let Some(bs) = self.required(s, "branches", &what) {
                    for b in self.array(bs, "`branches`") {
                        if !self.is_object(b, "a branch") {
                            continue;
                        }
                        self.unknown_fields(b, &["name", "actions", "workflowId"], &[], "a branch");
                        let bname =
                            self.required(b, "name", "a branch").and_then(|v| self.string(v, "a branch `name`"));
                        if let (Some(name), Some(body)) = (bname, self.body(b, defs, "a branch")) {
                            branches.push(Branch { name, body });
                        }
                    }
                }
                let completion = match s.get("completionType").map(|v| (v.as_str(), v.span.clone())) {
                    None | Some((Some("and"), _)) => Completion::And,
                    Some((Some("xor"), _)) => Completion::Xor,
                    Some((Some("n_of_m"), span)) => {
                        let n = s.get("n").and_then(|v| match &v.kind {
                            crate::syntax::ValueKind::Number(n) => n.as_u64(),
                            crate::syntax::ValueKind::String(t) => t.parse().ok(),
                            _ => None,
                        });
                        match n {
                            Some(n) if n >= 1 && (n as usize) <= branches.len().max(1) => Completion::NOfM(n),
                            _ => {
                                self.error(
                                    codes::SW_BAD_VALUE,
                                    "`n_of_m` needs `n`: a whole number from 1 to the number of branches",
                                    s.get("n").map_or(span, |v| v.span.clone()),
                                );
                                Completion::And
                            }
                        }
                    }
                    Some((_, span)) => {
                        self.error(codes::SW_BAD_VALUE, "`completionType` is `and`, `xor` or `n_of_m`", span);
                        Completion::And
                    }
                };
                Some(SwKind::Parallel { completion, branches })
            }
            Some("subflow") => {
                self.unknown_fields(s, STATE_COMMON, &["workflowId", "waitForCompletion"], &what);
                let idv = self.required(s, "workflowId", &what)?;
                let id = self.string(idv, "`workflowId`")?;
                let wait =
                    !matches!(s.get("waitForCompletion").map(|v| &v.kind), Some(crate::syntax::ValueKind::Bool(false)));
                let workflow = match self.subflow(&id, idv, defs)? {
                    Resolved::Embedded(w) => Some(Box::new(w)),
                    Resolved::Handler => None,
                };
                Some(SwKind::Subflow { workflow_id: id, wait, workflow })
            }
            Some("callback") => {
                self.unknown_fields(s, STATE_COMMON, &["action", "eventRef", "timeout", "eventDataFilter"], &what);
                let action = self.required(s, "action", &what).and_then(|a| self.action(a, defs));
                let event = self.required(s, "eventRef", &what).and_then(|v| self.event_ref(v, defs));
                let timeout = self.opt_duration(s, "timeout", &what);
                let event_filter = self.event_filter(s);
                Some(SwKind::Callback { action: action?, event: event?, event_filter, timeout })
            }
            Some(other) => {
                let span = ty_v.map_or(s.span.clone(), |v| v.span.clone());
                self.error(
                    codes::SW_BAD_VALUE,
                    format!("`{other}` is not a state type (event, operation, switch, delay, parallel, subflow, inject, foreach, callback)"),
                    span,
                );
                None
            }
            None => None,
        };
        let location = Some(self.location(s.span.start));
        Some(State {
            name: name?,
            comment: None,
            location,
            kind: StateKind::Sw(Box::new(SwState {
                input_filter,
                output_filter,
                kind: kind?,
                retry,
                on_error,
                next: next?,
                workflow: None,
                input_schema,
                output_schema,
            })),
        })
    }

    fn action_mode(&mut self, obj: &SpannedValue) -> ActionMode {
        match obj.get("actionMode").map(|v| (v.as_str(), v.span.clone())) {
            None | Some((Some("sequential"), _)) => ActionMode::Sequential,
            Some((Some("parallel"), _)) => ActionMode::Parallel,
            Some((_, span)) => {
                self.error(codes::SW_BAD_VALUE, "`actionMode` is `sequential` or `parallel`", span);
                ActionMode::Sequential
            }
        }
    }

    fn actions(
        &mut self,
        v: Option<&SpannedValue>,
        owner: &SpannedValue,
        defs: &Defs,
        what: &str,
        required: bool,
    ) -> Vec<Action> {
        let Some(v) = v else {
            if required {
                self.error(codes::SW_MISSING_FIELD, format!("{what} has no `actions`"), owner.span.clone());
            }
            return Vec::new();
        };
        self.array(v, "`actions`").iter().filter_map(|a| self.action(a, defs)).collect()
    }

    fn action(&mut self, a: &SpannedValue, defs: &Defs) -> Option<Action> {
        if !self.is_object(a, "an action") {
            return None;
        }
        self.unknown_fields(a, &["name", "functionRef", "eventRef", "timeout", "actionDataFilter"], &[], "an action");
        let name = self.opt_string(a, "name", "an action");
        let timeout = self.opt_duration(a, "timeout", "an action");
        let (input_filter, results_filter) = match a.get("actionDataFilter") {
            Some(f) if self.is_object(f, "`actionDataFilter`") => {
                self.unknown_fields(f, &["dataInputPath", "dataResultsPath"], &[], "`actionDataFilter`");
                (
                    f.get("dataInputPath").and_then(|v| self.path_expr(v, "`dataInputPath`")),
                    f.get("dataResultsPath").and_then(|v| self.path_expr(v, "`dataResultsPath`")),
                )
            }
            _ => (None, None),
        };
        let call = match (a.get("functionRef"), a.get("eventRef")) {
            (Some(f), None) => {
                let (refname, parameters) = match f.as_str() {
                    Some(n) => (Some((n.to_owned(), f.span.clone())), None),
                    None => {
                        if !self.is_object(f, "`functionRef`") {
                            return None;
                        }
                        self.unknown_fields(f, &["refName", "parameters"], &[], "`functionRef`");
                        let r = self
                            .required(f, "refName", "`functionRef`")
                            .and_then(|v| self.string(v, "`refName`").map(|s| (s, v.span.clone())));
                        let params = f.get("parameters").map(|p| self.template(p, "a parameter"));
                        (r, params)
                    }
                };
                let (function, span) = refname?;
                if !defs.functions.contains_key(&function) {
                    let mut d = Diagnostic::error(
                        codes::SW_UNKNOWN_FUNCTION,
                        format!("no function is named `{function}`"),
                        span,
                    );
                    let mut known: Vec<&String> = defs.functions.keys().collect();
                    known.sort();
                    if !known.is_empty() {
                        d = d.with_help(format!(
                            "the functions are: {}",
                            known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                        ));
                    } else {
                        d = d.with_help("define it in the workflow's `functions`");
                    }
                    self.diags.push(d);
                    return None;
                }
                ActionCall::Function { function, parameters }
            }
            (None, Some(e)) => {
                if !self.is_object(e, "`eventRef`") {
                    return None;
                }
                self.unknown_fields(
                    e,
                    &["triggerEventRef", "resultEventRef", "data", "contextAttributes"],
                    &[],
                    "`eventRef`",
                );
                let trigger = self.required(e, "triggerEventRef", "`eventRef`").and_then(|v| self.event_ref(v, defs));
                let result = e.get("resultEventRef").and_then(|v| self.event_ref(v, defs));
                let data = e.get("data").map(|d| self.template(d, "`data`"));
                let mut context_attributes = Vec::new();
                if let Some(ca) = e.get("contextAttributes")
                    && self.is_object(ca, "`contextAttributes`")
                {
                    for (k, v) in ca.as_object().unwrap_or(&[]) {
                        if let Some(s) = self.string(v, "a context attribute") {
                            context_attributes.push((k.name.clone(), s));
                        }
                    }
                }
                ActionCall::Event { trigger: trigger?, result, data, context_attributes }
            }
            (Some(f), Some(_)) => {
                self.error(codes::SW_BAD_VALUE, "an action has both `functionRef` and `eventRef`", f.span.clone());
                return None;
            }
            (None, None) => {
                self.error(codes::SW_MISSING_FIELD, "an action needs `functionRef` or `eventRef`", a.span.clone());
                return None;
            }
        };
        Some(Action { name, call, input_filter, results_filter, timeout })
    }

    fn event_ref(&mut self, v: &SpannedValue, defs: &Defs) -> Option<EventDef> {
        let name = self.string(v, "an event reference")?;
        match defs.events.get(&name) {
            Some(e) => Some(e.clone()),
            None => {
                let mut known: Vec<&String> = defs.events.keys().collect();
                known.sort();
                let help = if known.is_empty() {
                    "define it in the workflow's `events`".to_owned()
                } else {
                    format!("the events are: {}", known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "))
                };
                self.diags.push(
                    Diagnostic::error(codes::SW_UNKNOWN_EVENT, format!("no event is named `{name}`"), v.span.clone())
                        .with_help(help),
                );
                None
            }
        }
    }

    fn event_filter(&mut self, obj: &SpannedValue) -> Option<wfc_ir::sw::Expr> {
        let f = obj.get("eventDataFilter")?;
        if !self.is_object(f, "`eventDataFilter`") {
            return None;
        }
        self.unknown_fields(f, &["dataOutputPath", "inputPath", "dataInputPath"], &[], "`eventDataFilter`");
        // The draft spells it three ways in its own examples.
        let v = f.get("dataOutputPath").or_else(|| f.get("inputPath")).or_else(|| f.get("dataInputPath"))?;
        self.path_expr(v, "`eventDataFilter`")
    }

    fn body(&mut self, obj: &SpannedValue, defs: &Defs, what: &str) -> Option<Body> {
        match (obj.get("actions"), obj.get("workflowId")) {
            (Some(a), None) => Some(Body::Actions(self.actions(Some(a), obj, defs, what, true))),
            (None, Some(w)) => {
                let id = self.string(w, "`workflowId`")?;
                Some(match self.subflow(&id, w, defs)? {
                    Resolved::Embedded(wf) => Body::Workflow(Box::new(wf)),
                    Resolved::Handler => Body::Handler(id),
                })
            }
            (Some(a), Some(_)) => {
                self.error(codes::SW_BAD_VALUE, format!("{what} has both `actions` and `workflowId`"), a.span.clone());
                None
            }
            (None, None) => {
                self.error(
                    codes::SW_MISSING_FIELD,
                    format!("{what} needs `actions` or `workflowId`"),
                    obj.span.clone(),
                );
                None
            }
        }
    }

    /// Resolves `workflowId` in the registry and lowers that workflow to embed it. A workflow not
    /// in the registry is not an error: a subflow is a reference resolved when the program is
    /// assembled, so the handler runs it (a method named after the id), said in a note.
    fn subflow(&mut self, id: &str, at: &SpannedValue, defs: &Defs) -> Option<Resolved> {
        if self.stack.iter().any(|s| s == id) {
            self.error(
                codes::SW_SUBFLOW_CYCLE,
                format!("the workflow `{id}` runs itself through subflows ({} → {id})", self.stack.join(" → ")),
                at.span.clone(),
            );
            return None;
        }
        if self.stack.len() >= MAX_SUBFLOW_DEPTH {
            self.error(
                codes::SW_SUBFLOW_CYCLE,
                format!("subflows nest more than {MAX_SUBFLOW_DEPTH} deep"),
                at.span.clone(),
            );
            return None;
        }
        let registry = self.registry;
        let Some((path, text)) = registry.iter().find(|(p, t)| workflow_id(p, t).as_deref() == Some(id)) else {
            // The handler key is the id: it must not be a function's name too.
            if defs.functions.contains_key(id) {
                self.error(
                    codes::SW_UNKNOWN_WORKFLOW,
                    format!(
                        "no workflow with id `{id}` is compiled together with this one, and its handler method would be the function `{id}`'s"
                    ),
                    at.span.clone(),
                );
                return None;
            }
            let known: Vec<String> = registry.iter().filter_map(|(p, t)| workflow_id(p, t)).collect();
            let compiled = if known.is_empty() {
                "no other workflow is compiled together with this one".to_owned()
            } else {
                format!("the workflows compiled together are: {}", known.join(", "))
            };
            self.diags.push(
                Diagnostic::note(
                    codes::SW_HANDLER_SUBFLOW,
                    format!("the subflow `{id}` is not compiled together with this workflow: the handler runs it (handler method / mock key `{id}`)"),
                    at.span.clone(),
                )
                .with_help(format!(
                    "{compiled}; to embed it instead, put its `.sw.json`/`.sw.yaml` file beside this one or in a directory of `WFC_SUBFLOW_PATH` (wfc), or give it to wfc-build (`Config::sw_workflow`) or `Settings::sw_workflow`"
                )),
            );
            return Some(Resolved::Handler);
        };
        self.stack.push(id.to_owned());
        let loaded = super::load_nested(Source { path, text }, registry, self.reader, self.features, self.stack);
        self.stack.pop();
        match loaded {
            Ok(l) => Some(Resolved::Embedded(l.workflow)),
            Err(d) => {
                let errors = d.items.iter().filter(|i| i.severity == crate::Severity::Error).count();
                let first = d
                    .items
                    .iter()
                    .find(|i| i.severity == crate::Severity::Error)
                    .map(|i| i.message.clone())
                    .unwrap_or_default();
                self.error(
                    codes::SW_UNKNOWN_WORKFLOW,
                    format!("the workflow `{id}` ({path}) has {errors} error(s), the first: {first}"),
                    at.span.clone(),
                );
                None
            }
        }
    }

    fn transition(&mut self, t: &SpannedValue, defs: &Defs) -> Option<SwNext> {
        if let Some(name) = t.as_str() {
            let target = self.target(name, t, defs)?;
            return Some(SwNext::Transition { target, guard: None, produce: Vec::new() });
        }
        if !self.is_object(t, "`transition`") {
            return None;
        }
        self.unknown_fields(t, &["nextState", "expression", "produceEvent", "produceEvents"], &[], "`transition`");
        let nv = self.required(t, "nextState", "`transition`")?;
        let name = self.string(nv, "`nextState`")?;
        let target = self.target(&name, nv, defs);
        let guard = t.get("expression").and_then(|v| self.condition(v, "a transition `expression`"));
        let produce = self.produce_events(t, defs);
        Some(SwNext::Transition { target: target?, guard, produce })
    }

    fn target(&mut self, name: &str, at: &SpannedValue, defs: &Defs) -> Option<usize> {
        match defs.states.get(name) {
            Some(i) => Some(*i),
            None => {
                self.error(codes::SW_UNKNOWN_STATE, format!("no state is named `{name}`"), at.span.clone());
                None
            }
        }
    }

    fn end(&mut self, e: &SpannedValue, defs: &Defs) -> Option<SwNext> {
        if matches!(e.kind, crate::syntax::ValueKind::Bool(true)) {
            return Some(SwNext::End { terminate: false, produce: Vec::new() });
        }
        if !self.is_object(e, "`end`") {
            return None;
        }
        self.unknown_fields(e, &["kind", "produceEvent", "produceEvents"], &[], "`end`");
        let kind = self.required(e, "kind", "`end`").and_then(|v| self.string(v, "`end` `kind`"));
        let produce = self.produce_events(e, defs);
        match kind.as_deref() {
            Some("default") => Some(SwNext::End { terminate: false, produce }),
            Some("terminate") => Some(SwNext::End { terminate: true, produce }),
            Some("event") => {
                if produce.is_empty() && e.get("produceEvent").is_none() && e.get("produceEvents").is_none() {
                    self.error(
                        codes::SW_MISSING_FIELD,
                        "an `end` of kind `event` needs `produceEvent` (or v0.5's `produceEvents`)",
                        e.span.clone(),
                    );
                }
                Some(SwNext::End { terminate: false, produce })
            }
            Some(_) => {
                let span = e.get("kind").map_or(e.span.clone(), |v| v.span.clone());
                self.error(codes::SW_BAD_VALUE, "an `end` `kind` is `default`, `terminate` or `event`", span);
                None
            }
            None => None,
        }
    }

    /// A transition's or end's events: the draft's `produceEvent` (one) or v0.5's
    /// `produceEvents` (an array, produced in order); not both.
    fn produce_events(&mut self, obj: &SpannedValue, defs: &Defs) -> Vec<ProduceEvent> {
        match (obj.get("produceEvent"), obj.get("produceEvents")) {
            (Some(one), Some(many)) => {
                self.diags.push(
                    Diagnostic::error(
                        codes::SW_BAD_VALUE,
                        "both `produceEvent` (the draft) and `produceEvents` (v0.5): write one",
                        many.span.clone(),
                    )
                    .with_label(one.span.clone(), "`produceEvent` here"),
                );
                Vec::new()
            }
            (Some(one), None) => self.produce(one, defs).into_iter().collect(),
            (None, Some(many)) => {
                let items = self.array(many, "`produceEvents`");
                if items.is_empty() {
                    self.error(codes::SW_MISSING_FIELD, "`produceEvents` is empty", many.span.clone());
                }
                items.iter().filter_map(|p| self.produce(p, defs)).collect()
            }
            (None, None) => Vec::new(),
        }
    }

    fn produce(&mut self, p: &SpannedValue, defs: &Defs) -> Option<ProduceEvent> {
        if !self.is_object(p, "`produceEvent`") {
            return None;
        }
        self.unknown_fields(p, &["nameRef", "eventRef", "data", "contextAttributes"], &[], "`produceEvent`");
        // The draft writes `contextAttributes` as an object, or an array of one-key objects.
        let mut context_attributes = Vec::new();
        if let Some(ca) = p.get("contextAttributes") {
            let objects: Vec<&SpannedValue> = match ca.as_array() {
                Some(items) => items.iter().collect(),
                None => vec![ca],
            };
            for o in objects {
                if self.is_object(o, "`contextAttributes`") {
                    for (k, v) in o.as_object().unwrap_or(&[]) {
                        context_attributes.push((k.name.clone(), self.template(v, "a context attribute")));
                    }
                }
            }
        }
        // The draft's examples also spell `nameRef` as `eventRef`.
        let event = match p.get("eventRef") {
            Some(v) if p.get("nameRef").is_none() => self.event_ref(v, defs),
            _ => self.required(p, "nameRef", "`produceEvent`").and_then(|v| self.event_ref(v, defs)),
        };
        let data = p.get("data").map(|d| self.template(d, "produced event `data`"));
        Some(ProduceEvent { event: event?, data, context_attributes })
    }

    /// A switch condition's `transition` or `end`.
    fn condition_next(&mut self, c: &SpannedValue, defs: &Defs) -> Option<SwNext> {
        match (c.get("transition"), c.get("end")) {
            (Some(t), None) => self.transition(t, defs),
            (None, Some(e)) => self.end(e, defs),
            _ => {
                self.error(
                    codes::SW_NO_TRANSITION,
                    "a switch condition needs a `transition` (or an `end`)",
                    c.span.clone(),
                );
                None
            }
        }
    }

    /// A switch `default`: a transition (`{"nextState": ...}`, the draft's form), or the v0.5
    /// `{"transition": ...}` / `{"end": ...}`.
    fn default_next(&mut self, d: &SpannedValue, defs: &Defs) -> Option<SwNext> {
        if d.get("nextState").is_some() || d.as_str().is_some() {
            return self.transition(d, defs);
        }
        self.condition_next(d, defs)
    }

    fn retry(&mut self, r: &SpannedValue) -> Option<SwRetry> {
        if !self.is_object(r, "a `retry` entry") {
            return None;
        }
        self.unknown_fields(r, &["expression", "interval", "multiplier", "maxAttempts"], &[], "a `retry` entry");
        let expression =
            self.required(r, "expression", "a `retry` entry").and_then(|v| self.condition(v, "a retry `expression`"));
        let mut interval_seconds = 1.0;
        let mut repeat = None;
        if let Some(v) = r.get("interval")
            && let Some(text) = self.string(v, "`interval`")
        {
            match time::parse_retry_interval(&text) {
                Ok((n, secs)) => {
                    interval_seconds = secs;
                    repeat = n;
                }
                Err(msg) => self.error(codes::SW_BAD_DURATION, format!("`interval`: {msg}"), v.span.clone()),
            }
        }
        // The draft (§ Retry Definition, and its schema: `"type": "string"`) writes `multiplier`
        // as an ISO 8601 duration added to the interval on each retry. The later versions'
        // number (multiply the interval) is another meaning, so a number is refused rather than
        // read either way.
        let increment_seconds = match r.get("multiplier") {
            None => 0.0,
            Some(v) => match &v.kind {
                crate::syntax::ValueKind::String(_) => self.duration(v, "`multiplier`").unwrap_or(0.0),
                _ => {
                    self.diags.push(
                        Diagnostic::error(
                            codes::SW_BAD_VALUE,
                            format!(
                                "`multiplier` must be an ISO 8601 duration added on each retry (the 2020 draft), not {}",
                                v.kind.type_name()
                            ),
                            v.span.clone(),
                        )
                        .with_help(
                            "write the increment as a duration: `\"interval\": \"PT1M\", \"multiplier\": \"PT2M\"` retries after 1, 3, 5 … minutes; a number multiplier is a later version's form",
                        ),
                    );
                    0.0
                }
            },
        };
        let max_attempts = match r.get("maxAttempts") {
            None => repeat.map_or(3, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            Some(v) => match &v.kind {
                crate::syntax::ValueKind::Number(n) if n.as_u64().is_some() => {
                    u32::try_from(n.as_u64().unwrap_or(0)).unwrap_or(u32::MAX)
                }
                crate::syntax::ValueKind::String(s) if s.parse::<u32>().is_ok() => s.parse().unwrap_or(0),
                _ => {
                    self.error(codes::SW_BAD_VALUE, "`maxAttempts` must be a whole number", v.span.clone());
                    0
                }
            },
        };
        Some(SwRetry { expression: expression?, interval_seconds, increment_seconds, max_attempts })
    }

    /// An `onError` entry (the draft: `expression`), or a v0.5 `onErrors` entry (`error`: a name,
    /// or `*` for every error). v0.5's `code` and `retryRef` have no counterpart here (errors
    /// carry a name only; retries are the state's own `retry`), so they are refused, not ignored.
    fn on_error(&mut self, r: &SpannedValue, defs: &Defs) -> Option<SwOnError> {
        if !self.is_object(r, "an `onError` entry") {
            return None;
        }
        self.unknown_fields(
            r,
            &["expression", "error", "errorDataFilter", "transition", "end", "code", "retryRef"],
            &[],
            "an `onError` entry",
        );
        for key in ["code", "retryRef"] {
            if let Some(v) = r.get(key) {
                self.error(
                    codes::SW_UNSUPPORTED_FIELD,
                    format!(
                        "an `onErrors` `{key}` cannot be honoured: wfc errors carry a name only and retries are the state's `retry`; match the error by `error` (its name) or `expression`"
                    ),
                    v.span.clone(),
                );
            }
        }
        let matcher = match (r.get("expression"), r.get("error")) {
            (Some(e), None) => self.condition(e, "an onError `expression`").map(ErrorMatch::Expression),
            (None, Some(e)) => self.string(e, "an onErrors `error`").map(ErrorMatch::Name),
            (Some(e), Some(_)) => {
                self.error(
                    codes::SW_BAD_VALUE,
                    "an `onError` entry has both `expression` (the draft) and `error` (v0.5): write one",
                    e.span.clone(),
                );
                None
            }
            (None, None) => {
                self.error(
                    codes::SW_MISSING_FIELD,
                    "an `onError` entry has no `expression` (or v0.5's `error`)",
                    r.span.clone(),
                );
                None
            }
        };
        let error_filter = match r.get("errorDataFilter") {
            Some(f) if self.is_object(f, "`errorDataFilter`") => {
                f.get("dataOutputPath").and_then(|v| self.path_expr(v, "`errorDataFilter`"))
            }
            _ => None,
        };
        let next = self.condition_next(r, defs);
        Some(SwOnError { matcher: matcher?, error_filter, next: next? })
    }
}

/// What a `workflowId` resolved to.
enum Resolved {
    /// A workflow compiled together with this one, lowered to be embedded.
    Embedded(Workflow),
    /// Not compiled together: the handler runs it.
    Handler,
}

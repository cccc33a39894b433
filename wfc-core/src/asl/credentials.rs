//! Task `Credentials` (asl-anchor §3, §15): `{"RoleArn": ...}`, with `RoleArn.$` (a path or an
//! intrinsic) in JSONPath states and a `{% %}` expression in JSONata states. Locally no role can
//! be assumed; the evaluated role ARN reaches the handler through its `TaskContext` and the
//! `TaskScheduled` event (docs/semantics.md).

use wfc_ir::TaskCredentials;

use super::{Cx, Obj, codes};

impl Cx<'_> {
    /// The Task's `Credentials`, if any. `Err` when it is invalid (reported).
    pub(super) fn credentials(&mut self, task: Obj<'_>) -> Result<Option<TaskCredentials>, ()> {
        let Some(v) = task.get("Credentials") else {
            return Ok(None);
        };
        let Some(obj) = v.as_object().map(|entries| Obj { value: v, entries }) else {
            self.error(
                codes::BAD_CREDENTIALS,
                format!("`Credentials` must be an object, found {}", v.kind.type_name()),
                v.span.clone(),
            )
            .help = Some("write `\"Credentials\": {\"RoleArn\": \"arn:aws:iam::123456789012:role/...\"}`".to_owned());
            return Err(());
        };
        let mut ok = true;
        for (k, _) in obj.entries {
            let problem = match k.name.as_str() {
                "RoleArn" => None,
                "RoleArn.$" if !self.jsonata => None,
                "RoleArn.$" => Some((
                    "`RoleArn.$` is a JSONPath key; this Task state uses JSONata".to_owned(),
                    "write `\"RoleArn\": \"{% expression %}\"`".to_owned(),
                )),
                other => Some((
                    format!("unknown field `{other}` in `Credentials`"),
                    if self.jsonata { "`Credentials` accepts: RoleArn" } else { "`Credentials` accepts: RoleArn, RoleArn.$" }
                        .to_owned(),
                )),
            };
            if let Some((message, help)) = problem {
                self.error(codes::BAD_CREDENTIALS, message, k.span.clone()).help = Some(help);
                ok = false;
            }
        }
        match (obj.key("RoleArn"), obj.key("RoleArn.$")) {
            (Some(l), Some(p)) => {
                let d = self.error(codes::BAD_CREDENTIALS, "`RoleArn` and `RoleArn.$` cannot both be given", p.span.clone());
                d.labels.push((l.span.clone(), "`RoleArn` is here".to_owned()));
                d.help = Some("keep one of them".to_owned());
                return Err(());
            }
            (None, None) => {
                self.error(codes::BAD_CREDENTIALS, "`Credentials` needs `RoleArn`", obj.head()).help = Some(
                    if self.jsonata {
                        "add `\"RoleArn\": \"arn:aws:iam::123456789012:role/...\"` (or a `{% %}` expression)"
                    } else {
                        "add `\"RoleArn\": \"arn:aws:iam::...\"`, or `\"RoleArn.$\"` with a path or an intrinsic"
                    }
                    .to_owned(),
                );
                return Err(());
            }
            _ => {}
        }
        if let Some(r) = obj.get("RoleArn") {
            let is_expression = self.jsonata && r.as_str().is_some_and(|s| wfc_ir::jsonata::expression_text(s).is_some());
            match r.as_str() {
                None => {
                    self.error(
                        codes::BAD_CREDENTIALS,
                        format!("`RoleArn` must be a string, found {}", r.kind.type_name()),
                        r.span.clone(),
                    );
                    ok = false;
                }
                Some(s) if !is_expression && s.trim().is_empty() => {
                    self.error(codes::BAD_CREDENTIALS, "`RoleArn` cannot be empty", r.span.clone()).help =
                        Some("name the role, e.g. \"arn:aws:iam::123456789012:role/Cross\"".to_owned());
                    ok = false;
                }
                Some(_) => {}
            }
        }
        if !ok {
            return Err(());
        }
        // A bad path, intrinsic or expression inside is reported by the template's own checks
        // (and so keeps the definition from loading).
        Ok(Some(if self.jsonata {
            TaskCredentials::Jsonata(self.jsonata_template(v, "Credentials"))
        } else {
            TaskCredentials::JsonPath(self.template(v))
        }))
    }
}

//! Layer 3: every expression and template of every scope (SPEC §16), checked statically.
//!
//! Each expression is collected with its *anchor* — where it is evaluated — which decides
//! what it may read: a node's own expressions read its transitive predecessors (AG201),
//! an edge's `when` also reads the edge's source, a scope's `outputs`/`success` and a
//! container's `collect`/`condition` read any node of the scope they are evaluated in.
//! Fragments are sealed (AG202). Unlike the reference, `output("a","b")` obeys the same
//! predecessor rule, `self.inputs.*` is checked, `self.outputs.*` is refused before the node
//! has outputs, and reads through a criterion's `output:` field count for AG904.

use super::Ctx;
use super::suggest::did_you_mean;
use crate::diagnostic::{Code, Finding, pointer_push};
use crate::edges::Ancestry;
use crate::model::{
    Fields, Node, NodeType, Object, ScopeKind, arr_of, effective_block, entries_of, obj_of, str_of,
    strs_of,
};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use weft_agx::{Expr, RefKind, StaticErrorKind, Ty, TypeEnv};

/// What the expressions of a document read: the input of AG904 and WF906.
#[derive(Default)]
pub(crate) struct Reads {
    /// (scope, node, output) read somewhere.
    pub outputs: HashSet<(usize, usize, String)>,
    /// Scopes where an `output()` call with a computed node id makes reads unknowable.
    pub dynamic: HashSet<usize>,
    /// (scope, reader node) → nodes whose outputs it reads.
    pub sources: HashMap<(usize, usize), HashSet<usize>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Expr,
    Condition,
    Template,
}

/// When, relative to the node's own outputs, an expression is evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    BeforeOutputs,
    AfterOutputs,
}

/// Where an expression is evaluated.
#[derive(Clone, Copy, Debug)]
enum Anchor {
    /// Inside node `node` of `scope`.
    Node {
        scope: usize,
        node: usize,
        phase: Phase,
    },
    /// On an edge leaving `source`.
    Edge { scope: usize, source: usize },
    /// At the end of `scope` (its outputs; `success` when `outputs` is readable).
    ScopeEnd { scope: usize, outputs_root: bool },
    /// In the final scope of a child; `None` when the child is an external `ref`.
    ChildEnd { child: Option<usize> },
    /// In a scope's `defaults`: it applies to every node that inherits it, so only what is
    /// wrong everywhere (syntax, functions, secrets, undeclared context) is checked here.
    Defaults,
}

struct Site<'a> {
    text: &'a str,
    pointer: String,
    mode: Mode,
    anchor: Anchor,
}

/// Per-scope facts the resolver needs.
struct ScopeInfo<'a> {
    /// Loop bindings: `Some(collect names)` when `loop.*` is in scope.
    loop_collects: Option<Vec<&'a str>>,
    /// Map bindings (item, index) in scope.
    map_names: Vec<(&'a str, &'a str)>,
    /// Declared params visible here (own, or the graph's when the fragment declares none).
    params: HashMap<&'a str, &'a Object>,
    /// Declared outputs of the scope (graph or fragment `outputs`).
    outputs: HashMap<&'a str, &'a Object>,
    /// Scope index of the enclosing scope (inline bodies only).
    parent: Option<usize>,
}

pub(crate) fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) -> Reads {
    let infos = scope_infos(ctx);
    let mut sites = Vec::new();
    for si in 0..ctx.scopes.len() {
        collect_scope_sites(ctx, si, &mut sites);
    }
    let mut checker = Checker {
        ctx,
        infos,
        ancestry: (0..ctx.scopes.len()).map(|_| None).collect(),
        reads: Reads::default(),
        context_keys: obj_of(ctx.root, "context"),
        attachments: arr_of(ctx.root, "attachments")
            .iter()
            .filter_map(|a| a.field("name").and_then(Value::as_str))
            .collect(),
        out,
    };
    for site in &sites {
        checker.check_site(site);
    }
    for si in 0..ctx.scopes.len() {
        checker.check_carry_and_criteria(si);
    }
    checker.reads
}

fn scope_infos<'a>(ctx: &Ctx<'a>) -> Vec<ScopeInfo<'a>> {
    let root_params: HashMap<&str, &Object> = entries_of(ctx.root, "params")
        .filter_map(|(k, v)| Some((k, v.as_object()?)))
        .collect();
    let by_pointer: HashMap<&str, usize> = ctx
        .scopes
        .iter()
        .enumerate()
        .map(|(i, s)| (s.pointer.as_str(), i))
        .collect();
    ctx.scopes
        .iter()
        .map(|scope| {
            let params = if scope.is_root() || !scope.declares_params() {
                root_params.clone()
            } else {
                entries_of(scope.obj, "params")
                    .filter_map(|(k, v)| Some((k, v.as_object()?)))
                    .collect()
            };
            let outputs = entries_of(scope.obj, "outputs")
                .filter_map(|(k, v)| Some((k, v.as_object()?)))
                .collect();
            let mut loop_collects = None;
            let mut map_names = Vec::new();
            let mut parent = None;
            if let Some((_, owner_ptr)) = &scope.owner {
                // The owner node lives in the scope whose pointer prefixes the owner's.
                let owner_scope = owner_ptr
                    .rfind("/nodes/")
                    .and_then(|cut| by_pointer.get(&owner_ptr[..cut]).copied());
                parent = owner_scope;
                let owner = owner_scope.and_then(|os| {
                    let set = &ctx.sets[os];
                    set.nodes.iter().find(|n| &n.pointer == owner_ptr)
                });
                if let Some(owner) = owner
                    && let (Some(NodeType::Loop), Some(block)) = (owner.node_type(), owner.block())
                {
                    loop_collects = Some(entries_of(block, "collect").map(|(k, _)| k).collect());
                }
            }
            match scope.kind {
                ScopeKind::MapBody { item, index } => map_names.push((item, index)),
                ScopeKind::Named(name) => {
                    if let Some(uses) = ctx.fragment_uses.get(name) {
                        loop_collects = uses.loop_collects.clone();
                        map_names.extend(uses.map_bindings.iter().copied());
                    }
                }
                _ => {}
            }
            ScopeInfo {
                loop_collects,
                map_names,
                params,
                outputs,
                parent,
            }
        })
        .collect()
}

/// Collects every expression and template position of scope `si` (DIGEST §2.1).
fn collect_scope_sites<'a>(ctx: &Ctx<'a>, si: usize, sites: &mut Vec<Site<'a>>) {
    let scope = &ctx.scopes[si];
    let set = &ctx.sets[si];
    if let Some(defaults) = ctx.defaults(si) {
        collect_defaults_sites(defaults, &scope.ptr("defaults"), sites);
    }
    let end = Anchor::ScopeEnd {
        scope: si,
        outputs_root: false,
    };
    for (name, spec) in entries_of(scope.obj, "outputs") {
        if let Some(from) = spec.field("from").and_then(Value::as_str) {
            let p = pointer_push(&pointer_push(&scope.ptr("outputs"), name), "from");
            sites.push(site(from, p, Mode::Expr, end));
        }
    }
    if let Some(success) = obj_of(scope.obj, "success") {
        let anchor = Anchor::ScopeEnd {
            scope: si,
            outputs_root: true,
        };
        collect_criteria_sites(success, &scope.ptr("success"), anchor, sites);
    }
    let eptr = scope.ptr("edges");
    for (i, edge) in arr_of(scope.obj, "edges").iter().enumerate() {
        let (Some(when), Some(from)) = (
            edge.field("when").and_then(Value::as_str),
            edge.field("from").and_then(Value::as_str),
        ) else {
            continue;
        };
        let Some(&source) = set.index.get(from) else {
            continue;
        };
        let p = pointer_push(&pointer_push(&eptr, &i.to_string()), "when");
        sites.push(site(
            when,
            p,
            Mode::Condition,
            Anchor::Edge { scope: si, source },
        ));
    }
    for node in &set.nodes {
        collect_node_sites(ctx, si, node, sites);
    }
}

/// Expression positions a `defaults` block can hold (`human` checkpoints, `failure`).
fn collect_defaults_sites<'a>(defaults: &'a Object, dptr: &str, sites: &mut Vec<Site<'a>>) {
    let hptr = pointer_push(dptr, "human");
    for (i, h) in arr_of(defaults, "human").iter().enumerate() {
        let p = pointer_push(&hptr, &i.to_string());
        if let Some(w) = h.field("when").and_then(Value::as_str) {
            sites.push(site(
                w,
                pointer_push(&p, "when"),
                Mode::Condition,
                Anchor::Defaults,
            ));
        }
        if let Some(t) = h.field("prompt").and_then(Value::as_str) {
            sites.push(site(
                t,
                pointer_push(&p, "prompt"),
                Mode::Template,
                Anchor::Defaults,
            ));
        }
    }
    if let Some(failure) = obj_of(defaults, "failure") {
        let fptr = pointer_push(dptr, "failure");
        for (i, step) in arr_of(failure, "fallback").iter().enumerate() {
            if let Some(w) = step.field("when").and_then(Value::as_str) {
                let p = pointer_push(
                    &pointer_push(&pointer_push(&fptr, "fallback"), &i.to_string()),
                    "when",
                );
                sites.push(site(w, p, Mode::Condition, Anchor::Defaults));
            }
        }
        if let Some(msg) = obj_of(failure, "escalation").and_then(|e| str_of(e, "message")) {
            let p = pointer_push(&pointer_push(&fptr, "escalation"), "message");
            sites.push(site(msg, p, Mode::Template, Anchor::Defaults));
        }
    }
}

fn site(text: &str, pointer: String, mode: Mode, anchor: Anchor) -> Site<'_> {
    Site {
        text,
        pointer,
        mode,
        anchor,
    }
}

fn collect_criteria_sites<'a>(
    success: &'a Object,
    sptr: &str,
    anchor: Anchor,
    sites: &mut Vec<Site<'a>>,
) {
    let cptr = pointer_push(sptr, "criteria");
    for (i, c) in arr_of(success, "criteria").iter().enumerate() {
        let Some(c) = c.as_object() else { continue };
        let p = pointer_push(&cptr, &i.to_string());
        for (key, mode) in [
            ("expr", Mode::Condition),
            ("target", Mode::Expr),
            ("rubric", Mode::Template),
            ("prompt", Mode::Template),
        ] {
            if let Some(text) = str_of(c, key) {
                sites.push(site(text, pointer_push(&p, key), mode, anchor));
            }
        }
        for (j, e) in arr_of(c, "inputs").iter().enumerate() {
            if let Some(text) = e.as_str() {
                let ip = pointer_push(&pointer_push(&p, "inputs"), &j.to_string());
                sites.push(site(text, ip, Mode::Expr, anchor));
            }
        }
    }
}

fn collect_node_sites<'a>(ctx: &Ctx<'a>, si: usize, node: &Node<'a>, sites: &mut Vec<Site<'a>>) {
    let before = Anchor::Node {
        scope: si,
        node: node.index,
        phase: Phase::BeforeOutputs,
    };
    let after = Anchor::Node {
        scope: si,
        node: node.index,
        phase: Phase::AfterOutputs,
    };
    if let Some(when) = str_of(node.obj, "when") {
        sites.push(site(when, node.ptr("when"), Mode::Condition, before));
    }
    if let Some(text) = str_of(node.obj, "instructions") {
        sites.push(site(text, node.ptr("instructions"), Mode::Template, before));
    }
    for (name, spec) in entries_of(node.obj, "inputs") {
        let p = pointer_push(&node.ptr("inputs"), name);
        if let Some(from) = spec.field("from").and_then(Value::as_str) {
            sites.push(site(from, pointer_push(&p, "from"), Mode::Expr, before));
        }
        if let Some(t) = spec.field("template").and_then(Value::as_str) {
            sites.push(site(
                t,
                pointer_push(&p, "template"),
                Mode::Template,
                before,
            ));
        }
    }
    let hptr = node.ptr("human");
    for (i, h) in arr_of(node.obj, "human").iter().enumerate() {
        let Some(h) = h.as_object() else { continue };
        let phase = match str_of(h, "at") {
            Some("before_start" | "before_side_effects") => before,
            _ => after,
        };
        let p = pointer_push(&hptr, &i.to_string());
        if let Some(w) = str_of(h, "when") {
            sites.push(site(w, pointer_push(&p, "when"), Mode::Condition, phase));
        }
        if let Some(t) = str_of(h, "prompt") {
            sites.push(site(t, pointer_push(&p, "prompt"), Mode::Template, phase));
        }
    }
    if let Some(failure) = node.obj("failure") {
        let fptr = node.ptr("failure");
        for (i, step) in arr_of(failure, "fallback").iter().enumerate() {
            if let Some(w) = step.field("when").and_then(Value::as_str) {
                let p = pointer_push(
                    &pointer_push(&pointer_push(&fptr, "fallback"), &i.to_string()),
                    "when",
                );
                sites.push(site(w, p, Mode::Condition, after));
            }
        }
        if let Some(msg) = obj_of(failure, "escalation").and_then(|e| str_of(e, "message")) {
            let p = pointer_push(&pointer_push(&fptr, "escalation"), "message");
            sites.push(site(msg, p, Mode::Template, after));
        }
    }
    if let Some(success) = node.obj("success") {
        collect_criteria_sites(success, &node.ptr("success"), after, sites);
    }
    let Some(ty) = node.node_type() else { return };
    let Some(block) = node.block() else { return };
    let bptr = node.ptr(ty.as_str());
    match ty {
        NodeType::Decision => {
            if let Some(q) = str_of(block, "question") {
                sites.push(site(
                    q,
                    pointer_push(&bptr, "question"),
                    Mode::Template,
                    before,
                ));
            }
            for (i, b) in arr_of(block, "branches").iter().enumerate() {
                if let Some(w) = b.field("when").and_then(Value::as_str) {
                    let p = pointer_push(
                        &pointer_push(&pointer_push(&bptr, "branches"), &i.to_string()),
                        "when",
                    );
                    sites.push(site(w, p, Mode::Condition, before));
                }
            }
        }
        NodeType::Gate => {
            if let Some(t) = str_of(block, "prompt") {
                sites.push(site(
                    t,
                    pointer_push(&bptr, "prompt"),
                    Mode::Template,
                    before,
                ));
            }
            for (i, e) in arr_of(block, "present").iter().enumerate() {
                if let Some(e) = e.as_str() {
                    let p = pointer_push(&pointer_push(&bptr, "present"), &i.to_string());
                    sites.push(site(e, p, Mode::Expr, before));
                }
            }
        }
        NodeType::Loop | NodeType::Map => {
            let child = ctx.child_scope(si, node);
            let body_end = match child {
                Some(c) => Anchor::ScopeEnd {
                    scope: c,
                    outputs_root: false,
                },
                None => Anchor::ChildEnd { child: None },
            };
            if ty == NodeType::Loop {
                if let Some(c) = str_of(block, "condition") {
                    sites.push(site(
                        c,
                        pointer_push(&bptr, "condition"),
                        Mode::Condition,
                        body_end,
                    ));
                }
            } else if let Some(over) = str_of(block, "over") {
                sites.push(site(over, pointer_push(&bptr, "over"), Mode::Expr, before));
            }
            for (name, e) in entries_of(block, "collect") {
                if let Some(e) = e.as_str() {
                    let p = pointer_push(&pointer_push(&bptr, "collect"), name);
                    sites.push(site(e, p, Mode::Expr, body_end));
                }
            }
        }
        NodeType::Subgraph => {
            for (name, e) in entries_of(block, "params") {
                if let Some(e) = e.as_str() {
                    let p = pointer_push(&pointer_push(&bptr, "params"), name);
                    sites.push(site(e, p, Mode::Expr, before));
                }
            }
            let child = if block.has("ref") {
                None
            } else {
                ctx.child_scope(si, node)
            };
            for (name, e) in entries_of(block, "outputs_from") {
                if let Some(e) = e.as_str() {
                    let p = pointer_push(&pointer_push(&bptr, "outputs_from"), name);
                    sites.push(site(e, p, Mode::Expr, Anchor::ChildEnd { child }));
                }
            }
        }
        NodeType::Task => {}
    }
}

/// Reports one finding of the reference being checked (its pointer and offset are bound),
/// with the caret on the given segment of the reference's path.
type Push<'p> = dyn Fn(&mut Vec<Finding>, usize, Code, String, String) + 'p;

struct Checker<'c, 'a> {
    ctx: &'c Ctx<'a>,
    infos: Vec<ScopeInfo<'a>>,
    ancestry: Vec<Option<Ancestry>>,
    reads: Reads,
    context_keys: Option<&'a Object>,
    attachments: HashSet<&'a str>,
    out: &'c mut Vec<Finding>,
}

impl<'c, 'a> Checker<'c, 'a> {
    fn check_site(&mut self, site: &Site<'a>) {
        let finding = |code: Code, msg: String, help: &str| {
            Finding::new(code, site.pointer.clone(), msg).help(help.to_string())
        };
        if site.mode != Mode::Template {
            if let Some(at) = weft_agx::has_interpolation(site.text) {
                self.out.push(
                    finding(
                        Code::AG211,
                        "'${{ }}' interpolation used in expression position".to_string(),
                        "this field is already an expression: write it without ${{ }}",
                    )
                    .anchored(site.text.get(at..).unwrap_or_default()),
                );
                return;
            }
            match weft_agx::parse(site.text) {
                Ok(expr) => self.check_expr(&expr, site, 0),
                Err(e) => self.out.push(
                    finding(
                        Code::AG204,
                        format!("invalid expression: {}", e.message),
                        "fix the expression syntax (AGX: see docs/agx.md)",
                    )
                    .anchored(site.text.get(e.offset..).unwrap_or_default()),
                ),
            }
        } else {
            match weft_agx::parse_template(site.text) {
                Ok(t) if t.holes().next().is_none() && is_bare_reference(site.text) => {
                    // AG211's other half: an expression where text is expected would reach
                    // the agent or the person as the literal words "nodes.x.outputs.y".
                    self.out.push(
                        finding(
                            Code::AG211,
                            format!("'{}' is a bare expression in a template position; it would be shown literally", site.text.trim()),
                            "wrap it in ${{ }} to interpolate its value",
                        )
                        .anchored(site.text.trim_start()),
                    );
                }
                Ok(t) => {
                    let holes: Vec<(Expr, usize)> =
                        t.holes().map(|(e, off)| (e.clone(), off)).collect();
                    for (expr, offset) in holes {
                        self.check_expr(&expr, site, offset);
                    }
                }
                Err(e) => self.out.push(
                    finding(
                        Code::AG204,
                        format!("invalid template: {}", e.message),
                        "fix the ${{ }} hole (write $${{ for a literal ${{)",
                    )
                    .anchored(site.text.get(e.offset..).unwrap_or_default()),
                ),
            }
        }
    }

    fn check_expr(&mut self, expr: &Expr, site: &Site<'a>, offset: usize) {
        for e in weft_agx::check_calls(expr) {
            let at = offset + e.span.start;
            let help = match e.kind {
                StaticErrorKind::UnknownFunction => {
                    "AGX has a fixed function set (see docs/agx.md); vendor functions need an x- extension"
                }
                _ => "pass the number of arguments the function takes",
            };
            self.out.push(
                Finding::new(Code::AG204, site.pointer.clone(), e.message)
                    .help(help)
                    .anchored(site.text.get(at..).unwrap_or_default()),
            );
        }
        let before = self.out.len();
        for r in weft_agx::references(expr) {
            self.check_reference(&r, site, offset);
        }
        // Types are only meaningful once every name resolved.
        if self.out.len() == before {
            let env = Env {
                checker: self,
                site,
            };
            let errors = match site.mode {
                Mode::Condition => weft_agx::check_condition(expr, &env),
                _ => weft_agx::infer(expr, &env).1,
            };
            // The spec makes a wrong argument type a run-time evaluation error, governed by
            // `on_expression_error` (DIGEST §2.4, §2.6), not AG204: weft's type checker
            // advises, and the document stays valid.
            for e in errors {
                let at = offset + e.span.start;
                self.out.push(
                    Finding::new(
                        Code::WF909,
                        site.pointer.clone(),
                        format!("type error: {}", e.message),
                    )
                    .help("AGX never converts implicitly: use int(), str(), len() or a comparison")
                    .anchored(site.text.get(at..).unwrap_or_default()),
                );
            }
        }
    }

    /// The scope names resolve in, for an anchor.
    fn resolution_scope(&self, anchor: Anchor) -> Option<usize> {
        match anchor {
            Anchor::Node { scope, .. }
            | Anchor::Edge { scope, .. }
            | Anchor::ScopeEnd { scope, .. } => Some(scope),
            Anchor::ChildEnd { child } => child,
            Anchor::Defaults => None,
        }
    }

    fn check_reference(&mut self, r: &weft_agx::Reference, site: &Site<'a>, offset: usize) {
        let path: Vec<&str> = r.path.iter().map(String::as_str).collect();
        let at = offset + r.span.start;
        let rest = site.text.get(at..).unwrap_or_default();
        let written = rest
            .get(..r.span.end.saturating_sub(r.span.start))
            .unwrap_or(rest);
        let push =
            |out: &mut Vec<Finding>, segment: usize, code: Code, msg: String, help: String| {
                // The caret goes on the word at fault: anchored at the start of the reference
                // (distinctive text) and shifted to the word, on the same line.
                let word = segment_offset(written, r, segment);
                let before = rest.get(..word).unwrap_or_default();
                let finding = Finding::new(code, site.pointer.clone(), msg).help(help);
                out.push(if before.contains('\n') {
                    finding.anchored(rest.get(word..).unwrap_or_default())
                } else {
                    finding.anchored_at(rest, before.chars().count())
                });
            };
        let Some(&root) = path.first() else { return };
        let scope = self.resolution_scope(site.anchor);
        match root {
            "secrets" => push(
                self.out,
                0,
                Code::AG205,
                "expressions must not reference secrets.*".into(),
                "secrets reach a node only through requirements.secrets, never through expressions"
                    .into(),
            ),
            "params" => {
                let Some(s) = scope else { return };
                if let Some(&name) = path.get(1)
                    && !self.infos[s].params.contains_key(name)
                {
                    let help = suggest_or(
                        name,
                        self.infos[s].params.keys().copied(),
                        "declare it under `params:`",
                    );
                    push(
                        self.out,
                        1,
                        Code::AG203,
                        format!("undeclared param '{name}'"),
                        help,
                    );
                }
            }
            "context" => {
                if let Some(&name) = path.get(1)
                    && !self.context_keys.is_some_and(|c| c.contains_key(name))
                {
                    let keys = self
                        .context_keys
                        .into_iter()
                        .flat_map(|c| c.keys().map(String::as_str));
                    let help = suggest_or(name, keys, "declare it under the graph's `context:`");
                    push(
                        self.out,
                        1,
                        Code::AG203,
                        format!("undeclared context key '{name}'"),
                        help,
                    );
                }
            }
            "attachments" => {
                if let Some(&name) = path.get(1)
                    && !self.attachments.contains(name)
                {
                    let help = suggest_or(
                        name,
                        self.attachments.iter().copied(),
                        "declare it under `attachments:`",
                    );
                    push(
                        self.out,
                        1,
                        Code::AG203,
                        format!("undeclared attachment '{name}'"),
                        help,
                    );
                }
            }
            "graph" => {
                if let Some(&field) = path.get(1) {
                    const FIELDS: &[&str] = weft_agx::names::GRAPH_FIELDS;
                    if !FIELDS.contains(&field) {
                        let help = suggest_or(
                            field,
                            FIELDS.iter().copied(),
                            "graph exposes id, title, objective, version and description",
                        );
                        push(
                            self.out,
                            1,
                            Code::AG203,
                            format!("unknown graph field '{field}'"),
                            help,
                        );
                    }
                }
            }
            "env" => match site.anchor {
                Anchor::Node { scope, node, .. } => {
                    if let Some(&name) = path.get(1) {
                        let n = &self.ctx.sets[scope].nodes[node];
                        let req = effective_block(n, self.ctx.defaults(scope), "requirements");
                        let declared = req
                            .as_deref()
                            .is_some_and(|r| strs_of(r, "environment").any(|e| e == name));
                        if !declared {
                            push(
                                self.out,
                                1,
                                Code::AG203,
                                format!("env.{name} is not declared in requirements.environment"),
                                format!("add {name} to this node's requirements.environment"),
                            );
                        }
                    }
                }
                Anchor::Defaults => {}
                _ => push(
                    self.out,
                    0,
                    Code::AG203,
                    "'env' is only available within a node".into(),
                    "read environment variables from a node's own expressions".into(),
                ),
            },
            "outputs" => self.check_outputs_root(&path, site, &push),
            "loop" => {
                let Some(s) = scope else { return };
                match &self.infos[s].loop_collects {
                    None => push(
                        self.out,
                        0,
                        Code::AG203,
                        "'loop' is only available inside a loop body".into(),
                        "read loop.* from a loop's body, condition or collect".into(),
                    ),
                    Some(collects) => match path.get(1).copied() {
                        None => {}
                        Some(f) if f != "previous" && weft_agx::names::LOOP_FIELDS.contains(&f) => {
                        }
                        Some("previous") => {
                            if let Some(&name) = path.get(2)
                                && !collects.contains(&name)
                            {
                                let help = suggest_or(
                                    name,
                                    collects.iter().copied(),
                                    "loop.previous holds the loop's `collect` names",
                                );
                                push(
                                    self.out,
                                    2,
                                    Code::AG206,
                                    format!("loop.previous.{name} is not collected by the loop"),
                                    help,
                                );
                            }
                        }
                        Some(other) => push(
                            self.out,
                            1,
                            Code::AG203,
                            format!("unknown loop field '{other}'"),
                            "loop exposes index, iteration and previous.<collected>".into(),
                        ),
                    },
                }
            }
            "self" => self.check_self(&path[1..], 1, site, &push),
            "nodes" => {
                if path.len() == 1 {
                    // output() with a computed id: reads are unknowable in this scope.
                    if let Some(s) = scope {
                        self.reads.dynamic.insert(s);
                    }
                    return;
                }
                if path[1] == "self" {
                    self.check_self(&path[2..], 2, site, &push);
                    return;
                }
                self.check_node_ref(&path, r.kind, site, &push);
            }
            other => {
                let Some(s) = scope else { return };
                if self.infos[s]
                    .map_names
                    .iter()
                    .any(|&(item, index)| other == item || other == index)
                {
                    return;
                }
                // Every readable root (secrets and the reserved `item` are not).
                let mut roots: Vec<&str> = super::shape::RESERVED_ROOTS
                    .iter()
                    .copied()
                    .filter(|r| !matches!(*r, "secrets" | "item"))
                    .collect();
                for &(item, index) in &self.infos[s].map_names {
                    roots.push(item);
                    roots.push(index);
                }
                let help = suggest_or(
                    other,
                    roots,
                    "expressions start from graph, params, context, attachments, nodes, self, loop, outputs or env",
                );
                push(
                    self.out,
                    0,
                    Code::AG203,
                    format!("unknown reference root '{other}'"),
                    help,
                );
            }
        }
    }

    fn check_outputs_root(&mut self, path: &[&str], site: &Site<'a>, push: &Push<'_>) {
        let names: Option<Vec<&str>> = match site.anchor {
            Anchor::ScopeEnd {
                scope,
                outputs_root: true,
            } => Some(self.infos[scope].outputs.keys().copied().collect()),
            Anchor::ChildEnd { child: Some(c) } => {
                Some(self.infos[c].outputs.keys().copied().collect())
            }
            Anchor::ChildEnd { child: None } | Anchor::Defaults => None,
            Anchor::ScopeEnd { scope, .. } if self.ctx.scopes[scope].is_root() => {
                Some(self.infos[scope].outputs.keys().copied().collect())
            }
            _ => {
                push(
                    self.out,
                    0,
                    Code::AG203,
                    "'outputs' is only available in graph-level scope".into(),
                    "read a node's outputs as nodes.<id>.outputs.<name>".into(),
                );
                return;
            }
        };
        if let (Some(names), Some(&name)) = (names, path.get(1))
            && !names.contains(&name)
        {
            let help = suggest_or(name, names.iter().copied(), "declare it under `outputs:`");
            push(
                self.out,
                1,
                Code::AG203,
                format!("undeclared graph output '{name}'"),
                help,
            );
        }
    }

    /// `rest`: the path after `self` (segment `base` of the whole path is `rest[0]`).
    fn check_self(&mut self, rest: &[&str], base: usize, site: &Site<'a>, push: &Push<'_>) {
        if matches!(site.anchor, Anchor::Defaults) {
            return; // checked where a node inherits it
        }
        let Anchor::Node { scope, node, phase } = site.anchor else {
            push(
                self.out,
                base - 1,
                Code::AG203,
                "'self' is only available within a node".into(),
                "use nodes.<id> outside a node's own fields".into(),
            );
            return;
        };
        let n = &self.ctx.sets[scope].nodes[node];
        match rest.first().copied() {
            None => {}
            Some(f)
                if !matches!(f, "inputs" | "outputs")
                    && weft_agx::names::SELF_FIELDS.contains(&f) => {}
            Some("inputs") => {
                if let Some(&name) = rest.get(1) {
                    let declared: Vec<&str> = entries_of(n.obj, "inputs").map(|(k, _)| k).collect();
                    if !declared.contains(&name) {
                        let help = suggest_or(
                            name,
                            declared.iter().copied(),
                            "declare it under this node's `inputs:`",
                        );
                        push(
                            self.out,
                            base + 1,
                            Code::AG203,
                            format!("self.inputs.{name} is not a declared input"),
                            help,
                        );
                    }
                }
            }
            Some("outputs") => {
                if phase == Phase::BeforeOutputs {
                    push(
                        self.out,
                        base,
                        Code::AG203,
                        "self.outputs is only available after the node produced its outputs".into(),
                        "read self.outputs from criteria, after_outputs checkpoints, fallbacks or escalation messages".into(),
                    );
                    return;
                }
                match rest.get(1) {
                    Some(&name) => {
                        let readable = self.ctx.readable_outputs(scope, n);
                        if !readable.contains(&name) && !n.outputs_are_open() {
                            let help = suggest_or(
                                name,
                                readable.iter().copied(),
                                "declare it under this node's `outputs:`",
                            );
                            push(
                                self.out,
                                base + 1,
                                Code::AG206,
                                format!("self.outputs.{name} is not a declared output"),
                                help,
                            );
                        }
                        self.reads.outputs.insert((scope, node, name.to_string()));
                    }
                    None => self.mark_all_read(scope, node),
                }
            }
            Some(other) => push(
                self.out,
                base,
                Code::AG203,
                format!("unknown self field '{other}'"),
                "self exposes id, attempt, inputs.<name> and outputs.<name>".into(),
            ),
        }
    }

    fn check_node_ref(&mut self, path: &[&str], kind: RefKind, site: &Site<'a>, push: &Push<'_>) {
        let Some(scope) = self.resolution_scope(site.anchor) else {
            return; // an external child: unknown until run time.
        };
        let id = path[1];
        let set = &self.ctx.sets[scope];
        let Some(&target) = set.index.get(id) else {
            if self.is_outside(scope, id) {
                push(
                    self.out,
                    1,
                    Code::AG202,
                    format!("fragment expression references node '{id}' outside the fragment"),
                    "fragments are sealed: pass the value in through the fragment's params".into(),
                );
            } else {
                let meant = did_you_mean(id, set.nodes.iter().map(|n| n.id));
                let help = meant.map_or_else(
                    || "name a node of this scope".to_string(),
                    |best| format!("did you mean '{best}'?"),
                );
                push(
                    self.out,
                    1,
                    Code::AG203,
                    format!("unknown node '{id}'"),
                    help,
                );
                // Report the cause, not its consequences: the node the misspelling most
                // likely meant counts as read, so its outputs are not also "never read".
                if let Some(&target) = meant.and_then(|best| set.index.get(best)) {
                    match (path.get(2).copied(), path.get(3)) {
                        (Some("outputs"), Some(&name)) => {
                            self.reads.outputs.insert((scope, target, name.to_string()));
                        }
                        (None | Some("outputs"), _) => self.mark_all_read(scope, target),
                        _ => {}
                    }
                }
            }
            return;
        };
        if kind == RefKind::StateCall {
            return;
        }
        let field = path.get(2).copied();
        let reads_outputs = match field {
            None => {
                self.mark_all_read(scope, target);
                true
            }
            Some("status" | "attempts" | "duration_seconds") => false,
            Some("decision") => {
                let t = &set.nodes[target];
                // A node of an unknown type (a misspelled `type: gaet`) is AG004's: its
                // having no decision is a consequence, not a second problem.
                if t.node_type()
                    .is_some_and(|ty| !matches!(ty, NodeType::Decision | NodeType::Gate))
                {
                    push(
                        self.out,
                        1,
                        Code::AG206,
                        format!("node '{id}' is not a decision or gate and has no decision"),
                        "read nodes.<id>.decision from decision and gate nodes only".into(),
                    );
                }
                true
            }
            Some("outputs") => {
                let t = &set.nodes[target];
                match path.get(3) {
                    Some(&name) => {
                        let readable = self.ctx.readable_outputs(scope, t);
                        if !readable.contains(&name) && !t.outputs_are_open() {
                            let help = suggest_or(
                                name,
                                readable.iter().copied(),
                                &format!("declare it under the outputs of '{id}'"),
                            );
                            push(
                                self.out,
                                3,
                                Code::AG206,
                                format!("node '{id}' does not declare output '{name}'"),
                                help,
                            );
                        }
                        self.reads.outputs.insert((scope, target, name.to_string()));
                    }
                    None => self.mark_all_read(scope, target),
                }
                true
            }
            Some(other) => {
                let help = suggest_or(
                    other,
                    weft_agx::names::NODE_FIELDS.iter().copied(),
                    "a node exposes status, outputs, attempts, duration_seconds and decision",
                );
                push(
                    self.out,
                    2,
                    Code::AG203,
                    format!("unknown node field '{other}'"),
                    help,
                );
                false
            }
        };
        if !reads_outputs {
            return;
        }
        let (reader, allowed) = match site.anchor {
            Anchor::Node { node, .. } => (
                Some(node),
                target == node || self.precedes(scope, target, node),
            ),
            Anchor::Edge { source, .. } => (
                None,
                target == source || self.precedes(scope, target, source),
            ),
            _ => (None, true),
        };
        if let Some(reader) = reader
            && target != reader
        {
            self.reads
                .sources
                .entry((scope, reader))
                .or_default()
                .insert(target);
        }
        if !allowed {
            let reader_id = match site.anchor {
                Anchor::Node { node, .. } => set.nodes[node].id,
                Anchor::Edge { source, .. } => set.nodes[source].id,
                _ => "",
            };
            push(
                self.out,
                1,
                Code::AG201,
                format!(
                    "node '{reader_id}' reads outputs of '{id}', which is not a transitive predecessor"
                ),
                format!(
                    "add depends_on: [{id}] (or an edge from '{id}') so its outputs exist when '{reader_id}' runs"
                ),
            );
        }
    }

    /// Is `id` a node of an enclosing scope or of another fragment (a sealed-scope read)?
    fn is_outside(&self, scope: usize, id: &str) -> bool {
        if self.ctx.scopes[scope].is_root() {
            return false;
        }
        let mut at = self.infos[scope].parent;
        while let Some(p) = at {
            if self.ctx.sets[p].index.contains_key(id) {
                return true;
            }
            at = self.infos[p].parent;
        }
        // Named fragments may be used from anywhere: any other scope's node counts.
        matches!(self.ctx.scopes[scope].kind, ScopeKind::Named(_))
            && self.ctx.sets.iter().any(|s| s.index.contains_key(id))
    }

    fn precedes(&mut self, scope: usize, a: usize, b: usize) -> bool {
        let set = &self.ctx.sets[scope];
        self.ancestry[scope]
            .get_or_insert_with(|| Ancestry::new(set))
            .precedes(a, b)
    }

    fn mark_all_read(&mut self, scope: usize, node: usize) {
        let n = &self.ctx.sets[scope].nodes[node];
        for name in self.ctx.readable_outputs(scope, n) {
            self.reads.outputs.insert((scope, node, name.to_string()));
        }
    }

    /// Loop `carry` (AG206 / AG203) and criterion `output:` fields (AG206, and a read).
    fn check_carry_and_criteria(&mut self, si: usize) {
        let set = &self.ctx.sets[si];
        for node in &set.nodes {
            if let Some(success) = node.obj("success") {
                let cptr = pointer_push(&node.ptr("success"), "criteria");
                let readable = self.ctx.readable_outputs(si, node);
                for (i, c) in arr_of(success, "criteria").iter().enumerate() {
                    let Some(name) = c.field("output").and_then(Value::as_str) else {
                        continue;
                    };
                    if !readable.contains(&name) && !node.outputs_are_open() {
                        let help = suggest_or(
                            name,
                            readable.iter().copied(),
                            "name an output this node declares",
                        );
                        self.out.push(
                            Finding::new(
                                Code::AG206,
                                pointer_push(&pointer_push(&cptr, &i.to_string()), "output"),
                                format!("criterion references undeclared output '{name}'"),
                            )
                            .help(help),
                        );
                    }
                    self.reads
                        .outputs
                        .insert((si, node.index, name.to_string()));
                }
            }
            if node.node_type() != Some(NodeType::Loop) {
                continue;
            }
            let Some(block) = node.block() else { continue };
            let Some(child) = self.ctx.child_scope(si, node) else {
                continue;
            };
            let body = &self.ctx.sets[child];
            let produced: HashSet<&str> = body
                .nodes
                .iter()
                .flat_map(|n| self.ctx.readable_outputs(child, n))
                .collect();
            let params: Vec<&str> = self.ctx.scopes[child].param_names().collect();
            let carry_ptr = pointer_push(&node.ptr("loop"), "carry");
            for (out_name, param) in entries_of(block, "carry") {
                let p = pointer_push(&carry_ptr, out_name);
                if !produced.contains(out_name) {
                    self.out.push(
                        Finding::new(Code::AG206, p.clone(), format!("carry source '{out_name}' is not produced by any node in the loop body"))
                            .help(suggest_or(out_name, produced.iter().copied(), "carry keys name outputs of the body's nodes")),
                    );
                } else {
                    for (bi, bn) in body.nodes.iter().enumerate() {
                        if self.ctx.readable_outputs(child, bn).contains(&out_name) {
                            self.reads.outputs.insert((child, bi, out_name.to_string()));
                        }
                    }
                }
                if let Some(param) = param.as_str()
                    && !params.contains(&param)
                {
                    self.out.push(
                        Finding::new(
                            Code::AG203,
                            p,
                            format!("carry target '{param}' is not a param of the loop body"),
                        )
                        .help(suggest_or(
                            param,
                            params.iter().copied(),
                            "declare it under the body's `params:`",
                        )),
                    );
                }
            }
        }
    }
}

/// Is `text` nothing but a dotted reference to run data (`nodes.a.outputs.b`, `params.x`)?
fn is_bare_reference(text: &str) -> bool {
    const ROOTS: [&str; 8] = [
        "nodes",
        "params",
        "context",
        "attachments",
        "self",
        "outputs",
        "loop",
        "env",
    ];
    let trimmed = text.trim();
    !trimmed.contains(char::is_whitespace)
        && matches!(
            weft_agx::parse(trimmed),
            Ok(Expr::Path { segments, .. }) if segments.len() >= 2 && ROOTS.contains(&segments[0].as_str())
        )
}

/// Byte offset, within `written` (the reference as written), of the word of `segment` of
/// its path: `chek` in `nodes.chek.outputs.x`, `"chek"` in `output("chek", "x")`. 0 (the
/// start of the reference) for a segment that is not written as a word of its own.
fn segment_offset(written: &str, r: &weft_agx::Reference, segment: usize) -> usize {
    let (mut from, sequence): (usize, Vec<usize>) = match r.kind {
        RefKind::Path => (0, (0..=segment).collect()),
        RefKind::OutputCall | RefKind::StateCall => {
            let words: &[usize] = if r.kind == RefKind::OutputCall {
                &[1, 3]
            } else {
                &[1]
            };
            (
                written.find('(').map_or(0, |i| i + 1),
                words.iter().copied().filter(|&k| k <= segment).collect(),
            )
        }
    };
    if sequence.last() != Some(&segment) {
        return 0;
    }
    let mut at = 0;
    for k in sequence {
        let Some(word) = r.path.get(k) else { return 0 };
        let Some(i) = written.get(from..).and_then(|t| t.find(word.as_str())) else {
            return 0;
        };
        at = from + i;
        from = at + word.len();
    }
    at
}

fn suggest_or<'s>(
    name: &str,
    candidates: impl IntoIterator<Item = &'s str>,
    fallback: &str,
) -> String {
    match did_you_mean(name, candidates) {
        Some(best) => format!("did you mean '{best}'?"),
        None => fallback.to_string(),
    }
}

/// Declared types for the static type checker.
struct Env<'e, 'c, 'a> {
    checker: &'e Checker<'c, 'a>,
    site: &'e Site<'a>,
}

fn value_type(spec: &Object) -> Ty {
    match str_of(spec, "type") {
        Some("string" | "text" | "markdown" | "file" | "directory" | "reference") => Ty::String,
        Some("number") => Ty::Number,
        Some("integer") => Ty::Integer,
        Some("boolean") => Ty::Bool,
        Some("object" | "artifact") => Ty::Object,
        Some("array" | "file_set") => Ty::Array,
        _ => Ty::Any,
    }
}

fn literal_type(v: &Value) -> Ty {
    match v {
        Value::Null => Ty::Null,
        Value::Bool(_) => Ty::Bool,
        Value::Number(n) if n.is_f64() => Ty::Number,
        Value::Number(_) => Ty::Integer,
        Value::String(_) => Ty::String,
        Value::Array(_) => Ty::Array,
        Value::Object(_) => Ty::Object,
    }
}

impl TypeEnv for Env<'_, '_, '_> {
    fn type_of(&self, path: &[&str]) -> Ty {
        let c = self.checker;
        let scope = c.resolution_scope(self.site.anchor);
        let spec_type = |spec: Option<&Value>| {
            spec.and_then(Value::as_object)
                .map(value_type)
                .unwrap_or(Ty::Any)
        };
        match path {
            ["params", name] => scope
                .and_then(|s| c.infos[s].params.get(name))
                .map(|o| value_type(o))
                .unwrap_or(Ty::Any),
            ["context", name] => c
                .context_keys
                .and_then(|k| k.get(*name))
                .map(literal_type)
                .unwrap_or(Ty::Any),
            ["loop", "index" | "iteration"] | ["self", "attempt"] => Ty::Integer,
            ["self", "id"] => Ty::String,
            ["nodes", _, "status" | "decision"] => Ty::String,
            ["nodes", _, "attempts"] => Ty::Integer,
            ["nodes", _, "duration_seconds"] => Ty::Number,
            ["nodes", id, "outputs", name] => {
                let Some(s) = scope else { return Ty::Any };
                let set = &c.ctx.sets[s];
                set.index
                    .get(id)
                    .map(|&i| &set.nodes[i])
                    .map(|n| spec_type(obj_of(n.obj, "outputs").and_then(|o| o.get(*name))))
                    .unwrap_or(Ty::Any)
            }
            ["self", "outputs" | "inputs", name] => match self.site.anchor {
                Anchor::Node { scope, node, .. } => {
                    let n = &c.ctx.sets[scope].nodes[node];
                    spec_type(obj_of(n.obj, path[1]).and_then(|o| o.get(*name)))
                }
                _ => Ty::Any,
            },
            _ => Ty::Any,
        }
    }
}

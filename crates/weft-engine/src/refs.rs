//! Local subgraph references (`subgraph.ref`), loaded and checked before anything runs.
//!
//! A plan is untrusted input, and a `ref` makes it name other files, so each reference is
//! held to these rules (`docs/engine.md`, "Subgraph references"):
//! - **local only**: a `uri` that does not start with `.` or `/` (a URL, a bare name) is
//!   refused (**WF101**); weft never fetches a plan over the network;
//! - resolved against the directory of the document that holds it (**WF102** when it cannot
//!   be read), and it must stay inside the **boundary** directory (the project) once
//!   symlinks are resolved (**WF103**);
//! - the child must load and validate (its own findings, with its own file:line:col);
//! - `expected_id` must equal the child's `id` (**RT052**) and `integrity`, when given, the
//!   child's graph digest (**RT051**);
//! - keys of `subgraph.params` must be params the child declares (AG203), and the child's
//!   required params without a default must be given (AG301);
//! - no file may reference itself through any chain of refs (**AG131**, with the chain);
//! - nesting is bounded by the top document's `constraints.max_subgraph_depth` (default 5,
//!   **WF104**), counting subgraph, loop and map scopes together across documents: a child
//!   continues from the depth of the `subgraph` node that names it (`nesting.rs`); and the
//!   references walked in all are bounded by [`RefOptions::max_refs`] (**WF105**), so a plan
//!   cannot make the loader do unbounded work by referencing one child many times at every
//!   level.
//!
//! The WF1xx codes are weft's own refusals (severity `refusal` in `weft_ags`): the document
//! stays valid AGS, weft will not run it.
//!
//! Every problem is reported, each at the position of the `ref` in the referring file.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use weft_ags::Code;
use weft_ags::load::{Document, Limits};
use weft_ags::model::{Fields, NodeType, entries_of, obj_of, scopes, str_of};

/// How far references may reach.
#[derive(Clone, Debug)]
pub struct RefOptions {
    /// Every referenced file must resolve inside this directory.
    pub boundary: PathBuf,
    /// Most references walked in all, counting a file once per place that names it.
    pub max_refs: usize,
    /// Loader limits for each child.
    pub limits: Limits,
}

impl RefOptions {
    pub fn new(boundary: impl Into<PathBuf>) -> RefOptions {
        RefOptions {
            boundary: boundary.into(),
            max_refs: 256,
            limits: Limits::default(),
        }
    }
}

/// A referenced document, loaded and checked, with its own references.
#[derive(Clone, Debug)]
pub struct ChildRef {
    /// The JSON pointer of the `subgraph` node in the referring document.
    pub node_pointer: String,
    pub uri: String,
    /// The child's file, symlinks resolved.
    pub path: PathBuf,
    /// The child's graph digest (`sha256-…`).
    pub digest: String,
    pub document: Arc<Value>,
    pub children: Vec<ChildRef>,
}

/// A [`ChildRef`] as `run_started.refs` logs it (v1 addition), so a resume without the
/// document's file still has every local child, exactly as it was checked at the start.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoggedRef {
    pub node_pointer: String,
    pub uri: String,
    /// The child's file when the run started (informational).
    pub path: String,
    pub digest: String,
    pub document: Value,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<LoggedRef>,
}

impl From<&ChildRef> for LoggedRef {
    fn from(c: &ChildRef) -> LoggedRef {
        LoggedRef {
            node_pointer: c.node_pointer.clone(),
            uri: c.uri.clone(),
            path: c.path.display().to_string(),
            digest: c.digest.clone(),
            document: (*c.document).clone(),
            children: c.children.iter().map(LoggedRef::from).collect(),
        }
    }
}

impl From<LoggedRef> for ChildRef {
    fn from(l: LoggedRef) -> ChildRef {
        ChildRef {
            node_pointer: l.node_pointer,
            uri: l.uri,
            path: PathBuf::from(l.path),
            digest: l.digest,
            document: Arc::new(l.document),
            children: l.children.into_iter().map(ChildRef::from).collect(),
        }
    }
}

/// One problem with a reference, positioned in the file that holds it (or, for a child that
/// fails to load or validate, in the child).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefProblem {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
    pub pointer: String,
    /// The code: `RT051`, `RT052`, `AG131`, `AG203`, `AG301`, the child's own finding's
    /// code, or weft's refusal `WF101`–`WF105` (a `ref` weft does not load).
    pub code: Option<String>,
    pub message: String,
    pub help: Option<String>,
}

impl fmt::Display for RefProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file.display(), self.line, self.column)?;
        if let Some(code) = &self.code {
            write!(f, "{code}: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(help) = &self.help {
            write!(f, " (help: {help})")?;
        }
        Ok(())
    }
}

/// Loads and checks every `subgraph.ref` of `top` (read from `top_file`), recursively.
/// Returns the children in document order, or every problem found.
pub fn load_refs(
    top_file: &Path,
    top: &Document,
    options: &RefOptions,
) -> Result<Vec<ChildRef>, Vec<RefProblem>> {
    let boundary = match options.boundary.canonicalize() {
        Ok(b) => b,
        Err(e) => {
            return Err(vec![RefProblem {
                file: options.boundary.clone(),
                line: 1,
                column: 1,
                pointer: String::new(),
                code: Some(Code::WF102.as_str().into()),
                message: format!("the project directory cannot be read: {e}"),
                help: None,
            }]);
        }
    };
    let max_depth = top
        .value
        .get("constraints")
        .and_then(|c| c.get("max_subgraph_depth"))
        .and_then(Value::as_u64)
        .unwrap_or(5);
    let top_path = top_file
        .canonicalize()
        .unwrap_or_else(|_| top_file.to_path_buf());
    let mut walker = Walker {
        boundary,
        max_depth,
        options,
        cache: HashMap::new(),
        walked: 0,
        exhausted: false,
        problems: Vec::new(),
    };
    // Problems in the top document name it as the caller did; children by their real path.
    let children = walker.walk(top_file, top, &mut vec![top_path.clone()], 0);
    if walker.problems.is_empty() {
        Ok(children)
    } else {
        Err(walker.problems)
    }
}

/// A child loaded once, shared by every place that names it.
#[derive(Clone)]
enum Loaded {
    Ok(Arc<Document>, String),
    /// Loading or validating failed; the problems were reported the first time.
    Failed,
}

struct Walker<'o> {
    boundary: PathBuf,
    max_depth: u64,
    options: &'o RefOptions,
    cache: HashMap<PathBuf, Loaded>,
    walked: usize,
    /// The reference budget ran out: reported once, then nothing more is walked.
    exhausted: bool,
    problems: Vec<RefProblem>,
}

/// A `ref` found in a document.
struct Site<'a> {
    node_pointer: String,
    uri: &'a str,
    integrity: Option<&'a str>,
    expected_id: Option<&'a str>,
    params: Vec<&'a str>,
}

fn sites(doc: &Value) -> Vec<Site<'_>> {
    let Some(root) = doc.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for scope in scopes(root) {
        for node in scope.nodes() {
            if node.node_type() != Some(NodeType::Subgraph) {
                continue;
            }
            let Some(block) = obj_of(node.obj, "subgraph") else {
                continue;
            };
            let Some(r) = obj_of(block, "ref") else {
                continue;
            };
            let Some(uri) = str_of(r, "uri") else {
                continue; // the validator reported the missing uri
            };
            out.push(Site {
                node_pointer: node.pointer.clone(),
                uri,
                integrity: str_of(r, "integrity"),
                expected_id: str_of(r, "expected_id"),
                params: entries_of(block, "params").map(|(k, _)| k).collect(),
            });
        }
    }
    out
}

impl Walker<'_> {
    /// Walks the references of `doc`, whose top-level scope is at nesting depth `base`
    /// (0 for the top document; a child continues from the `subgraph` node naming it).
    fn walk(
        &mut self,
        file: &Path,
        doc: &Document,
        stack: &mut Vec<PathBuf>,
        base: u64,
    ) -> Vec<ChildRef> {
        let mut children = Vec::new();
        let ref_sites = doc
            .value
            .as_object()
            .map(|root| crate::nesting::measure(root, self.max_depth + 1).ref_sites)
            .unwrap_or_default();
        for site in sites(&doc.value) {
            // A fragment defined but never used holds its refs at the document's top level.
            let depth = base + ref_sites.get(&site.node_pointer).copied().unwrap_or(1);
            let at = |field: &str, code: Option<&str>, message: String, help: Option<String>| {
                problem(
                    file,
                    doc,
                    format!("{}/subgraph/ref{field}", site.node_pointer),
                    code,
                    message,
                    help,
                )
            };
            if self.exhausted {
                return children;
            }
            self.walked += 1;
            if self.walked > self.options.max_refs {
                self.exhausted = true;
                let p = at(
                    "/uri",
                    Some(Code::WF105.as_str()),
                    format!(
                        "more than {} subgraph references in all: refusing to load more",
                        self.options.max_refs
                    ),
                    Some("reference fewer documents, or reuse a fragment with `use`".into()),
                );
                self.problems.push(p);
                return children;
            }
            if !(site.uri.starts_with('.') || site.uri.starts_with('/')) {
                let p = at(
                    "/uri",
                    Some(Code::WF101.as_str()),
                    format!("`{}` is not a local file: weft loads subgraph references only from local paths", site.uri),
                    Some("copy the child next to this document and reference it as `./name.agraph.yaml`".into()),
                );
                self.problems.push(p);
                continue;
            }
            if depth > self.max_depth {
                let p = at(
                    "/uri",
                    Some(Code::WF104.as_str()),
                    format!(
                        "`{}` would nest subgraph, loop and map scopes {depth} deep; constraints.max_subgraph_depth is {}",
                        site.uri, self.max_depth
                    ),
                    Some("flatten the nesting or raise constraints.max_subgraph_depth".into()),
                );
                self.problems.push(p);
                continue;
            }
            let base = file.parent().unwrap_or_else(|| Path::new("."));
            let path = match base.join(site.uri).canonicalize() {
                Ok(p) => p,
                Err(e) => {
                    let p = at(
                        "/uri",
                        Some(Code::WF102.as_str()),
                        format!("`{}` cannot be read: {e}", site.uri),
                        Some(format!("the path is resolved against {}", base.display())),
                    );
                    self.problems.push(p);
                    continue;
                }
            };
            if !path.starts_with(&self.boundary) {
                let p = at(
                    "/uri",
                    Some(Code::WF103.as_str()),
                    format!(
                        "`{}` resolves to {}, outside the project directory {}",
                        site.uri,
                        path.display(),
                        self.boundary.display()
                    ),
                    Some("keep referenced plans inside the project".into()),
                );
                self.problems.push(p);
                continue;
            }
            if let Some(i) = stack.iter().position(|p| *p == path) {
                let chain: Vec<String> = stack[i..]
                    .iter()
                    .chain(std::iter::once(&path))
                    .map(|p| short(p, &self.boundary))
                    .collect();
                let p = at(
                    "/uri",
                    Some("AG131"),
                    format!("recursive subgraph reference: {}", chain.join(" -> ")),
                    Some("a plan cannot contain itself; break the cycle".into()),
                );
                self.problems.push(p);
                continue;
            }
            let Loaded::Ok(child, digest) = self.load(&path) else {
                continue;
            };
            let child_id = child.value.get("id").and_then(Value::as_str).unwrap_or("");
            if let Some(expected) = site.expected_id
                && expected != child_id
            {
                let p = at(
                    "/expected_id",
                    Some("RT052"),
                    format!("`{}` has id `{child_id}`, expected `{expected}`", site.uri),
                    Some("point the ref at the intended document, or fix expected_id".into()),
                );
                self.problems.push(p);
            }
            if let Some(integrity) = site.integrity
                && integrity != digest
            {
                let p = at(
                    "/integrity",
                    Some("RT051"),
                    format!(
                        "`{}` has digest {digest}, not the pinned {integrity}",
                        site.uri
                    ),
                    Some(format!(
                        "if the change is intended, pin the new digest (`weft digest {}`)",
                        short(&path, &self.boundary)
                    )),
                );
                self.problems.push(p);
            }
            self.check_params(&site, &child, file, doc);
            if let Some(inside) = child.value.as_object().map(|root| {
                crate::nesting::measure(root, self.max_depth + 1 - depth.min(self.max_depth))
            }) && depth + inside.deepest > self.max_depth
            {
                let p = at(
                    "/uri",
                    Some(Code::WF104.as_str()),
                    format!(
                        "`{}` nests subgraph, loop and map scopes {} deep here (`{}` inside it); constraints.max_subgraph_depth is {}",
                        site.uri,
                        depth + inside.deepest,
                        inside.path.join(" > "),
                        self.max_depth
                    ),
                    Some("flatten the nesting or raise constraints.max_subgraph_depth".into()),
                );
                self.problems.push(p);
                continue;
            }
            stack.push(path.clone());
            let grandchildren = self.walk(&path, &child, stack, depth);
            stack.pop();
            children.push(ChildRef {
                node_pointer: site.node_pointer.clone(),
                uri: site.uri.to_string(),
                path,
                digest,
                document: Arc::new(child.value.clone()),
                children: grandchildren,
            });
        }
        children
    }

    /// Params given that the child does not declare (AG203), and required child params
    /// left without a value (AG301).
    fn check_params(&mut self, site: &Site<'_>, child: &Document, file: &Path, doc: &Document) {
        let Some(child_root) = child.value.as_object() else {
            return;
        };
        let declared: Vec<(&str, &Value)> = entries_of(child_root, "params").collect();
        let mut push = |pointer: String, code: &str, message: String, help: String| {
            self.problems
                .push(problem(file, doc, pointer, Some(code), message, Some(help)));
        };
        for given in &site.params {
            if !declared.iter().any(|(name, _)| name == given) {
                let names: Vec<&str> = declared.iter().map(|(n, _)| *n).collect();
                push(
                    format!("{}/subgraph/params/{given}", site.node_pointer),
                    "AG203",
                    format!("`{}` declares no param `{given}`", site.uri),
                    format!(
                        "its params are: {}",
                        if names.is_empty() {
                            "(none)".to_string()
                        } else {
                            names.join(", ")
                        }
                    ),
                );
            }
        }
        for (name, spec) in &declared {
            let required = spec
                .get("required")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            let has_default = spec.as_object().is_some_and(|s| s.has("default"));
            if required && !has_default && !site.params.contains(name) {
                push(
                    format!("{}/subgraph", site.node_pointer),
                    "AG301",
                    format!(
                        "`{}` requires param `{name}`, which this subgraph does not pass",
                        site.uri
                    ),
                    format!("add `params: {{{name}: <expression>}}` to the subgraph block"),
                );
            }
        }
    }

    /// Loads and validates a child once.
    fn load(&mut self, path: &Path) -> Loaded {
        if let Some(l) = self.cache.get(path) {
            return l.clone();
        }
        let loaded = match weft_ags::load::read_file(path, &self.options.limits) {
            Ok(l) => l,
            Err(e) => {
                self.problems.push(RefProblem {
                    file: path.to_path_buf(),
                    line: 1,
                    column: 1,
                    pointer: String::new(),
                    code: Some(Code::WF102.as_str().into()),
                    message: format!("cannot read the referenced plan: {e}"),
                    help: None,
                });
                self.cache.insert(path.to_path_buf(), Loaded::Failed);
                return Loaded::Failed;
            }
        };
        let mut findings = loaded.findings;
        let result = match loaded.document {
            Some(doc) => {
                findings.extend(weft_ags::validate::validate_document(&doc));
                if findings.iter().any(weft_ags::Finding::is_error) {
                    Loaded::Failed
                } else {
                    let digest = weft_ags::digest::graph_digest(&doc.value);
                    Loaded::Ok(Arc::new(doc), digest)
                }
            }
            None => Loaded::Failed,
        };
        for f in findings.iter().filter(|f| f.is_error()) {
            self.problems.push(RefProblem {
                file: path.to_path_buf(),
                line: f.line.unwrap_or(1),
                column: f.column.unwrap_or(1),
                pointer: f.pointer.clone(),
                code: Some(f.code.as_str().to_string()),
                message: f.message.clone(),
                help: f.help.clone(),
            });
        }
        self.cache.insert(path.to_path_buf(), result.clone());
        result
    }
}

/// A problem at `pointer` of `doc` (read from `file`).
fn problem(
    file: &Path,
    doc: &Document,
    pointer: String,
    code: Option<&str>,
    message: String,
    help: Option<String>,
) -> RefProblem {
    let (line, column) = weft_ags::load::positions_of(&doc.source, &[&pointer])
        .first()
        .copied()
        .unwrap_or((1, 1));
    RefProblem {
        file: file.to_path_buf(),
        line,
        column,
        pointer,
        code: code.map(str::to_string),
        message,
        help,
    }
}

/// `path` relative to the boundary when inside it, for short messages.
fn short(path: &Path, boundary: &Path) -> String {
    path.strip_prefix(boundary)
        .unwrap_or(path)
        .display()
        .to_string()
}

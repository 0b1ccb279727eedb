//! Checking a tool's results against the `outputSchema` it declared.
//!
//! The reference SDK clients check every non-error `CallToolResult` of a
//! tool that declared an `outputSchema` (JSON Schema 2020-12 unless the
//! schema names another draft): a result without `structuredContent`, or
//! one that does not conform, raises in the agent although the wire said
//! success. [`OutputSchema::check`] gives the same verdict as a
//! [`Contract`]: kept, or where the first violation is and which keyword
//! failed, never a value.
//!
//! A schema comes from the server, so it may be hostile. Before it is
//! compiled it is walked once with its local `$ref`s expanded, within a
//! budget of nodes ([`MAX_EXPANDED_NODES`]): a schema that is too large, or
//! whose references multiply (an `anyOf` of two references to the level
//! below, forty levels deep, would take 2^40 steps to check), is skipped,
//! not compiled. Patterns run on a linear-time regex engine with bounded
//! program sizes, so no `pattern` can backtrack for ever; formats are
//! annotations, as in the reference clients; nothing is ever fetched (a
//! reference outside the schema makes it skipped). A checked instance
//! costs at most its size times the expanded schema's.

use std::collections::HashSet;

use serde_json::{Map, Value};
use shared::escape;
use shared::record::{Contract, MAX_CONTRACT_AT};

/// The most nodes a schema may have once its local `$ref`s are expanded
/// (each reference followed once per place it is used; a reference back
/// into itself counts once).
pub const MAX_EXPANDED_NODES: usize = 20_000;

/// The most nesting a schema may have, in JSON values.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// The compiled size of a regex in a `pattern`, and of its lazy DFA.
const REGEX_SIZE: usize = 1 << 20;

/// What a compiled schema holds, estimated per node of the schema.
const BYTES_PER_NODE: usize = 256;

/// Why a schema is not checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// It has more nodes than [`MAX_EXPANDED_NODES`] once its references
    /// are expanded, or nests deeper than [`MAX_SCHEMA_DEPTH`].
    TooCostly,
    /// It is not a schema this checker compiles offline: invalid against
    /// its metaschema, a reference outside itself, a pattern the regex
    /// engine does not take, or a reference that leads back to itself
    /// without stepping into the instance (`{"$ref": "#"}`), on which the
    /// reference clients recurse until they fail on every result.
    Invalid,
}

/// A tool's `outputSchema`, compiled.
#[derive(Debug)]
pub struct OutputSchema {
    validator: jsonschema::Validator,
    /// The property names the schema declares (`properties` keys and
    /// `required` entries), as JSON Pointer tokens.
    declared: HashSet<Box<str>>,
    /// What it holds, estimated.
    bytes: usize,
}

impl OutputSchema {
    /// Compiles `schema`, unless it is too costly or not a schema this
    /// checker takes.
    pub fn compile(schema: &Value) -> Result<OutputSchema, Skipped> {
        OutputSchema::compile_within(schema, usize::MAX)
    }

    /// Compiles `schema` if what it would hold ([`OutputSchema::bytes`])
    /// fits in `budget`: a schema that does not is found too costly by
    /// the walk, before anything is compiled, so a list of many schemas
    /// costs no more work than its budget allows.
    pub fn compile_within(schema: &Value, budget: usize) -> Result<OutputSchema, Skipped> {
        let mut walk = Walk {
            root: schema,
            max_nodes: MAX_EXPANDED_NODES.min(budget / BYTES_PER_NODE),
            nodes: 0,
            declared: HashSet::new(),
            expanding: Vec::new(),
            into: 0,
        };
        walk.node(schema, 0)?;
        let validator = jsonschema::options()
            .should_validate_formats(false)
            .with_pattern_options(
                jsonschema::PatternOptions::regex()
                    .size_limit(REGEX_SIZE)
                    .dfa_size_limit(REGEX_SIZE),
            )
            .build(schema)
            .map_err(|_| Skipped::Invalid)?;
        let names: usize = walk.declared.iter().map(|n| n.len() + 32).sum();
        let bytes = walk.nodes * BYTES_PER_NODE + names;
        if bytes > budget {
            return Err(Skipped::TooCostly);
        }
        Ok(OutputSchema {
            validator,
            bytes,
            declared: walk.declared,
        })
    }

    /// What the compiled schema holds in memory, estimated.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether a result's `structuredContent` (`None`: the result had none)
    /// keeps the schema.
    pub fn check(&self, structured: Option<&Value>) -> Contract<'static> {
        let Some(value) = structured else {
            return broken(String::new(), "required");
        };
        let Some(error) = self.validator.iter_errors(value).next() else {
            return Contract::kept();
        };
        let mut at = String::new();
        for token in error.instance_path().as_str().split('/').skip(1) {
            self.push(&mut at, token);
        }
        if let jsonschema::error::ValidationErrorKind::Required {
            property: Value::String(name),
        } = error.kind()
        {
            self.push(&mut at, &pointer_token(name));
        }
        broken(at, error.kind().keyword())
    }

    /// Adds `token` to `at`: as it is when the schema declares it, else
    /// `*`; nothing past [`MAX_CONTRACT_AT`].
    fn push(&self, at: &mut String, token: &str) {
        let token = if self.declared.contains(token) {
            token
        } else {
            "*"
        };
        if at.len() + 1 + token.len() <= MAX_CONTRACT_AT {
            at.push('/');
            at.push_str(token);
        }
    }
}

fn broken(at: String, keyword: &str) -> Contract<'static> {
    Contract {
        kept: false,
        at: Some(at.into()),
        keyword: Some(keyword.to_owned().into()),
    }
}

/// A name as a JSON Pointer token (RFC 6901), cleaned as names from the
/// wire are.
fn pointer_token(name: &str) -> String {
    escape::clean_name(name)
        .replace('~', "~0")
        .replace('/', "~1")
}

/// The keywords whose subschemas apply to a part of the instance, not
/// to the instance itself: a reference loop through one of them ends
/// where the instance does.
const INTO_INSTANCE: [&str; 10] = [
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
];

/// One walk over a schema with its local references expanded.
struct Walk<'a> {
    root: &'a Value,
    /// The most nodes it may visit.
    max_nodes: usize,
    nodes: usize,
    declared: HashSet<Box<str>>,
    /// The references being expanded, outermost first, each with how many
    /// steps into the instance the walk had taken when it was met.
    expanding: Vec<(&'a str, usize)>,
    /// Steps into the instance on the way to the current node.
    into: usize,
}

impl<'a> Walk<'a> {
    fn node(&mut self, value: &'a Value, depth: usize) -> Result<(), Skipped> {
        self.nodes += 1;
        if self.nodes > self.max_nodes || depth > MAX_SCHEMA_DEPTH {
            return Err(Skipped::TooCostly);
        }
        match value {
            Value::Object(map) => {
                self.declare(map);
                for (key, member) in map {
                    if key == "$ref" || key == "$dynamicRef" {
                        self.reference(member, depth)?;
                    } else {
                        let into = INTO_INSTANCE.contains(&key.as_str());
                        self.into += usize::from(into);
                        let walked = self.node(member, depth + 1);
                        self.into -= usize::from(into);
                        walked?;
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.node(item, depth + 1)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Notes the names an object schema declares.
    fn declare(&mut self, map: &Map<String, Value>) {
        if let Some(Value::Object(properties)) = map.get("properties") {
            for name in properties.keys() {
                self.declared.insert(pointer_token(name).into());
            }
        }
        if let Some(Value::Array(required)) = map.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                self.declared.insert(pointer_token(name).into());
            }
        }
    }

    /// Follows a local reference (`#` and a JSON Pointer) where it is used;
    /// one back into a reference being expanded is counted once, unless
    /// the walk took no step into the instance since: that loop never ends
    /// (see [`Skipped::Invalid`]). Anchors and references outside the
    /// schema are left to the compiler.
    fn reference(&mut self, reference: &'a Value, depth: usize) -> Result<(), Skipped> {
        let Some(target) = reference.as_str() else {
            return Ok(());
        };
        let Some(pointer) = target.strip_prefix('#') else {
            return Ok(());
        };
        if let Some(&(_, into)) = self.expanding.iter().find(|(t, _)| *t == target) {
            return if into == self.into {
                Err(Skipped::Invalid)
            } else {
                Ok(())
            };
        }
        let Some(resolved) = self.root.pointer(&percent_decoded(pointer)) else {
            return Ok(());
        };
        self.expanding.push((target, self.into));
        let walked = self.node(resolved, depth + 1);
        self.expanding.pop();
        walked
    }
}

/// A URI fragment's `%XX` escapes decoded (JSON Pointers in `$ref` are
/// URI fragments); an invalid escape is kept as written.
fn percent_decoded(fragment: &str) -> String {
    if !fragment.contains('%') {
        return fragment.to_owned();
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verdict(schema: Value, structured: Option<Value>) -> (bool, Option<String>, Option<String>) {
        let c = OutputSchema::compile(&schema)
            .expect("compiles")
            .check(structured.as_ref());
        (
            c.kept,
            c.at.map(|a| a.into_owned()),
            c.keyword.map(|k| k.into_owned()),
        )
    }

    fn broke(at: &str, keyword: &str) -> (bool, Option<String>, Option<String>) {
        (false, Some(at.into()), Some(keyword.into()))
    }

    fn status() -> Value {
        json!({"type": "object",
               "properties": {"status": {"enum": ["ready", "pending"]},
                              "items": {"type": "array", "items": {
                                  "type": "object", "properties": {"n": {"type": "integer"}}}}},
               "required": ["status"]})
    }

    #[test]
    fn a_conforming_result_keeps_it() {
        let ok = verdict(
            status(),
            Some(json!({"status": "ready", "items": [{"n": 1}]})),
        );
        assert_eq!(ok, (true, None, None));
    }

    #[test]
    fn violations_name_declared_places_and_keywords_never_values() {
        assert_eq!(
            verdict(status(), Some(json!({"status": "Ready!"}))),
            broke("/status", "enum")
        );
        assert_eq!(
            verdict(status(), Some(json!({}))),
            broke("/status", "required")
        );
        assert_eq!(
            verdict(
                status(),
                Some(json!({"status": "ready", "items": [{"n": "x"}]}))
            ),
            broke("/items/*/n", "type")
        );
        assert_eq!(verdict(status(), None), broke("", "required"));
        assert_eq!(verdict(status(), Some(Value::Null)), broke("", "type"));
    }

    #[test]
    fn undeclared_names_become_stars() {
        let schema = json!({"type": "object",
                            "additionalProperties": {"type": "integer"}});
        assert_eq!(
            verdict(schema, Some(json!({"alice@example.com": "x"}))),
            broke("/*", "type")
        );
    }

    #[test]
    fn formats_are_annotations_as_in_the_reference_clients() {
        let schema = json!({"type": "string", "format": "email"});
        assert!(verdict(schema, Some(json!("not an address"))).0);
    }

    #[test]
    fn multiplying_references_are_skipped_before_compiling() {
        let mut defs = Map::new();
        defs.insert("d0".into(), json!({"type": "string"}));
        for k in 1..=40 {
            let below = format!("#/$defs/d{}", k - 1);
            defs.insert(
                format!("d{k}"),
                json!({"anyOf": [{"$ref": below}, {"$ref": below}]}),
            );
        }
        let bomb = json!({"$defs": defs, "$ref": "#/$defs/d40"});
        assert_eq!(OutputSchema::compile(&bomb).err(), Some(Skipped::TooCostly));
    }

    #[test]
    fn reference_loops_that_never_step_into_the_instance_are_skipped() {
        for schema in [
            json!({"$ref": "#"}),
            json!({"anyOf": [{"$ref": "#"}, {"type": "string"}]}),
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                   "$ref": "#/$defs/a"}),
        ] {
            assert_eq!(
                OutputSchema::compile(&schema).err(),
                Some(Skipped::Invalid),
                "{schema}"
            );
        }
    }

    #[test]
    fn recursive_schemas_that_step_into_the_instance_check() {
        let tree = json!({"$defs": {"node": {"type": "object", "properties": {
                              "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
                          "$ref": "#/$defs/node"});
        assert_eq!(
            verdict(
                tree,
                Some(json!({"children": [{"children": [{"children": 1}]}]}))
            ),
            broke("/children/*/children/*/children", "type")
        );
        assert_eq!(
            verdict(
                json!({"type": "object",
                       "properties": {"child": {"$ref": "#"}, "n": {"type": "integer"}}}),
                Some(json!({"child": {"child": {"n": "x"}}}))
            ),
            broke("/child/child/n", "type")
        );
    }

    #[test]
    fn a_schema_past_the_budget_is_not_compiled() {
        let schema = status();
        let bytes = OutputSchema::compile(&schema).unwrap().bytes();
        assert!(OutputSchema::compile_within(&schema, bytes).is_ok());
        assert_eq!(
            OutputSchema::compile_within(&schema, bytes - 1).err(),
            Some(Skipped::TooCostly)
        );
    }

    #[test]
    fn remote_references_are_never_fetched() {
        let schema = json!({"$ref": "https://example.com/schema.json"});
        assert_eq!(OutputSchema::compile(&schema).err(), Some(Skipped::Invalid));
    }

    #[test]
    fn patterns_run_in_linear_time() {
        let schema = json!({"type": "string", "pattern": "^(a+)+$"});
        let text = format!("{}b", "a".repeat(100_000));
        assert_eq!(verdict(schema, Some(json!(text))), broke("", "pattern"));
    }

    #[test]
    fn deep_and_large_schemas_are_skipped() {
        let mut deep = json!({"type": "integer"});
        for _ in 0..100 {
            deep = json!({"items": deep});
        }
        assert_eq!(OutputSchema::compile(&deep).err(), Some(Skipped::TooCostly));
        let wide: Map<String, Value> = (0..MAX_EXPANDED_NODES)
            .map(|i| (format!("p{i}"), json!({"type": "integer"})))
            .collect();
        let large = json!({"type": "object", "properties": wide});
        assert_eq!(
            OutputSchema::compile(&large).err(),
            Some(Skipped::TooCostly)
        );
    }
}

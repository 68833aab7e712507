//! GBNF for tool calls: the offered tools' argument schemas, turned into
//! grammar rules by llama.cpp's own converter, and small pieces every
//! family's call grammar is built from.
//!
//! Every schema and tool name is checked here before llama.cpp sees it,
//! and strings without a bound of their own get one, so a call cannot run
//! away inside a string until the token limit.

use serde_json::{Value, json};

use hearth_core::chat::{ProviderError, ToolSpec};

/// Strings without a declared bound get this one.
const DEFAULT_MAX_STRING: u64 = 256;

/// The rules for the offered tools' arguments: tool `i`'s arguments are
/// rule `args{i}`.
#[derive(Debug, Clone)]
pub struct ToolRules {
    /// The rules, without a root.
    pub rules: String,
    /// Each tool's name and the rule of its arguments.
    pub tools: Vec<(String, String)>,
    /// Each tool's arguments (from its schema's `properties`).
    pub props: Vec<Vec<Prop>>,
}

/// One argument of a tool, as its schema declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prop {
    pub key: String,
    /// The JSON type, where the schema names one.
    pub kind: Option<String>,
    pub required: bool,
}

impl ToolRules {
    /// `"{" space "\"name\"" space ":" space "\"NAME\"" space "," space
    /// "\"<args_key>\"" space ":" space ARGS space "}"`, one alternative per
    /// tool: a call as one JSON object.
    pub fn json_object(&self, name_key: &str, args_key: &str) -> String {
        self.alternatives(|name, args| {
            format!(
                r#""{{" space "\"{name_key}\"" space ":" space "\"{name}\"" space "," space "\"{args_key}\"" space ":" space {args} space "}}""#
            )
        })
    }

    /// Tool `tool`'s arguments as pairs for formats that write them one by
    /// one: `pair(key, type)` is the GBNF of one; the required ones come
    /// first, all of them, then the optional ones may follow, each once;
    /// `sep` (GBNF, may be empty) goes between two.
    pub fn keyed(
        &self,
        tool: usize,
        sep: &str,
        pair: impl Fn(&str, Option<&str>) -> String,
    ) -> String {
        let props = &self.props[tool];
        let one = |p: &Prop| pair(&p.key, p.kind.as_deref());
        let required: Vec<String> = props.iter().filter(|p| p.required).map(one).collect();
        let optional: Vec<String> = props.iter().filter(|p| !p.required).map(one).collect();
        let joiner = if sep.is_empty() {
            " ".to_string()
        } else {
            format!(" {sep} ")
        };
        if !required.is_empty() {
            let mut out = required.join(&joiner);
            for o in &optional {
                out.push_str(&format!(" ({joiner}{o} )?"));
            }
            return out;
        }
        if optional.is_empty() {
            return "\"\"".to_string();
        }
        let any = format!("( {} )", optional.join(" | "));
        format!("( {any} ({joiner}{any} ){{0,{}}} )?", optional.len() - 1)
    }

    /// `( A | B | … )`, one alternative per tool, built by `one(name, args_rule)`.
    pub fn alternatives(&self, one: impl Fn(&str, &str) -> String) -> String {
        self.alternatives_indexed(|_, name, args| one(name, args))
    }

    /// As [`Self::alternatives`], with each tool's index.
    pub fn alternatives_indexed(&self, one: impl Fn(usize, &str, &str) -> String) -> String {
        let each: Vec<String> = self
            .tools
            .iter()
            .enumerate()
            .map(|(i, (name, args))| one(i, name, args))
            .collect();
        format!("( {} )", each.join(" | "))
    }
}

/// The rule of one call, where a reply may hold several.
pub const ITEM: &str = "tool-call-item";

/// GBNF for rule `one`, then up to `most - 1` more, each after `sep`
/// (GBNF, may be `""`).
pub fn repeated(one: &str, sep: &str, most: usize) -> String {
    if most <= 1 {
        return one.to_string();
    }
    format!("{one} ( {sep} {one} ){{0,{}}}", most - 1).replace("(  ", "( ")
}

/// The rules for `tools`' arguments, or why they cannot be had.
pub fn tool_rules(tools: &[ToolSpec]) -> Result<ToolRules, ProviderError> {
    if tools.is_empty() {
        return Err(ProviderError::InvalidRequest(
            "tool_choice requires at least one tool".into(),
        ));
    }
    let mut properties = serde_json::Map::new();
    let mut defs = serde_json::Map::new();
    let mut names = Vec::new();
    let mut props = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        check_tool(tool)?;
        let mut arguments = tool.parameters.clone();
        bound_strings(&mut arguments);
        super::schema_refs::relocate(&mut arguments, i, &mut defs);
        let rule = format!("args{i}");
        properties.insert(rule.clone(), arguments);
        names.push((tool.name.clone(), rule));
        let required: Vec<&str> = tool
            .parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        props.push(
            tool.parameters
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| {
                    p.iter()
                        .map(|(key, schema)| Prop {
                            key: key.clone(),
                            kind: schema.get("type").and_then(Value::as_str).map(String::from),
                            required: required.contains(&key.as_str()),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        );
    }
    let required: Vec<&String> = properties.keys().collect();
    let mut schema = json!({"type": "object", "properties": properties, "required": required});
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    let converted = llama_cpp_2::json_schema_to_grammar(&schema.to_string())
        .map_err(|e| unconvertible(tools, &e.to_string()))?;
    // The wrapper object's own root is dropped; its properties' rules stay.
    let rules: String = converted
        .lines()
        .filter(|line| !line.starts_with("root ::="))
        .map(|line| format!("{line}\n"))
        .collect();
    for (_, rule) in &names {
        if !rules.lines().any(|l| l.starts_with(&format!("{rule} ::="))) {
            return Err(ProviderError::InvalidRequest(format!(
                "the schema grammar has no rule {rule}"
            )));
        }
    }
    Ok(ToolRules {
        rules,
        tools: names,
        props,
    })
}

/// Why llama.cpp could not turn `tools`' schemas into a grammar, naming
/// the first tool whose schema fails alone.
fn unconvertible(tools: &[ToolSpec], why: &str) -> ProviderError {
    let culprit = tools
        .iter()
        .find(|tool| llama_cpp_2::json_schema_to_grammar(&tool.parameters.to_string()).is_err());
    let which = culprit.map_or_else(
        || "the tools' schemas".to_string(),
        |tool| format!("the parameters of tool `{}`", tool.name),
    );
    ProviderError::InvalidRequest(format!(
        "{which} cannot be turned into a grammar ({why}): check that every `$ref` \
         resolves without a loop, every `type` is JSON Schema's, and every bound is a number"
    ))
}

/// Text as a GBNF string literal.
pub fn literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Tool names and schemas are checked here, before llama.cpp sees them.
fn check_tool(tool: &ToolSpec) -> Result<(), ProviderError> {
    tool.check()
        .map_err(|e| ProviderError::InvalidRequest(e.to_string()))
}

/// Adds `maxLength` to string schemas that have no bound of their own.
fn bound_strings(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let is_plain_string = map.get("type") == Some(&Value::String("string".into()))
                && !["maxLength", "enum", "const", "pattern", "format"]
                    .iter()
                    .any(|k| map.contains_key(*k));
            if is_plain_string {
                map.insert("maxLength".into(), json!(DEFAULT_MAX_STRING));
            }
            for value in map.values_mut() {
                bound_strings(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(bound_strings),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, parameters: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters,
        }
    }

    #[test]
    fn each_tool_gets_a_rule_for_its_arguments() {
        let rules = tool_rules(&[
            tool("a", json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})),
            tool("b", json!({"type": "object"})),
        ])
        .unwrap();
        assert!(rules.rules.contains("args0 ::="), "{}", rules.rules);
        assert!(rules.rules.contains("args1 ::="), "{}", rules.rules);
        assert!(!rules.rules.contains("root ::="), "{}", rules.rules);
        assert!(rules.rules.contains("space ::="), "{}", rules.rules);
        assert_eq!(
            rules.props,
            [
                vec![Prop {
                    key: "q".into(),
                    kind: Some("string".into()),
                    required: true
                }],
                vec![]
            ]
        );
        assert_eq!(rules.keyed(1, "\",\"", |k, _| k.to_string()), "\"\"");
        assert_eq!(
            rules.json_object("name", "arguments"),
            r#"( "{" space "\"name\"" space ":" space "\"a\"" space "," space "\"arguments\"" space ":" space args0 space "}" | "{" space "\"name\"" space ":" space "\"b\"" space "," space "\"arguments\"" space ":" space args1 space "}" )"#
        );
    }

    #[test]
    fn refuses_bad_names_and_schemas() {
        assert!(tool_rules(&[]).is_err());
        assert!(tool_rules(&[tool("rm -rf", json!({"type": "object"}))]).is_err());
        assert!(tool_rules(&[tool("a", json!("string"))]).is_err());
        assert!(tool_rules(&[tool("a", json!({"type": "array"}))]).is_err());
    }

    #[test]
    fn bounds_plain_strings_only() {
        let mut s = json!({"type": "object", "properties": {
            "free": {"type": "string"},
            "kind": {"type": "string", "enum": ["x"]},
            "short": {"type": "string", "maxLength": 5}
        }});
        bound_strings(&mut s);
        assert_eq!(s["properties"]["free"]["maxLength"], 256);
        assert!(s["properties"]["kind"].get("maxLength").is_none());
        assert_eq!(s["properties"]["short"]["maxLength"], 5);
    }

    #[test]
    fn literals_escape_quotes_and_newlines() {
        assert_eq!(literal("<|\"|>\n"), r#""<|\"|>\n""#);
    }
}

//! Tools' `$ref`s, kept resolvable once their schemas are combined. A
//! `$ref` such as `#/$defs/Address` (what Pydantic writes) resolves from
//! its document's root; the call grammar puts every tool's parameters
//! under one wrapper object, whose root has none of their `$defs`. Each
//! tool's `$defs` and `definitions` move to the wrapper's `$defs` under
//! names of the tool's own, and its references follow them.

use serde_json::{Map, Value};

/// Moves `schema`'s own definitions into `defs` as tool `i`'s, and points
/// its `$ref`s at them. A `$ref` to the tool's root (`#`) or elsewhere is
/// left as written (llama.cpp refuses it, naming the tool).
pub fn relocate(schema: &mut Value, i: usize, defs: &mut Map<String, Value>) {
    let mut own = Vec::new();
    if let Some(map) = schema.as_object_mut() {
        for (key, tag) in [("$defs", "d"), ("definitions", "n")] {
            if let Some(Value::Object(found)) = map.remove(key) {
                own.extend(found.into_iter().map(|(name, def)| (tag, name, def)));
            }
        }
    }
    repoint(schema, i);
    for (tag, name, mut def) in own {
        repoint(&mut def, i);
        defs.insert(format!("t{i}.{tag}.{name}"), def);
    }
}

/// Every `$ref` into `#/$defs/` or `#/definitions/` now into the
/// wrapper's `$defs`, under tool `i`'s names.
fn repoint(schema: &mut Value, i: usize) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get_mut("$ref") {
                for (prefix, tag) in [("#/$defs/", "d"), ("#/definitions/", "n")] {
                    if let Some(rest) = target.strip_prefix(prefix) {
                        *target = format!("#/$defs/t{i}.{tag}.{rest}");
                        break;
                    }
                }
            }
            map.values_mut().for_each(|v| repoint(v, i));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| repoint(v, i)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tools_definitions_move_under_its_own_names_and_its_refs_follow() {
        let mut schema = json!({"type": "object",
            "properties": {"home": {"$ref": "#/$defs/Address"}, "old": {"$ref": "#/definitions/Old"}},
            "$defs": {"Address": {"type": "object", "properties": {"street": {"type": "string"},
                "next": {"$ref": "#/$defs/Address"}}}},
            "definitions": {"Old": {"type": "integer"}}});
        let mut defs = Map::new();
        relocate(&mut schema, 3, &mut defs);
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {
                "home": {"$ref": "#/$defs/t3.d.Address"}, "old": {"$ref": "#/$defs/t3.n.Old"}}})
        );
        assert_eq!(
            defs["t3.d.Address"]["properties"]["next"],
            json!({"$ref": "#/$defs/t3.d.Address"})
        );
        assert_eq!(defs["t3.n.Old"], json!({"type": "integer"}));
    }

    #[test]
    fn a_schema_without_definitions_is_unchanged() {
        let plain = json!({"type": "object", "properties": {"to": {"$ref": "#"}}});
        let mut schema = plain.clone();
        let mut defs = Map::new();
        relocate(&mut schema, 0, &mut defs);
        assert_eq!(schema, plain);
        assert!(defs.is_empty());
    }
}

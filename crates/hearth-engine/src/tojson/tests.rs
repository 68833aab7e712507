//! Expected bytes written by Python 3's `json.dumps` with the arguments
//! `transformers`' `tojson` passes, for a tool whose keys are out of
//! alphabetical order and whose text holds `'`, `<`, `&`, non-ASCII, a
//! newline and a quote.

use minijinja::Environment;

fn tool() -> serde_json::Value {
    serde_json::from_str(r#"{"type": "function", "function": {"name": "book", "description": "Book it: Tom's <b> & 'x' — café\n\"q\"", "parameters": {"type": "object", "properties": {"zeta": {"type": "number", "default": 0.5}, "alpha": {"type": "integer", "minimum": 1e-07, "maximum": 1e+16, "enum": [1, 2.0, true, null]}}, "required": ["zeta"]}}}"#).unwrap()
}

fn render(filter: &str) -> String {
    let mut env = Environment::new();
    env.add_filter("tojson", super::tojson);
    env.render_str(
        &format!("{{{{ t | {filter} }}}}"),
        minijinja::context! { t => tool() },
    )
    .unwrap()
}

#[test]
fn tools_render_as_python_json_dumps_writes_them() {
    let expected: [(&str, &str); 5] = [
        (
            "tojson",
            r#"{"type": "function", "function": {"name": "book", "description": "Book it: Tom's <b> & 'x' — café\n\"q\"", "parameters": {"type": "object", "properties": {"zeta": {"type": "number", "default": 0.5}, "alpha": {"type": "integer", "minimum": 1e-07, "maximum": 1e+16, "enum": [1, 2.0, true, null]}}, "required": ["zeta"]}}}"#,
        ),
        (
            "tojson(indent=2)",
            r#"{
  "type": "function",
  "function": {
    "name": "book",
    "description": "Book it: Tom's <b> & 'x' — café\n\"q\"",
    "parameters": {
      "type": "object",
      "properties": {
        "zeta": {
          "type": "number",
          "default": 0.5
        },
        "alpha": {
          "type": "integer",
          "minimum": 1e-07,
          "maximum": 1e+16,
          "enum": [
            1,
            2.0,
            true,
            null
          ]
        }
      },
      "required": [
        "zeta"
      ]
    }
  }
}"#,
        ),
        (
            "tojson(2)",
            r#"{
  "type": "function",
  "function": {
    "name": "book",
    "description": "Book it: Tom's <b> & 'x' — café\n\"q\"",
    "parameters": {
      "type": "object",
      "properties": {
        "zeta": {
          "type": "number",
          "default": 0.5
        },
        "alpha": {
          "type": "integer",
          "minimum": 1e-07,
          "maximum": 1e+16,
          "enum": [
            1,
            2.0,
            true,
            null
          ]
        }
      },
      "required": [
        "zeta"
      ]
    }
  }
}"#,
        ),
        (
            "tojson(sort_keys=true, separators=[\",\", \":\"])",
            r#"{"function":{"description":"Book it: Tom's <b> & 'x' — café\n\"q\"","name":"book","parameters":{"properties":{"alpha":{"enum":[1,2.0,true,null],"maximum":1e+16,"minimum":1e-07,"type":"integer"},"zeta":{"default":0.5,"type":"number"}},"required":["zeta"],"type":"object"}},"type":"function"}"#,
        ),
        (
            "tojson(ensure_ascii=true)",
            r#"{"type": "function", "function": {"name": "book", "description": "Book it: Tom's <b> & 'x' \u2014 caf\u00e9\n\"q\"", "parameters": {"type": "object", "properties": {"zeta": {"type": "number", "default": 0.5}, "alpha": {"type": "integer", "minimum": 1e-07, "maximum": 1e+16, "enum": [1, 2.0, true, null]}}, "required": ["zeta"]}}}"#,
        ),
    ];
    for (filter, python) in expected {
        assert_eq!(render(filter), python, "{filter}");
    }
}

#[test]
fn empty_containers_and_bad_arguments() {
    let mut env = Environment::new();
    env.add_filter("tojson", super::tojson);
    let out = env
        .render_str(
            "{{ [] | tojson(indent=4) }} {{ {} | tojson(indent=4) }}",
            (),
        )
        .unwrap();
    assert_eq!(out, "[] {}");
    let err = env
        .render_str("{{ 1 | tojson(separators=[\",\"]) }}", ())
        .unwrap_err();
    assert!(err.to_string().contains("separators"), "{err}");
    assert!(env.render_str("{{ 1 | tojson(colour=1) }}", ()).is_err());
}

//! The `tojson` filter as Hugging Face's chat templates have it.
//!
//! `transformers` renders templates with its own `tojson`: Python's
//! `json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
//! sort_keys=sort_keys)`. minijinja's built-in writes compact JSON and
//! escapes `'`, `<`, `>` and `&` for HTML, so a model saw its tools in
//! bytes it was never trained on. This one writes what Python writes: keys
//! in their order, `", "` and `": "` between items (`","` with an indent),
//! only `"`, `\` and control characters escaped, floats as Python prints
//! them.

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Error, ErrorKind};

/// How `json.dumps` was asked to write.
struct Style {
    indent: Option<String>,
    item: String,
    key: String,
    sort_keys: bool,
    ensure_ascii: bool,
}

/// `value | tojson(indent=…, separators=…, sort_keys=…, ensure_ascii=…)`;
/// a lone positional argument is the indent, as minijinja's own takes it.
pub fn tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent = match kwargs.get::<Option<Value>>("indent")?.or(indent) {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => Some(match v.as_i64() {
            Some(n) => " ".repeat(usize::try_from(n).unwrap_or(0)),
            None => v.as_str().map(str::to_string).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    "tojson: indent must be a number or a string",
                )
            })?,
        }),
    };
    let (item, key) = match kwargs.get::<Option<Vec<String>>>("separators")? {
        Some(pair) if pair.len() == 2 => (pair[0].clone(), pair[1].clone()),
        Some(_) => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "tojson: separators must be two strings",
            ));
        }
        None if indent.is_some() => (",".into(), ": ".into()),
        None => (", ".into(), ": ".into()),
    };
    let style = Style {
        indent,
        item,
        key,
        sort_keys: kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false),
        ensure_ascii: kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false),
    };
    kwargs.assert_all_used()?;
    let mut out = String::new();
    write(value, &style, 0, &mut out)?;
    Ok(Value::from_safe_string(out))
}

fn write(value: &Value, style: &Style, depth: usize, out: &mut String) -> Result<(), Error> {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => number(value, out),
        ValueKind::String => string(value.as_str().unwrap_or_default(), style, out),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = value.try_iter()?.collect();
            open_close(('[', ']'), items.len(), style, depth, out, |i, out| {
                write(&items[i], style, depth + 1, out)
            })?;
        }
        ValueKind::Map | ValueKind::Plain => {
            let mut keys: Vec<Value> = value.try_iter()?.collect();
            if style.sort_keys {
                keys.sort_by_key(|k| k.to_string());
            }
            open_close(('{', '}'), keys.len(), style, depth, out, |i, out| {
                let key = &keys[i];
                string(&key.to_string(), style, out);
                out.push_str(&style.key);
                write(&value.get_item(key)?, style, depth + 1, out)
            })?;
        }
        _ => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("tojson: a {} is not JSON", value.kind()),
            ));
        }
    }
    Ok(())
}

/// The brackets around `n` items, written by `item`, on lines of their own
/// when indenting.
fn open_close(
    (open, close): (char, char),
    n: usize,
    style: &Style,
    depth: usize,
    out: &mut String,
    mut item: impl FnMut(usize, &mut String) -> Result<(), Error>,
) -> Result<(), Error> {
    out.push(open);
    if n == 0 {
        out.push(close);
        return Ok(());
    }
    for i in 0..n {
        if i > 0 {
            out.push_str(&style.item);
        }
        if let Some(indent) = &style.indent {
            out.push('\n');
            out.push_str(&indent.repeat(depth + 1));
        }
        item(i, out)?;
    }
    if let Some(indent) = &style.indent {
        out.push('\n');
        out.push_str(&indent.repeat(depth));
    }
    out.push(close);
    Ok(())
}

/// An integer as itself; a float as Python's `repr`: `1.0`, `0.5`,
/// `1e-07`, `1e+16`.
fn number(value: &Value, out: &mut String) {
    if value.is_integer() {
        out.push_str(&value.to_string());
        return;
    }
    let Ok(f) = f64::try_from(value.clone()) else {
        out.push_str(&value.to_string());
        return;
    };
    if !f.is_finite() {
        out.push_str(if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        });
        return;
    }
    let magnitude = f.abs();
    if magnitude != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        let shortest = format!("{f:e}");
        let (mantissa, exponent) = shortest.split_once('e').unwrap_or((&shortest, "0"));
        let (sign, digits) = match exponent.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exponent),
        };
        out.push_str(&format!("{mantissa}e{sign}{digits:0>2}"));
        return;
    }
    let plain = f.to_string();
    out.push_str(&plain);
    if !plain.contains('.') {
        out.push_str(".0");
    }
}

/// A JSON string as Python writes it: `"`, `\` and control characters
/// escaped (and everything past ASCII with `ensure_ascii`).
fn string(s: &str, style: &Style, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (style.ensure_ascii && (c as u32) > 0x7e) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests;

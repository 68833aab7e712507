//! Reading a request body field by field, so that every field is either
//! honoured or refused by name: whatever is left once a route has taken
//! what it knows is an unknown field, and refused.

use serde_json::{Map, Value};

use super::error::ApiError;
use hearth_core::chat::{ReplyFormat, SamplingParams};

/// A JSON object whose fields are taken one by one.
pub struct Fields {
    map: Map<String, Value>,
}

impl Fields {
    pub fn new(body: Value) -> Result<Self, ApiError> {
        match body {
            Value::Object(map) => Ok(Self { map }),
            _ => Err(ApiError::field("body", "the body must be a JSON object")),
        }
    }

    /// Field `name`, unless absent or `null`.
    pub fn take(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name).filter(|v| !v.is_null())
    }

    pub fn string(&mut self, name: &str) -> Result<Option<String>, ApiError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ApiError::field(name, format!("`{name}` must be a string"))),
        }
    }

    /// `model`, which every route needs.
    pub fn model(&mut self) -> Result<String, ApiError> {
        self.string("model")?.ok_or_else(|| {
            ApiError::field(
                "model",
                "`model` is required: ask GET /v1/models for the names",
            )
        })
    }

    pub fn bool(&mut self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(_) => Err(ApiError::field(
                name,
                format!("`{name}` must be true or false"),
            )),
        }
    }

    /// A number within `range`.
    pub fn number(
        &mut self,
        name: &str,
        range: std::ops::RangeInclusive<f64>,
    ) -> Result<Option<f64>, ApiError> {
        match self.take(name) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(n) if range.contains(&n) => Ok(Some(n)),
                _ => Err(ApiError::field(
                    name,
                    format!(
                        "`{name}` must be a number from {} to {}",
                        range.start(),
                        range.end()
                    ),
                )),
            },
        }
    }

    /// A whole number from `min` to `max`.
    pub fn count(&mut self, name: &str, min: u64, max: u64) -> Result<Option<u64>, ApiError> {
        match self.take(name) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(ApiError::field(
                    name,
                    format!("`{name}` must be a whole number from {min} to {max}"),
                )),
            },
        }
    }

    /// Refuses `name` unless it is absent or what hearth does anyway.
    pub fn only(
        &mut self,
        name: &str,
        fine: impl Fn(&Value) -> bool,
        why: &str,
    ) -> Result<(), ApiError> {
        match self.take(name) {
            Some(v) if !fine(&v) => Err(ApiError::unsupported(name, why)),
            _ => Ok(()),
        }
    }

    /// Takes fields that change nothing hearth does (bookkeeping for the
    /// client's own service), so they are not refused as unknown.
    pub fn accept(&mut self, names: &[&str]) {
        for name in names {
            self.map.remove(*name);
        }
    }

    /// Refuses the first field no route took.
    pub fn finish(self) -> Result<(), ApiError> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(name) => Err(ApiError::unsupported(
                name,
                "hearth does not know this field, and refuses it rather than ignore it",
            )),
        }
    }
}

/// What a request asks of sampling; unset fields keep hearth's
/// `[generation]` settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sampling {
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub top_k: Option<u32>,
    pub min_p: Option<f32>,
    pub repeat_penalty: Option<f32>,
    pub seed: Option<u32>,
    pub stop: Vec<String>,
    pub frequency_penalty: Option<f32>,
    pub presence_penalty: Option<f32>,
    pub format: ReplyFormat,
}

impl Sampling {
    /// Reads the sampling fields both APIs share; `max_names` are the
    /// names the token limit goes by (the first given wins).
    pub fn read(fields: &mut Fields, max_names: &[&str]) -> Result<Self, ApiError> {
        let mut max_tokens = None;
        for name in max_names {
            let n = fields.count(name, 1, u32::MAX as u64)?;
            max_tokens = max_tokens.or(n.map(|n| n as u32));
        }
        let f = |v: Option<f64>| v.map(|v| v as f32);
        Ok(Self {
            max_tokens,
            temperature: f(fields.number("temperature", 0.0..=2.0)?),
            top_p: f(fields.number("top_p", 0.0..=1.0)?),
            // llama-server's own fields, which its clients send too.
            top_k: fields.count("top_k", 0, 1 << 20)?.map(|n| n as u32),
            min_p: f(fields.number("min_p", 0.0..=1.0)?),
            repeat_penalty: f(fields.number("repeat_penalty", 0.01..=10.0)?),
            seed: fields
                .take("seed")
                .map(|v| {
                    v.as_i64()
                        .map(|n| n as u32)
                        .ok_or_else(|| ApiError::field("seed", "`seed` must be a whole number"))
                })
                .transpose()?,
            stop: stops(fields.take("stop"))?,
            frequency_penalty: f(fields.number("frequency_penalty", -2.0..=2.0)?),
            presence_penalty: f(fields.number("presence_penalty", -2.0..=2.0)?),
            format: ReplyFormat::Text,
        })
    }

    /// `base` with what the request asked for.
    pub fn over(&self, base: &SamplingParams) -> SamplingParams {
        let mut s = base.clone();
        s.max_tokens = self.max_tokens.unwrap_or(s.max_tokens);
        s.temperature = self.temperature.unwrap_or(s.temperature);
        s.top_p = self.top_p.unwrap_or(s.top_p);
        s.top_k = self.top_k.unwrap_or(s.top_k);
        s.min_p = self.min_p.unwrap_or(s.min_p);
        s.repeat_penalty = self.repeat_penalty.unwrap_or(s.repeat_penalty);
        if self.seed.is_some() {
            s.seed = self.seed;
        }
        s.stop.extend(self.stop.iter().cloned());
        s.frequency_penalty = self.frequency_penalty.unwrap_or(s.frequency_penalty);
        s.presence_penalty = self.presence_penalty.unwrap_or(s.presence_penalty);
        s.format = self.format.clone();
        s
    }
}

/// `stop`: a string or up to 16 of them, none empty.
fn stops(value: Option<Value>) -> Result<Vec<String>, ApiError> {
    let bad = || {
        ApiError::field(
            "stop",
            "`stop` must be a string or a list of up to 16 non-empty strings",
        )
    };
    let list = match value {
        None => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(bad))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad()),
    };
    if list.len() > 16 || list.iter().any(String::is_empty) {
        return Err(bad());
    }
    Ok(list)
}

/// `response_format` of chat completions (`text.format` of responses is
/// the same object, flattened): `text`, `json_object`, or `json_schema`.
pub fn reply_format(value: Option<Value>, param: &str) -> Result<ReplyFormat, ApiError> {
    let Some(value) = value else {
        return Ok(ReplyFormat::Text);
    };
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => Ok(ReplyFormat::Text),
        "json_object" => Ok(ReplyFormat::JsonObject),
        "json_schema" => {
            // Chat completions nest it under `json_schema`; responses do not.
            let holder = value.get("json_schema").unwrap_or(&value);
            match holder.get("schema") {
                Some(schema) if schema.is_object() => Ok(ReplyFormat::JsonSchema(schema.clone())),
                _ => Err(ApiError::field(
                    param,
                    format!("`{param}` of type json_schema needs a `schema` object"),
                )),
            }
        }
        other => Err(ApiError::field(
            param,
            format!("`{param}` type `{other}` is not one of text, json_object, json_schema"),
        )),
    }
}

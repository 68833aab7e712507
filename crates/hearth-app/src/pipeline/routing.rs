//! Query classification: keyword rules → hint → provider and model.
//!
//! A chat's `/model` choice wins over rules; among matching rules the
//! highest priority wins (the first in the file on a tie); with no match
//! the default provider answers with `[model] path`.

use std::collections::HashMap;
use std::sync::Arc;

use crate::chat::ProviderError;
use crate::config::{Config, RouteRule};
use crate::providers::Provider;
use futures::future::BoxFuture;

/// Which provider and model answer one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub provider: String,
    /// A name from `[routing.models]`, or `"default"` for `[model] path`.
    pub model: String,
    /// What the model name stands for: a GGUF file or a provider's model id.
    pub model_file: String,
    /// The matching rule's hint, if a rule matched.
    pub hint: Option<String>,
    /// Providers to try, in order, when this one fails before answering
    /// (`[routing] fallback`).
    pub fallback: Vec<String>,
}

/// The providers a route may name. The daemon's set starts and switches
/// the local engine; tests hand in scripted providers.
pub trait ProviderSet: Send + Sync {
    /// The provider serving `route`, ready for requests (switching the
    /// loaded local model first if the route names another one).
    fn provider<'a>(
        &'a self,
        route: &'a Route,
    ) -> BoxFuture<'a, Result<Arc<dyn Provider>, ProviderError>>;

    /// Whether the provider reads images (`[IMAGE:]` markers are kept).
    fn supports_vision(&self, _provider: &str) -> bool {
        false
    }
}

/// A fixed set of providers by `"provider"` or `"provider:model"` name; the
/// more specific name wins.
#[derive(Default, Clone)]
pub struct StaticProviders {
    providers: HashMap<String, Arc<dyn Provider>>,
}

impl StaticProviders {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `provider` under `name` (`"local"` or `"local:coder"`).
    pub fn with(mut self, name: impl Into<String>, provider: Arc<dyn Provider>) -> Self {
        self.providers.insert(name.into(), provider);
        self
    }
}

impl ProviderSet for StaticProviders {
    fn provider<'a>(
        &'a self,
        route: &'a Route,
    ) -> BoxFuture<'a, Result<Arc<dyn Provider>, ProviderError>> {
        Box::pin(async move {
            self.providers
                .get(&format!("{}:{}", route.provider, route.model))
                .or_else(|| self.providers.get(&route.provider))
                .cloned()
                .ok_or_else(|| {
                    ProviderError::InvalidRequest(format!(
                        "no provider named `{}` is configured",
                        route.provider
                    ))
                })
        })
    }
}

/// The rule a message matches, if any.
pub fn classify<'a>(content: &str, rules: &'a [RouteRule]) -> Option<&'a RouteRule> {
    let lower = content.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '+' && c != '#')
        .filter(|w| !w.is_empty())
        .collect();
    let matches = |keyword: &String| {
        if keyword.contains(char::is_whitespace) {
            lower.contains(keyword.as_str())
        } else {
            words.contains(&keyword.as_str())
        }
    };
    let mut best: Option<&RouteRule> = None;
    for rule in rules {
        if rule.keywords.iter().any(matches) && best.is_none_or(|b| rule.priority > b.priority) {
            best = Some(rule);
        }
    }
    best
}

/// The route for a message: for one with pictures, `[routing] images` when
/// set; else the chat's `/model` choice, else a rule, else the defaults.
pub fn route(config: &Config, content: &str, chosen_model: Option<&str>, pictures: bool) -> Route {
    if let Some(provider) = config.routing.images.as_ref().filter(|_| pictures) {
        return Route {
            provider: provider.clone(),
            model: "default".to_string(),
            model_file: config.model.path.clone(),
            hint: Some("images".to_string()),
            fallback: config.routing.fallback.clone(),
        };
    }
    let model_file = |name: &str| {
        config
            .routing
            .models
            .get(name)
            .cloned()
            .unwrap_or_else(|| config.model.path.clone())
    };
    if let Some(name) = chosen_model {
        return Route {
            provider: config.routing.default_provider.clone(),
            model: name.to_string(),
            model_file: model_file(name),
            hint: None,
            fallback: config.routing.fallback.clone(),
        };
    }
    match classify(content, &config.routing.rules) {
        Some(rule) => {
            let model = rule.model.clone().unwrap_or_else(|| "default".to_string());
            Route {
                provider: rule.provider.clone(),
                model_file: model_file(&model),
                model,
                hint: Some(rule.hint.clone()),
                fallback: config.routing.fallback.clone(),
            }
        }
        None => Route {
            provider: config.routing.default_provider.clone(),
            model: "default".to_string(),
            model_file: config.model.path.clone(),
            hint: None,
            fallback: config.routing.fallback.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(hint: &str, keywords: &[&str], priority: i32) -> RouteRule {
        RouteRule {
            hint: hint.into(),
            keywords: keywords.iter().map(|k| k.to_string()).collect(),
            priority,
            provider: "local".into(),
            model: None,
        }
    }

    #[test]
    fn highest_priority_whole_word_match_wins() {
        let rules = [
            rule("code", &["rust", "compile"], 5),
            rule("urgent", &["rust"], 9),
            rule("phrase", &["due date"], 1),
        ];
        assert_eq!(
            classify("Why won't Rust compile?", &rules).map(|r| r.hint.as_str()),
            Some("urgent")
        );
        assert_eq!(
            classify("compile this", &rules).map(|r| r.hint.as_str()),
            Some("code")
        );
        assert!(
            classify("trusty old car", &rules).is_none(),
            "whole words only"
        );
        assert_eq!(
            classify("When is the DUE DATE?", &rules).map(|r| r.hint.as_str()),
            Some("phrase")
        );
    }
}

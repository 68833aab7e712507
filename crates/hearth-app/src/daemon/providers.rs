//! The providers a route may name: the local engine (loaded on demand by
//! [`LocalModels`]) and, when configured, an OpenAI-compatible API and
//! Anthropic's. A route
//! with `[routing] fallback` providers gets them as a [`Fallback`] chain;
//! the last cloud provider of a route waits out "busy" ([`RetryWhenBusy`]).

use std::sync::Arc;

use super::LocalModels;
use super::local_models::LOCAL;
use crate::chat::ProviderError;
use crate::config::Config;
use crate::pipeline::{ProviderSet, Route};
use crate::providers::{AnthropicProvider, Fallback, OpenAiProvider, Provider, RetryWhenBusy};
use futures::future::BoxFuture;

pub const OPENAI: &str = "openai";
pub const ANTHROPIC: &str = "anthropic";

pub struct Providers {
    local: Arc<LocalModels>,
    openai: Option<OpenAiProvider>,
    anthropic: Option<AnthropicProvider>,
}

impl Providers {
    pub fn new(config: &Config, local: Arc<LocalModels>) -> Result<Self, ProviderError> {
        Ok(Self {
            local,
            openai: OpenAiProvider::from_config(&config.openai)?,
            anthropic: AnthropicProvider::from_config(&config.anthropic)?,
        })
    }

    /// `name` ready to answer: for the routed provider, with the route's
    /// model; as a fallback, with what is loaded (local) or configured.
    async fn resolve(&self, name: &str, route: &Route) -> Result<Arc<dyn Provider>, ProviderError> {
        let routed = name == route.provider;
        match name {
            LOCAL if routed => Ok(self.local.ensure(&route.model_file).await?),
            LOCAL => Ok(self.local.loaded_or_default().await?),
            OPENAI => {
                let openai = self.openai.as_ref().ok_or_else(|| {
                    ProviderError::InvalidRequest(
                        "provider `openai` is not configured: set [providers.openai] model".into(),
                    )
                })?;
                Ok(Arc::new(if routed && route.model != "default" {
                    openai.with_model(&route.model_file)
                } else {
                    openai.clone()
                }))
            }
            ANTHROPIC => {
                let anthropic = self.anthropic.as_ref().ok_or_else(|| {
                    ProviderError::InvalidRequest(
                        "provider `anthropic` is not configured: set [providers.anthropic] model"
                            .into(),
                    )
                })?;
                Ok(Arc::new(if routed && route.model != "default" {
                    anthropic.with_model(&route.model_file)
                } else {
                    anthropic.clone()
                }))
            }
            other => Err(ProviderError::InvalidRequest(format!(
                "provider `{other}` is not available (\"local\", \"openai\" and \"anthropic\" are)"
            ))),
        }
    }
}

impl ProviderSet for Providers {
    fn provider<'a>(
        &'a self,
        route: &'a Route,
    ) -> BoxFuture<'a, Result<Arc<dyn Provider>, ProviderError>> {
        Box::pin(async move {
            let primary = self.resolve(&route.provider, route).await;
            let mut fallbacks = Vec::new();
            let mut last = route.provider.as_str();
            for name in route.fallback.iter().filter(|n| **n != route.provider) {
                match self.resolve(name, route).await {
                    Ok(p) => {
                        fallbacks.push(p);
                        last = name;
                    }
                    Err(e) => tracing::warn!(provider = name, error = %e, "fallback unavailable"),
                }
            }
            // An overloaded cloud API at the end of the chain is asked
            // again after a pause; one with a provider after it hands over.
            let retry_when_busy = |p| -> Arc<dyn Provider> { Arc::new(RetryWhenBusy::new(p)) };
            let primary = match (matches!(last, OPENAI | ANTHROPIC), fallbacks.pop()) {
                (true, Some(p)) => {
                    fallbacks.push(retry_when_busy(p));
                    primary
                }
                (true, None) => primary.map(retry_when_busy),
                (false, Some(p)) => {
                    fallbacks.push(p);
                    primary
                }
                (false, None) => primary,
            };
            let primary = match primary {
                Ok(p) => p,
                Err(e) if !fallbacks.is_empty() => {
                    tracing::warn!(
                        provider = route.provider,
                        error = %e,
                        "provider unavailable; answering with the fallback"
                    );
                    fallbacks.remove(0)
                }
                Err(e) => return Err(e),
            };
            if fallbacks.is_empty() {
                Ok(primary)
            } else {
                Ok(Arc::new(Fallback::new(primary, fallbacks)))
            }
        })
    }
}

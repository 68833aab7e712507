//! The channels `hearth daemon` starts, built from the config in one place.

use std::sync::Arc;

use crate::channels::gateway::ServedModel;
use crate::channels::telegram::TelegramSettings;
use crate::channels::{
    Channel, ChannelError, GatewayChannel, Intake, SendMessage, TelegramChannel,
};
use crate::config::Config;
use crate::metrics::Metrics;
use futures::future::BoxFuture;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("channel `{channel}`: {message}")]
    Channel { channel: String, message: String },
}

/// The channels built, and the gateway among them (which is given its
/// desk once the runtime exists).
pub struct Built {
    pub channels: Vec<Arc<dyn Channel>>,
    pub gateway: Option<Arc<GatewayChannel>>,
}

/// Every channel the config turns on.
/// The gateway serves `metrics` at `/metrics`, and `served` as itself on
/// its OpenAI-compatible API.
pub fn build_channels(
    config: &Config,
    metrics: &Arc<Metrics>,
    served: Option<Arc<dyn ServedModel>>,
) -> Result<Built, BuildError> {
    let mut channels: Vec<Arc<dyn Channel>> = Vec::new();
    let mut built_gateway = None;
    if config.telegram.bot_token.is_some() {
        let telegram = TelegramSettings::from_config(config)
            .and_then(TelegramChannel::new)
            .map_err(|e| BuildError::Channel {
                channel: "telegram".into(),
                message: e.to_string(),
            })?;
        channels.push(Arc::new(telegram));
    }
    if let Some(gateway) = GatewayChannel::from_config(&config.gateway) {
        config
            .gateway
            .check_serving()
            .map_err(|e| BuildError::Channel {
                channel: "gateway".into(),
                message: e.to_string(),
            })?;
        let gateway = gateway.bind_now().map_err(|e| BuildError::Channel {
            channel: "gateway".into(),
            message: e.to_string(),
        })?;
        let mut gateway = gateway.with_metrics(metrics.clone());
        if let Some(served) = served {
            gateway = gateway.with_served_model(served);
        }
        let gateway = Arc::new(gateway);
        built_gateway = Some(gateway.clone());
        channels.push(gateway);
    }
    if config.daemon.loopback_channel {
        channels.push(Arc::new(LoopbackChannel));
    }
    Ok(Built {
        channels,
        gateway: built_gateway,
    })
}

/// A channel that receives nothing and logs what it is sent: the daemon
/// runs with no platform (benchmarks, smoke tests).
pub struct LoopbackChannel;

impl Channel for LoopbackChannel {
    fn name(&self) -> &str {
        "loopback"
    }

    fn send<'a>(&'a self, message: &'a SendMessage) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            tracing::info!(
                to = message.recipient,
                chars = message.content.len(),
                "loopback send"
            );
            Ok(())
        })
    }

    fn listen(&self, intake: Intake) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(async move {
            intake.closed().await;
            Ok(())
        })
    }
}

//! What hearth does with what a server tells it unasked: a changed tool
//! list is fetched again; progress is logged (rmcp itself restarts the
//! call's wait on it).

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::Notify;

/// One connection's handler.
pub(super) struct Handler {
    pub(super) server: String,
    /// Woken when the server says its tools changed.
    pub(super) tools_changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(
            server = self.server,
            progress = params.progress,
            total = ?params.total,
            "MCP progress"
        );
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = self.server, "MCP server says its tools changed");
        self.tools_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("hearth", env!("CARGO_PKG_VERSION")),
        )
    }
}

//! The encrypted connection to a mail server: TLS from the first byte
//! (IMAPS on 993, SMTPS on 465) or after SMTP's `STARTTLS` (587), the
//! server's certificate checked against the public roots (Mozilla's, as
//! `webpki-roots` carries them) and, for a home server that signs its own,
//! the certificate authority in `ca_file`.

use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};

use super::EmailError;

/// How a connection to a server is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// TLS from the first byte.
    Tls,
    /// SMTP's `STARTTLS` before anything else is said.
    StartTls,
    /// None: only to a server on this machine.
    Plain,
}

/// A connection, encrypted or not.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug> Io for T {}
pub type Conn = Box<dyn Io>;

/// The trust the channel's connections are checked against.
#[derive(Clone)]
pub struct Trust {
    connector: TlsConnector,
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Trust")
    }
}

impl Trust {
    /// The public roots, and those in `ca_file` (PEM) when given.
    pub fn new(ca_file: Option<&Path>) -> Result<Self, EmailError> {
        let mut roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(path) = ca_file {
            let bad = |why: String| EmailError::CaFile {
                path: path.display().to_string(),
                why,
            };
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| bad(e.to_string()))?
                .collect::<Result<_, _>>()
                .map_err(|e| bad(e.to_string()))?;
            if certs.is_empty() {
                return Err(bad(
                    "no certificate in it (PEM, -----BEGIN CERTIFICATE-----)".into(),
                ));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| bad(e.to_string()))?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| EmailError::Tls {
                server: "any server".into(),
                why: format!("no TLS version to offer: {e}"),
            })?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
        })
    }

    /// `stream` encrypted, the certificate checked for `host`.
    pub async fn wrap<S>(&self, host: &str, server: &str, stream: S) -> Result<Conn, EmailError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug + 'static,
    {
        let name = ServerName::try_from(host.to_string()).map_err(|e| EmailError::Tls {
            server: server.to_string(),
            why: e.to_string(),
        })?;
        let tls = self
            .connector
            .connect(name, stream)
            .await
            .map_err(|e| EmailError::Tls {
                server: server.to_string(),
                why: e.to_string(),
            })?;
        Ok(Box::new(tls))
    }
}

/// Connects to `host:port`, encrypted at once when `security` is TLS.
pub async fn connect(
    trust: &Trust,
    host: &str,
    port: u16,
    security: Security,
) -> Result<Conn, EmailError> {
    let server = format!("{host}:{port}");
    let tcp = TcpStream::connect((host, port))
        .await
        .map_err(|source| EmailError::Unreachable {
            server: server.clone(),
            source,
        })?;
    match security {
        Security::Tls => trust.wrap(host, &server, tcp).await,
        Security::StartTls | Security::Plain => Ok(Box::new(tcp)),
    }
}

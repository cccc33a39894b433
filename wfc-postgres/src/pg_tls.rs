//! TLS to PostgreSQL (rustls, through `tokio-postgres-rustls`), configured by the URL's
//! libpq options:
//!
//! - `sslmode=disable`: no TLS; `prefer` (the default, as in libpq): TLS if the server offers
//!   it, without checking its certificate; `require`: TLS or no connection, certificate not
//!   checked (libpq's meaning; with `sslrootcert`, checked as for `verify-ca`);
//! - `sslmode=verify-ca`: TLS, the certificate chain checked against `sslrootcert`;
//!   `sslmode=verify-full`: and the certificate's name (DNS name or IP address) must be the
//!   URL's host.
//! - `sslrootcert=PATH`: the PEM file of the trusted root certificate(s).
//!
//! `tokio-postgres` itself knows only `disable`, `prefer` and `require` and no `sslrootcert`,
//! so these two options are taken out of the URL here and the rest goes to it unchanged.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;
use tokio_postgres::{AsyncMessage, Client};
use tokio_postgres_rustls::MakeRustlsConnect;

use wfc_runtime::durable::StoreError;

/// What `sslmode` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Disable => "disable",
            Mode::Prefer => "prefer",
            Mode::Require => "require",
            Mode::VerifyCa => "verify-ca",
            Mode::VerifyFull => "verify-full",
        }
    }
}

/// A URL with the TLS options taken out.
#[derive(Debug)]
struct Parsed {
    url: String,
    mode: Mode,
    root_cert: Option<String>,
}

fn bad_url(url: &str, message: String) -> StoreError {
    StoreError::Backend(format!("postgres: the store URL '{}' is not valid: {message}", redact(url)))
}

/// The URL without its password (`postgres://user:secret@...` becomes `postgres://user:***@...`).
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let Some((userinfo, host)) = rest.split_once('@') else { return url.to_owned() };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

/// `%XX` escapes of a URL query value.
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = value.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse(url: &str) -> Result<Parsed, StoreError> {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, query),
        None => (url, ""),
    };
    let mut mode = Mode::Prefer;
    let mut root_cert = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => {
                mode = match percent_decode(value).as_str() {
                    "disable" => Mode::Disable,
                    "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    other => {
                        return Err(bad_url(
                            url,
                            format!("sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"),
                        ));
                    }
                }
            }
            "sslrootcert" => root_cert = Some(percent_decode(value)),
            _ => rest.push(pair),
        }
    }
    if matches!(mode, Mode::VerifyCa | Mode::VerifyFull) && root_cert.is_none() {
        return Err(bad_url(
            url,
            format!("sslmode={} needs sslrootcert=PATH, the PEM file of the trusted root certificate", mode.name()),
        ));
    }
    let url = if rest.is_empty() { base.to_owned() } else { format!("{base}?{}", rest.join("&")) };
    Ok(Parsed { url, mode, root_cert })
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(path: &str) -> Result<RootCertStore, StoreError> {
    let unreadable = |e: &dyn std::fmt::Display| {
        StoreError::Backend(format!("postgres: cannot read the root certificate sslrootcert={path}: {e}"))
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| unreadable(&e))? {
        roots.add(cert.map_err(|e| unreadable(&e))?).map_err(|e| unreadable(&e))?;
    }
    if roots.is_empty() {
        return Err(unreadable(&"it holds no PEM certificate"));
    }
    Ok(roots)
}

/// The verifier of the modes that check less than `verify-full` (libpq's meanings):
/// - `prefer` and `require` without a root certificate: encrypted, the server's certificate
///   not checked (`chain: None`);
/// - `verify-ca`: the chain is checked against the roots, the name is not.
///
/// Handshake signatures are verified in every mode.
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else { return Ok(ServerCertVerified::assertion()) };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

fn tls_config(parsed: &Parsed) -> Result<ClientConfig, StoreError> {
    let provider = provider();
    let tls_error = |e: &dyn std::fmt::Display| StoreError::Backend(format!("postgres: cannot set up TLS: {e}"));
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(&e))?;
    let verifier: Arc<dyn ServerCertVerifier> = match (&parsed.root_cert, parsed.mode) {
        (None, _) | (Some(_), Mode::Disable | Mode::Prefer) => Arc::new(Lenient { chain: None, provider }),
        (Some(path), mode) => {
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots(path)?), Arc::clone(&provider))
                .build()
                .map_err(|e| tls_error(&e))?;
            if mode == Mode::VerifyFull {
                webpki as Arc<dyn ServerCertVerifier>
            } else {
                Arc::new(Lenient { chain: Some(webpki), provider })
            }
        }
    };
    Ok(builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth())
}

type Connection = tokio_postgres::Connection<
    tokio_postgres::Socket,
    <MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket>>::Stream,
>;

async fn connect(url: &str) -> Result<(Client, Connection), StoreError> {
    let parsed = parse(url)?;
    let mut config: tokio_postgres::Config = parsed.url.parse().map_err(|e| bad_url(url, format!("{e}")))?;
    config.ssl_mode(match parsed.mode {
        Mode::Disable => SslMode::Disable,
        Mode::Prefer => SslMode::Prefer,
        Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
    });
    let tls = MakeRustlsConnect::new(tls_config(&parsed)?);
    config.connect(tls).await.map_err(|e| match parsed.mode {
        Mode::Disable | Mode::Prefer => crate::pg(e),
        mode => StoreError::Backend(format!("postgres: cannot connect with sslmode={}: {}", mode.name(), chain(&e))),
    })
}

/// An error with its sources (tokio-postgres shows "error performing TLS handshake" and keeps
/// the reason, such as the certificate problem, in its source).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// A connection (with TLS as the URL says) whose driver runs on the current tokio runtime.
pub(crate) async fn connect_driven(url: &str) -> Result<Client, StoreError> {
    let (client, connection) = connect(url).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "a PostgreSQL connection ended");
        }
    });
    Ok(client)
}

/// The server's messages on a connection (notifications for LISTEN).
pub(crate) type Messages = Pin<Box<dyn Stream<Item = Result<AsyncMessage, tokio_postgres::Error>> + Send>>;

/// A connection (with TLS as the URL says) and the stream of its server messages, which must be
/// polled for the connection to make progress.
pub(crate) async fn connect_listening(url: &str) -> Result<(Client, Messages), StoreError> {
    let (client, mut connection) = connect(url).await?;
    Ok((client, Box::pin(futures::stream::poll_fn(move |cx| connection.poll_message(cx)))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_options_are_taken_out_of_the_url() {
        let p =
            parse("postgres://wfc@db:5432/wfc?sslmode=verify-full&sslrootcert=%2Fetc%2Froot.pem&application_name=w")
                .unwrap();
        assert_eq!(p.url, "postgres://wfc@db:5432/wfc?application_name=w");
        assert_eq!(p.mode, Mode::VerifyFull);
        assert_eq!(p.root_cert.as_deref(), Some("/etc/root.pem"));
        let p = parse("postgres://wfc@db/wfc").unwrap();
        assert_eq!((p.url.as_str(), p.mode), ("postgres://wfc@db/wfc", Mode::Prefer));
        let e = parse("postgres://u:secret@db/wfc?sslmode=verify-ca").unwrap_err().to_string();
        assert!(e.contains("needs sslrootcert") && !e.contains("secret"), "{e}");
        assert!(parse("postgres://db/wfc?sslmode=always").unwrap_err().to_string().contains("sslmode=always"));
    }
}

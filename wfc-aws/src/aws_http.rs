//! The HTTPS client of the AWS SDK clients (aws-sdk-lambda for `lambda-sdk`, aws-sdk-swf for
//! `swf-poller`): aws-smithy-http-client's hyper client on rustls with ring, as the rest of the
//! tree (the SDK's default client builds aws-lc-rs, C and cmake).

use aws_smithy_http_client::tls;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The certificates an `https://` endpoint is checked against: the platform's roots (which
/// `SSL_CERT_FILE`/`SSL_CERT_DIR` replace, as rustls-native-certs reads them), and those of the
/// PEM file named by `AWS_CA_BUNDLE`, as the AWS CLI and the other AWS SDKs honour it (a local
/// endpoint with its own certificate authority). A file that is unreadable or holds no valid
/// certificate is an error here (the HTTP client would panic on it).
fn trust_store() -> Result<tls::TrustStore, String> {
    let store = tls::TrustStore::default();
    let Some(path) = std::env::var_os("AWS_CA_BUNDLE").filter(|p| !p.is_empty()) else { return Ok(store) };
    let shown = std::path::Path::new(&path).display().to_string();
    let pem = std::fs::read(&path).map_err(|e| format!("AWS_CA_BUNDLE '{shown}': {e}"))?;
    let bad = |why: String| format!("AWS_CA_BUNDLE '{shown}' {why}");
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("is not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(bad("holds no certificate".to_owned()));
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| bad(format!("holds a certificate that cannot be a root: {e}")))?;
    }
    Ok(store.with_pem_certificate(pem))
}

/// The HTTP client for an SDK's config: rustls on ring, trusting the platform's roots and the
/// certificates of `AWS_CA_BUNDLE`.
pub(crate) fn https_client() -> Result<SharedHttpClient, String> {
    let tls_context = tls::TlsContext::builder()
        .with_trust_store(trust_store()?)
        .build()
        .map_err(|e| format!("the TLS configuration: {e}"))?;
    Ok(aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
        .tls_context(tls_context)
        .build_https())
}

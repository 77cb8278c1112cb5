//! The process's TLS client configuration: ring as the crypto provider and the platform's root certificates,
//! loaded once, when the first server certificate is checked (or ahead of it, by `preload`), and never for plain
//! HTTP. Every HTTP client of the process (model providers and their probes, webfetch, web search, MCP) builds on
//! `client_builder`, so the roots are read and held once rather than once per client.
//!
//! Owns only the TLS settings; what a client connects to, its timeouts and its redirect policy stay with its owner.
//! Verification is the platform verifier's (`rustls-platform-verifier`), unchanged: a certificate that does not
//! chain to a root fails the handshake, and so does every certificate when the platform has no roots at all.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// A `reqwest` client builder with the process's TLS settings; the caller adds its own.
pub fn client_builder() -> reqwest::ClientBuilder {
    match client_config() {
        Some(config) => reqwest::Client::builder().tls_backend_preconfigured(config),
        // Only if ring could not speak TLS 1.2 or 1.3: reqwest's own settings (the same verifier, roots read
        // per client).
        None => reqwest::Client::builder(),
    }
}

/// Load the platform's roots now, on a low-priority thread of its own, for a client that is about to speak
/// HTTPS: its first handshake then finds them loaded instead of reading them (blocking file I/O) on the async
/// runtime. One thread at most, however often this is called.
pub fn preload() {
    static STARTED: AtomicBool = AtomicBool::new(false);
    if process_roots().is_loaded() || STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    if !crate::warm::spawn("tinycode-roots", || {}, || drop(process_roots().verifier())) {
        // No thread: the first handshake reads them itself.
        STARTED.store(false, Ordering::Release);
    }
}

/// Before a request to `url`: `preload` when it is HTTPS. Plain HTTP (a local model server) never reads the roots.
pub fn prepare_for(url: &str) {
    if url.get(..8).is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://")) {
        preload();
    }
}

/// Install ring as the process's default crypto provider: reqwest is built without one, and a client built with
/// reqwest's own TLS settings (here, or inside a library) panics without it. Installing twice is harmless.
fn install_default_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn process_roots() -> &'static Arc<PlatformRoots> {
    static ROOTS: OnceLock<Arc<PlatformRoots>> = OnceLock::new();
    ROOTS.get_or_init(|| Arc::new(PlatformRoots::new(Arc::new(rustls::crypto::ring::default_provider()))))
}

/// The configuration every client of the process shares (a clone shares its verifier and provider).
fn client_config() -> Option<rustls::ClientConfig> {
    static CONFIG: OnceLock<Option<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            install_default_provider();
            config_with(process_roots().clone()).ok()
        })
        .clone()
}

/// A client configuration that verifies servers with `roots`: TLS 1.2 and 1.3 (all that rustls speaks), and the
/// ALPN offer reqwest makes when it builds the configuration itself (HTTP/2, then HTTP/1.1).
fn config_with(roots: Arc<PlatformRoots>) -> Result<rustls::ClientConfig, rustls::Error> {
    let mut config = rustls::ClientConfig::builder_with_provider(roots.provider.clone())
        .with_protocol_versions(rustls::DEFAULT_VERSIONS)?
        .dangerous()
        .with_custom_certificate_verifier(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The platform's verifier, built (which reads every root certificate the platform has) on first use.
#[derive(Debug)]
struct PlatformRoots {
    provider: Arc<CryptoProvider>,
    /// Trusted besides the platform's (tests only: the process's verifier has none).
    extra: Vec<CertificateDer<'static>>,
    verifier: OnceLock<Result<rustls_platform_verifier::Verifier, rustls::Error>>,
}

impl PlatformRoots {
    fn new(provider: Arc<CryptoProvider>) -> Self {
        Self { provider, extra: Vec::new(), verifier: OnceLock::new() }
    }

    fn is_loaded(&self) -> bool {
        self.verifier.get().is_some()
    }

    fn verifier(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        let built = self.verifier.get_or_init(|| {
            let extra = self.extra.iter().cloned();
            let verifier =
                rustls_platform_verifier::Verifier::new_with_extra_roots(extra, self.provider.clone());
            if let Err(e) = &verifier {
                tracing::warn!(error = %e, "no TLS root certificates: every HTTPS connection will fail");
            }
            verifier
        });
        built.as_ref().map_err(Clone::clone)
    }
}

impl ServerCertVerifier for PlatformRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    // The handshake signatures are checked with the provider's algorithms, as the platform verifier does; they
    // need no roots.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

    use super::*;

    /// A certificate for `localhost` and 127.0.0.1 and its key, issued by a test authority no platform trusts.
    const CERT: &[u8] = include_bytes!("../tests/fixtures/tls/localhost-cert.der");
    const AUTHORITY: &[u8] = include_bytes!("../tests/fixtures/tls/ca-cert.der");
    const KEY: &[u8] = include_bytes!("../tests/fixtures/tls/localhost-key.der");

    fn roots(extra: Vec<CertificateDer<'static>>) -> Arc<PlatformRoots> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        Arc::new(PlatformRoots { extra, ..PlatformRoots::new(provider) })
    }

    fn client(roots: &Arc<PlatformRoots>) -> reqwest::Client {
        let config = config_with(roots.clone()).unwrap();
        reqwest::Client::builder().tls_backend_preconfigured(config).no_proxy().build().unwrap()
    }

    /// Answer one request on a loopback port with `ok`, over TLS with the certificate above when `tls` is set.
    fn serve_once(tls: bool) -> (u16, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            if tls {
                let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(KEY.to_vec()));
                let config = rustls::ServerConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![CertificateDer::from(CERT.to_vec())], key)
                .unwrap();
                let connection = rustls::ServerConnection::new(Arc::new(config)).unwrap();
                answer(rustls::StreamOwned::new(connection, socket));
            } else {
                answer(socket);
            }
        });
        (port, handle)
    }

    /// Read one request's head and answer it; a client that gives up on the handshake ends it quietly.
    fn answer(mut stream: impl Read + Write) {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        let _ = stream.flush();
    }

    fn error_chain(error: &dyn std::error::Error) -> String {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        text
    }

    #[tokio::test]
    async fn a_plain_http_request_never_reads_the_platform_roots() {
        let roots = roots(Vec::new());
        let (port, server) = serve_once(false);
        let response = client(&roots).get(format!("http://127.0.0.1:{port}/")).send().await.unwrap();
        assert_eq!((response.status().as_u16(), response.text().await.unwrap()), (200, "ok".to_string()));
        server.join().unwrap();
        assert!(!roots.is_loaded(), "the roots were read for plain HTTP");
    }

    #[tokio::test]
    async fn a_server_whose_certificate_chains_to_no_trusted_root_is_refused() {
        let roots = roots(Vec::new());
        let (port, server) = serve_once(true);
        let error = client(&roots).get(format!("https://127.0.0.1:{port}/")).send().await.unwrap_err();
        server.join().unwrap();
        let chain = error_chain(&error);
        assert!(chain.contains("invalid peer certificate: UnknownIssuer"), "{chain}");
        assert!(roots.is_loaded());
    }

    #[tokio::test]
    async fn a_server_whose_certificate_is_trusted_is_reached_over_tls() {
        let roots = roots(vec![CertificateDer::from(AUTHORITY.to_vec())]);
        let (port, server) = serve_once(true);
        let response = client(&roots).get(format!("https://127.0.0.1:{port}/")).send().await.unwrap();
        assert_eq!((response.status().as_u16(), response.text().await.unwrap()), (200, "ok".to_string()));
        server.join().unwrap();
    }

    #[test]
    fn the_process_settings_offer_http2_then_http1_as_reqwest_would() {
        let config = client_config().unwrap();
        assert_eq!(config.alpn_protocols, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    }
}

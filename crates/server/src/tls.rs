//! TLS for the `tls-port` listeners: the server configuration built once at
//! start-up from the `tls-*` directives, and the stream it serves.
//!
//! A TLS connection goes through the same connection loop as a plain one;
//! only the few places that wait on the socket differ (see `net::Conn`).

use keel_engine::config::Config;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite, SupportedProtocolVersion};
use std::sync::Arc;
pub use tokio_rustls::TlsAcceptor;

/// A client connection to a `tls-port` listener, after its handshake.
pub type TlsStream = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

/// TLS 1.3 suites by their OpenSSL names (`tls-ciphersuites`).
const TLS13_NAMES: &[(&str, rustls::CipherSuite)] = &[
    (
        "TLS_AES_128_GCM_SHA256",
        rustls::CipherSuite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_AES_256_GCM_SHA384",
        rustls::CipherSuite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
];

/// TLS 1.2 suites by their OpenSSL names (`tls-ciphers`): the ECDHE AEAD
/// suites, the only ones Keel serves.
const TLS12_NAMES: &[(&str, rustls::CipherSuite)] = &[
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        rustls::CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// `tls-protocols`: the versions named (case-insensitively, as Redis reads
/// them), or TLS 1.2 and 1.3 when empty.
fn protocols(words: &str) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    if words.trim().is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let mut out = Vec::new();
    for w in words.split_whitespace() {
        let v = if w.eq_ignore_ascii_case("tlsv1.3") {
            &rustls::version::TLS13
        } else if w.eq_ignore_ascii_case("tlsv1.2") {
            &rustls::version::TLS12
        } else {
            return Err(format!(
                "Invalid tls-protocols specified. Use a combination of 'TLSv1.2' and 'TLSv1.3' \
                 (Keel does not serve '{w}')."
            ));
        };
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// The suites of one version named in an OpenSSL-style list (`:`-separated);
/// every suite of that version when the list is empty.
fn suites(
    list: &str,
    names: &[(&str, rustls::CipherSuite)],
    all: &[SupportedCipherSuite],
    directive: &str,
) -> Result<Vec<SupportedCipherSuite>, String> {
    let of_version = |s: &SupportedCipherSuite| names.iter().any(|(_, c)| *c == s.suite());
    if list.trim().is_empty() {
        return Ok(all.iter().copied().filter(of_version).collect());
    }
    let mut out = Vec::new();
    for name in list.split([':', ',', ' ']).filter(|n| !n.is_empty()) {
        let Some((_, id)) = names.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) else {
            let known: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "Failed to configure {directive}: Keel does not serve the cipher '{name}' \
                 (it serves {})",
                known.join(":")
            ));
        };
        if let Some(s) = all.iter().find(|s| s.suite() == *id) {
            if !out.iter().any(|o: &SupportedCipherSuite| o.suite() == *id) {
                out.push(*s);
            }
        }
    }
    Ok(out)
}

fn load_certs(path: &str, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("Failed to load {what} '{path}': {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "Failed to load {what} '{path}': no certificate in it"
        ));
    }
    Ok(certs)
}

/// The CA certificates of `tls-ca-cert-file` and of every file in
/// `tls-ca-cert-dir`.
fn client_roots(ca_file: &str, ca_dir: &str) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let mut add = |certs: Vec<CertificateDer<'static>>, path: &str| -> Result<(), String> {
        for c in certs {
            roots
                .add(c)
                .map_err(|e| format!("Failed to load CA certificate '{path}': {e}"))?;
        }
        Ok(())
    };
    if !ca_file.is_empty() {
        add(load_certs(ca_file, "CA certificate file")?, ca_file)?;
    }
    if !ca_dir.is_empty() {
        let entries = std::fs::read_dir(ca_dir)
            .map_err(|e| format!("Failed to load CA certificate directory '{ca_dir}': {e}"))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            let p = path.to_string_lossy().into_owned();
            // Files that hold no certificate (hash links' targets aside) are skipped.
            if let Ok(certs) = load_certs(&p, "CA certificate") {
                add(certs, &p)?;
            }
        }
    }
    Ok(roots)
}

/// Build the acceptor the `tls-port` listeners hand their connections to.
pub fn acceptor(config: &Config) -> Result<TlsAcceptor, String> {
    let cert_file = config.get("tls-cert-file");
    let key_file = config.get("tls-key-file");
    if cert_file.is_empty() || key_file.is_empty() {
        return Err("Failed to configure TLS: tls-cert-file and tls-key-file are required".into());
    }
    let base = rustls::crypto::ring::default_provider();
    let mut cipher_suites = suites(
        &config.get("tls-ciphersuites"),
        TLS13_NAMES,
        &base.cipher_suites,
        "tls-ciphersuites",
    )?;
    cipher_suites.extend(suites(
        &config.get("tls-ciphers"),
        TLS12_NAMES,
        &base.cipher_suites,
        "tls-ciphers",
    )?);
    let provider = Arc::new(CryptoProvider {
        cipher_suites,
        ..base
    });
    let versions = protocols(&config.get("tls-protocols"))?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("Failed to configure TLS: {e}"))?;
    let auth = config.get("tls-auth-clients");
    let builder = if auth == "no" {
        builder.with_no_client_auth()
    } else {
        let roots = client_roots(
            &config.get("tls-ca-cert-file"),
            &config.get("tls-ca-cert-dir"),
        )?;
        if roots.is_empty() {
            return Err(
                "Failed to configure TLS: either tls-ca-cert-file or tls-ca-cert-dir must be \
                 specified when tls-auth-clients is yes or optional"
                    .into(),
            );
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        let verifier = if auth == "optional" {
            verifier.allow_unauthenticated()
        } else {
            verifier
        };
        let verifier = verifier
            .build()
            .map_err(|e| format!("Failed to configure TLS: {e}"))?;
        builder.with_client_cert_verifier(verifier)
    };
    let certs = load_certs(&cert_file, "certificate")?;
    let key = PrivateKeyDer::from_pem_file(&key_file)
        .map_err(|e| format!("Failed to load private key '{key_file}': {e}"))?;
    let mut server = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("Failed to load certificate '{cert_file}': {e}"))?;
    server.ignore_client_order = config.get_bool("tls-prefer-server-ciphers");
    server.session_storage = if config.get_bool("tls-session-caching") {
        let size = config.get_i64("tls-session-cache-size").max(1) as usize;
        ServerSessionMemoryCache::new(size)
    } else {
        Arc::new(NoServerSessionStorage {})
    };
    Ok(TlsAcceptor::from(Arc::new(server)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_are_read_as_redis_reads_them() {
        assert_eq!(protocols("").map(|v| v.len()), Ok(2));
        let one = protocols("tlsv1.3").expect("1.3");
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].version, rustls::ProtocolVersion::TLSv1_3);
        assert_eq!(protocols("TLSv1.2 TLSv1.3 TLSv1.2").map(|v| v.len()), Ok(2));
        assert!(protocols("TLSv1.1").is_err());
    }

    #[test]
    fn cipher_names_map_to_suites_and_unknown_ones_are_refused() {
        let all = rustls::crypto::ring::default_provider().cipher_suites;
        let tls13 = suites("", TLS13_NAMES, &all, "tls-ciphersuites").expect("all");
        assert_eq!(tls13.len(), 3);
        let one = suites("TLS_AES_256_GCM_SHA384", TLS13_NAMES, &all, "x").expect("one");
        assert_eq!(
            one[0].suite(),
            rustls::CipherSuite::TLS13_AES_256_GCM_SHA384
        );
        let two = suites(
            "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305",
            TLS12_NAMES,
            &all,
            "tls-ciphers",
        )
        .expect("two");
        assert_eq!(two.len(), 2);
        let e = suites("DES-CBC3-SHA", TLS12_NAMES, &all, "tls-ciphers").expect_err("3des");
        assert!(e.contains("'DES-CBC3-SHA'"), "{e}");
    }
}

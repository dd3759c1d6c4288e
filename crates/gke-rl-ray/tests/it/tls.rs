//! Every TLS client of the crate (reqwest for the Jobs API, tokio-tungstenite for the log
//! stream) builds with the process's one crypto provider: against an `https://` peer that
//! breaks off the handshake each fails with an error, never a panic, and no provider needs to
//! be installed first.

use std::net::TcpListener;

#[tokio::test]
async fn https_addresses_fail_with_an_error_not_a_panic() {
    // Accepts and hangs up: the client builds its TLS configuration, then the handshake fails.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("https://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for connection in listener.incoming() {
            drop(connection);
        }
    });
    let client = gke_rl_ray::Client::new(&address, gke_rl_ray::ClientOptions::default()).unwrap();
    assert!(client.version().await.is_err());
    assert!(client.tail("raysubmit_x").await.is_err(), "the WebSocket client");
    assert!(rustls::crypto::CryptoProvider::get_default().is_some(), "the client chose the provider");
}

//! The fake API server over HTTPS on loopback, with a fresh test CA: what a client built from a
//! kubeconfig talks to. Requests must carry the bearer token an exec plugin hands out; a
//! port-forward to the head pod is a real `v4.channel.k8s.io` WebSocket pumped to a TCP address.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use futures_util::{SinkExt as _, StreamExt as _};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::FakeApiServer;

/// The port-forward subprotocol served (kube offers v5 and v4; v4 is the one every API server has).
const PORT_FORWARD_PROTOCOL: &str = "v4.channel.k8s.io";

/// Where the HTTPS server listens and the CA that signed its certificate.
pub struct Https {
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    /// The test CA's certificate, PEM: a kubeconfig's `certificate-authority(-data)`.
    pub ca_pem: String,
}

impl FakeApiServer {
    /// Serves this API over HTTPS on a free loopback port until the runtime stops. Requests
    /// without `Authorization: Bearer {token}` get 401, as an expired credential does.
    pub async fn serve_https(&self, token: &str) -> std::io::Result<Https> {
        let (tls, ca_pem) = tls_config().map_err(std::io::Error::other)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("https://{}", listener.local_addr()?);
        let (server, bearer) = (self.clone(), format!("Bearer {token}"));
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, server, bearer) = (acceptor.clone(), server.clone(), bearer.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = hyper::service::service_fn(move |request| {
                        let (server, bearer) = (server.clone(), bearer.clone());
                        async move { Ok::<_, Infallible>(server.handle(request, &bearer).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).with_upgrades().await;
                });
            }
        });
        Ok(Https { url, ca_pem })
    }

    async fn handle(&self, request: Request<Incoming>, bearer: &str) -> Response<Full<Bytes>> {
        let authorization = request.headers().get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
        if authorization.as_deref() != Some(bearer) {
            self.answer(request.method(), request.uri(), "", authorization.as_deref());
            return json(StatusCode::UNAUTHORIZED, &super::status(401, "Unauthorized"));
        }
        if request.uri().path().ends_with("/portforward") && self.lock().denied.is_none() {
            self.answer(request.method(), request.uri(), "", authorization.as_deref());
            return self.port_forward(request);
        }
        let (parts, body) = request.into_parts();
        let body = body.collect().await.map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned()).unwrap_or_default();
        let (status, answer) = self.answer(&parts.method, &parts.uri, &body, authorization.as_deref());
        json(status, &answer)
    }

    /// Accepts the WebSocket upgrade and pumps the one port's data channel to the head address.
    fn port_forward(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let port: Option<u16> = request.uri().query().and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("ports="))?.parse().ok());
        let key = request.headers().get(http::header::SEC_WEBSOCKET_KEY).map(|k| k.as_bytes().to_vec());
        let offered = request.headers().get(http::header::SEC_WEBSOCKET_PROTOCOL).and_then(|v| v.to_str().ok()).unwrap_or_default();
        let (Some(port), Some(key), true) = (port, key, offered.contains(PORT_FORWARD_PROTOCOL)) else {
            return json(StatusCode::BAD_REQUEST, &super::status(400, "a port-forward needs one port and a v4 WebSocket upgrade"));
        };
        // Only to the head pod of the RayCluster there is now, for as long as it is there.
        let pod = request.uri().path().rsplit('/').nth(1).unwrap_or_default().to_owned();
        let (target, head, generation) = {
            let state = self.lock();
            (state.head_forward, state.cluster().map(|(name, _)| format!("{name}-head")), state.clusters_removed)
        };
        if head.as_deref() != Some(pod.as_str()) {
            return json(StatusCode::NOT_FOUND, &super::status(404, &format!("pods \"{pod}\" not found")));
        }
        let server = self.clone();
        let alive = move || server.lock().clusters_removed == generation;
        tokio::spawn(async move {
            let Ok(upgraded) = hyper::upgrade::on(request).await else { return };
            let socket = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
            pump(socket, port, target, alive).await;
        });
        Response::builder()
            .status(StatusCode::SWITCHING_PROTOCOLS)
            .header(http::header::CONNECTION, "Upgrade")
            .header(http::header::UPGRADE, "websocket")
            .header(http::header::SEC_WEBSOCKET_ACCEPT, tokio_tungstenite::tungstenite::handshake::derive_accept_key(&key))
            .header(http::header::SEC_WEBSOCKET_PROTOCOL, PORT_FORWARD_PROTOCOL)
            .body(Full::default())
            .expect("a valid upgrade response")
    }
}

/// One port over the channel protocol: channel 0 carries data, channel 1 errors; the first
/// frame on each names the port. The stream ends when `alive` says the pod is gone.
async fn pump<S>(mut socket: WebSocketStream<S>, port: u16, target: Option<SocketAddr>, alive: impl Fn() -> bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let [low, high] = port.to_le_bytes();
    for channel in [0u8, 1] {
        if socket.send(Message::binary(vec![channel, low, high])).await.is_err() {
            return;
        }
    }
    let connected = match target {
        Some(address) => TcpStream::connect(address).await.map_err(|e| e.to_string()),
        None => Err("the fake has no head to forward to".to_owned()),
    };
    let mut tcp = match connected {
        Ok(tcp) => tcp,
        Err(e) => {
            let message = format!("error forwarding port {port}: {e}");
            let _ = socket.send(Message::binary([&[1u8][..], message.as_bytes()].concat())).await;
            let _ = socket.close(None).await;
            return;
        }
    };
    let mut buffer = vec![0u8; 64 * 1024];
    let mut look = tokio::time::interval(std::time::Duration::from_millis(100));
    loop {
        tokio::select! {
            _ = look.tick() => if !alive() {
                break;
            },
            read = tcp.read(&mut buffer) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if socket.send(Message::binary([&[0u8][..], &buffer[..n]].concat())).await.is_err() {
                        return;
                    }
                }
            },
            message = socket.next() => match message {
                Some(Ok(Message::Binary(bytes))) if bytes.first() == Some(&0) => {
                    if tcp.write_all(&bytes[1..]).await.is_err() {
                        break;
                    }
                }
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
        }
    }
    let _ = socket.close(None).await;
}

fn json(status: StatusCode, value: &serde_json::Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(value.to_string())))
        .expect("a valid response")
}

/// A fresh CA and a certificate it signed for 127.0.0.1 and localhost.
fn tls_config() -> Result<(rustls::ServerConfig, String), Box<dyn std::error::Error + Send + Sync>> {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "gke-rl test CA");
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate()?)?;
    let mut leaf_params = rcgen::CertificateParams::new(vec!["localhost".to_owned()])?;
    leaf_params.subject_alt_names.push(rcgen::SanType::IpAddress([127, 0, 0, 1].into()));
    let leaf_key = rcgen::KeyPair::generate()?;
    let leaf = leaf_params.signed_by(&leaf_key, &ca)?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((config, ca.as_ref().pem()))
}

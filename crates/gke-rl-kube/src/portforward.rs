//! A local TCP port forwarded to a port of the RayCluster's head pod, as `kubectl port-forward`
//! does, without kubectl.
//!
//! Every local connection gets its own upstream stream, so a dropped stream (a restarted head,
//! an API server that closed the upgrade) costs one connection: the next one finds the head pod
//! again. Clients such as the Ray Jobs client reconnect on their own.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::Namespaced;

/// Where forwarded connections go.
pub trait Upstream: Send + Sync + 'static {
    /// The byte stream to the remote port.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    /// Opens a stream to the remote port.
    fn connect(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send;
}

/// A port of a RayCluster's head pod, reached through the API server's port-forward upgrade.
pub struct HeadPort {
    pub(crate) clusters: Namespaced,
    pub(crate) cluster: String,
    pub(crate) port: u16,
}

impl Upstream for HeadPort {
    type Stream = tokio::io::DuplexStream;

    async fn connect(&self) -> io::Result<Self::Stream> {
        let pod = self.clusters.head_pod(&self.cluster).await.map_err(io::Error::other)?;
        let pods: Api<Pod> = Api::namespaced(self.clusters.client.clone(), &self.clusters.namespace);
        let action = || format!("port-forward to {}/{pod}:{}", self.clusters.namespace, self.port);
        let mut forwarder = self.clusters.call(action, pods.portforward(&pod, &[self.port])).await.map_err(io::Error::other)?;
        let stream = forwarder.take_stream(self.port).ok_or_else(|| io::Error::other("the port-forward has no stream for the port"))?;
        // The forwarder's task pumps the WebSocket; it ends when the stream is closed.
        tokio::spawn(forwarder.join());
        Ok(stream)
    }
}

/// A running forward; dropping it stops accepting connections.
pub struct Forwarding {
    /// The local address to connect to.
    pub local: SocketAddr,
    accept: JoinHandle<()>,
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Called with what went wrong with one connection (the forward itself carries on).
pub type OnError = Arc<dyn Fn(&io::Error) + Send + Sync>;

/// Listens on `bind` (port 0 picks a free one) and forwards every connection to `upstream`.
/// Opening the upstream stream is retried for up to `retry` (a head pod that is restarting)
/// before the local connection is closed.
pub async fn forward<U: Upstream>(bind: SocketAddr, upstream: U, retry: Duration, on_error: OnError) -> io::Result<Forwarding> {
    let listener = TcpListener::bind(bind).await?;
    let local = listener.local_addr()?;
    let upstream = Arc::new(upstream);
    let accept = tokio::spawn(async move {
        loop {
            let mut inbound = match listener.accept().await {
                Ok((inbound, _)) => inbound,
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    on_error(&e);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (upstream, on_error) = (upstream.clone(), on_error.clone());
            tokio::spawn(async move {
                match connect(&*upstream, retry).await {
                    Ok(mut outbound) => {
                        // A reset by either side ends this connection only.
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                    Err(e) => on_error(&e),
                }
            });
        }
    });
    Ok(Forwarding { local, accept })
}

async fn connect<U: Upstream>(upstream: &U, retry: Duration) -> io::Result<U::Stream> {
    let start = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        match upstream.connect().await {
            Ok(stream) => return Ok(stream),
            Err(e) if start.elapsed() + pause > retry => return Err(e),
            Err(_) => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpStream;

    /// A real TCP server behind the forward: the Kubernetes upgrade is what is replaced,
    /// the pump is the one the CLI uses.
    struct Tcp {
        server: SocketAddr,
        refusals_left: AtomicUsize,
    }

    impl Upstream for Tcp {
        type Stream = TcpStream;

        async fn connect(&self) -> io::Result<TcpStream> {
            if self.refusals_left.load(Ordering::SeqCst) > 0 {
                self.refusals_left.fetch_sub(1, Ordering::SeqCst);
                return Err(io::Error::other("the head pod is restarting"));
            }
            TcpStream::connect(self.server).await
        }
    }

    /// Answers each line with "echo: <line>"; the first connection is cut after one answer.
    async fn server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for index in 0.. {
                let (socket, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let (read, mut write) = socket.into_split();
                    let mut lines = BufReader::new(read).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        write.write_all(format!("echo: {line}\n").as_bytes()).await.unwrap();
                        if index == 0 {
                            return; // the dropped stream
                        }
                    }
                });
            }
        });
        address
    }

    async fn ask(stream: &mut BufReader<TcpStream>, line: &str) -> io::Result<String> {
        stream.get_mut().write_all(format!("{line}\n").as_bytes()).await?;
        let mut answer = String::new();
        stream.read_line(&mut answer).await?;
        Ok(answer)
    }

    /// A forward to `upstream` on a free port, and the count of connections it gave up on.
    async fn start(upstream: Tcp, retry: Duration) -> (Forwarding, Arc<AtomicUsize>) {
        let errors = Arc::new(AtomicUsize::new(0));
        let counted = errors.clone();
        let on_error: OnError = Arc::new(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        (forward("127.0.0.1:0".parse().unwrap(), upstream, retry, on_error).await.unwrap(), errors)
    }

    #[tokio::test]
    async fn forwards_bytes_and_survives_a_dropped_stream() {
        let upstream = Tcp { server: server().await, refusals_left: AtomicUsize::new(2) };
        let (forwarding, errors) = start(upstream, Duration::from_secs(5)).await;

        // Two refused upstream connects are retried within one local connection.
        let mut first = BufReader::new(TcpStream::connect(forwarding.local).await.unwrap());
        assert_eq!(ask(&mut first, "one").await.unwrap(), "echo: one\n");
        // The server cut that stream: the local side sees the end, not a hang.
        assert_eq!(ask(&mut first, "two").await.unwrap_or_default(), "");

        let mut second = BufReader::new(TcpStream::connect(forwarding.local).await.unwrap());
        for n in 0..100 {
            assert_eq!(ask(&mut second, &n.to_string()).await.unwrap(), format!("echo: {n}\n"));
        }
        assert_eq!(errors.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn gives_up_on_an_upstream_that_stays_down() {
        let upstream = Tcp { server: "127.0.0.1:1".parse().unwrap(), refusals_left: AtomicUsize::new(usize::MAX) };
        let (forwarding, errors) = start(upstream, Duration::from_millis(300)).await;
        let mut local = BufReader::new(TcpStream::connect(forwarding.local).await.unwrap());
        assert_eq!(ask(&mut local, "anyone?").await.unwrap_or_default(), "");
        assert_eq!(errors.load(Ordering::SeqCst), 1);
    }
}

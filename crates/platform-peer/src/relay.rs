//! A TCP relay to put between the daemon and the peer, whose open connections can be
//! black-holed: their bytes are read and dropped, nothing is closed, as after a Wi-Fi change
//! that silently loses packets. Connections opened later are relayed normally.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::net::TcpStream;

/// A relay on 127.0.0.1 to a backend (the peer's address, or a TLS front before it).
#[derive(Debug)]
pub struct BlackholeRelay {
    port: u16,
    /// Connections numbered up to this value are black-holed.
    cut: Arc<AtomicU64>,
    /// Connections accepted so far (the first is number 1).
    accepted: Arc<AtomicU64>,
}

impl BlackholeRelay {
    /// Listens on an ephemeral loopback port and relays every connection to `backend`
    /// until the runtime ends.
    pub async fn start(backend: SocketAddr) -> std::io::Result<BlackholeRelay> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let cut = Arc::new(AtomicU64::new(0));
        let accepted = Arc::new(AtomicU64::new(0));
        let (c, a) = (cut.clone(), accepted.clone());
        tokio::spawn(async move {
            while let Ok((front, _)) = listener.accept().await {
                let Ok(back) = TcpStream::connect(backend).await else {
                    continue;
                };
                let mine = a.fetch_add(1, Ordering::SeqCst) + 1;
                let (fr, fw) = front.into_split();
                let (br, bw) = back.into_split();
                tokio::spawn(pump(fr, bw, c.clone(), mine));
                tokio::spawn(pump(br, fw, c.clone(), mine));
            }
        });
        Ok(BlackholeRelay {
            port,
            cut,
            accepted,
        })
    }

    /// The relay's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Black-holes every connection open now; later ones are relayed.
    pub fn black_hole(&self) {
        self.cut
            .store(self.accepted.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}

async fn pump(
    mut r: tokio::net::tcp::OwnedReadHalf,
    mut w: tokio::net::tcp::OwnedWriteHalf,
    cut: Arc<AtomicU64>,
    mine: u64,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if cut.load(Ordering::SeqCst) >= mine {
            continue; // dropped on the floor; the socket stays open
        }
        if w.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

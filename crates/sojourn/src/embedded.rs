//! A pathology server inside this process, on its own thread and runtime, for `demo`, `suite`
//! and anything else that needs a target to run against. It records its ground truth in memory
//! so the demo can say what each loop actually sent.
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use sojourn_scenario::truth::{read_csv, TruthRecord};
use sojourn_scenario::Scenario;
use sojourn_server::{serve, Protocol, ServeOptions};

/// A truth log kept in memory.
#[derive(Clone, Default)]
struct SharedLog(Arc<Mutex<Vec<u8>>>);

impl Write for SharedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("truth log lock")
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The pathology server in this process, on a free loopback port, keeping its truth log in
/// memory: what `demo` and `suite` run against.
pub struct EmbeddedServer {
    /// Where it listens (127.0.0.1, a free port).
    pub addr: SocketAddr,
    protocol: Protocol,
    log: SharedLog,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl EmbeddedServer {
    /// Starts the scenario on 127.0.0.1 with a port the kernel picks. The server gets one
    /// runtime thread: on a 2-core machine the other core is the load generator's.
    pub fn start(scenario: Scenario) -> anyhow::Result<EmbeddedServer> {
        EmbeddedServer::start_as(scenario, Protocol::Http1)
    }

    /// [`EmbeddedServer::start`], speaking `protocol`: HTTP/1.1, or gRPC over h2c.
    pub fn start_as(scenario: Scenario, protocol: Protocol) -> anyhow::Result<EmbeddedServer> {
        let log = SharedLog::default();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let truth = log.clone();
        let thread = std::thread::Builder::new()
            .name("sojourn-server".into())
            .spawn(move || -> anyhow::Result<()> {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()?;
                rt.block_on(async move {
                    let listener =
                        sojourn_server::bind("127.0.0.1:0".parse().expect("a valid address"))?;
                    addr_tx.send(listener.local_addr()?).ok();
                    let options = ServeOptions {
                        protocol,
                        truth: Some(Box::new(truth)),
                        ..ServeOptions::default()
                    };
                    serve(listener, scenario, options, async move {
                        let _ = stop_rx.await;
                    })
                    .await?;
                    Ok(())
                })
            })?;
        let addr = addr_rx
            .recv()
            .context("the embedded server did not start")?;
        Ok(EmbeddedServer {
            addr,
            protocol,
            log,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// `http://ADDR/api`: the scenario's endpoint, where every request is served and logged.
    /// A gRPC server's is `grpc://ADDR`: every call to it is served and logged.
    pub fn url(&self) -> String {
        match self.protocol {
            Protocol::Http1 => format!("http://{}/api", self.addr),
            Protocol::Grpc => format!("grpc://{}", self.addr),
        }
    }

    /// Stops the server and returns what it saw.
    pub fn stop(mut self) -> anyhow::Result<Vec<TruthRecord>> {
        self.shutdown()?;
        let bytes = std::mem::take(&mut *self.log.0.lock().expect("truth log lock"));
        read_csv(bytes.as_slice()).context("reading the embedded server's truth log")
    }

    fn shutdown(&mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| anyhow::anyhow!("the embedded server panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for EmbeddedServer {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

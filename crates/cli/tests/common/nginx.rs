//! nginx started by a test: one process (`master_process off`, so one SIGSTOP freezes all of
//! it), its files in a temporary folder, on free loopback ports (nginx cannot bind port 0 and
//! report it). Thawed and killed when dropped, whatever the test did to it.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{temp_dir, Signal, TestDir};

pub struct Nginx {
    child: Child,
    pub dir: TestDir,
    /// The ports its `servers` block was given, in order.
    pub ports: Vec<u16>,
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// nginx's executable, or `None` after saying SKIPPED (a failure under `CI=true`).
fn binary() -> Option<PathBuf> {
    let found = sojourn_testkit::on_path("nginx")
        .or_else(|| Some(PathBuf::from("/usr/sbin/nginx")).filter(|p| p.is_file()));
    if found.is_none() {
        sojourn_testkit::skip("nginx is not installed (apt-get install nginx-light)");
    }
    found
}

impl Nginx {
    /// Starts nginx in a fresh folder named for `name`, `ports` free ports given to `http`,
    /// which writes the inside of its `http` block (log format, access log and `server`
    /// blocks) from the folder and the ports; waits until every port takes a connection.
    pub fn start(
        name: &str,
        ports: usize,
        http: impl FnOnce(&Path, &[u16]) -> String,
    ) -> Option<Nginx> {
        let bin = binary()?;
        let dir = temp_dir(name);
        let ports: Vec<u16> = (0..ports).map(|_| free_port()).collect();
        let d = dir.display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log;\nevents {{ worker_connections 4096; }}\nhttp {{\n  \
             client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;\n  \
             uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n{}\n}}\n",
            http(&dir, &ports)
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let child = Command::new(bin)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-p")
            .arg(&*dir)
            .stderr(Stdio::null())
            .spawn()
            .expect("starting nginx");
        let nginx = Nginx { child, dir, ports };
        nginx.wait_listening();
        Some(nginx)
    }

    fn wait_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        for &port in &self.ports {
            while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "nginx did not listen: {}",
                    std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Sends `sig` (STOP, CONT) to the one process.
    pub fn signal(&self, sig: Signal) {
        super::signal(&self.child, sig);
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // A test that failed while nginx was frozen must not leave a stopped process behind.
        super::thaw(&self.child);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

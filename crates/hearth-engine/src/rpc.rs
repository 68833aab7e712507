//! Devices of other machines, through llama.cpp's RPC backend: each
//! `[engine] rpc_servers` entry is a `hearth-rpc-server` (or llama.cpp's
//! `rpc-server` of the same version) whose devices join this process's as
//! GPUs, so layers and their KV cache can be offloaded to them.
//!
//! The protocol has no authentication: anyone who reaches the port can run
//! code on the server's device and read what it holds. A server on an
//! address outside loopback and the private ranges is warned about.

use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use llama_cpp_sys_2 as sys;

/// `ggml_backend_rpc_add_server`, looked up in the RPC module.
type AddServer = unsafe extern "C" fn(*const std::ffi::c_char) -> sys::ggml_backend_reg_t;

/// What became of one configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcServer {
    pub endpoint: String,
    /// Why its devices are not used; `None` when they joined.
    pub error: Option<String>,
    /// A warning to show even when it works (a public address).
    pub warning: Option<String>,
}

/// Registers the devices of every server that answers.
pub fn add_servers(endpoints: &[String]) -> Vec<RpcServer> {
    endpoints
        .iter()
        .map(|endpoint| RpcServer {
            endpoint: endpoint.clone(),
            warning: public_warning(endpoint),
            error: add(endpoint).err(),
        })
        .collect()
}

fn add(endpoint: &str) -> Result<(), String> {
    // llama.cpp aborts the process when a server cannot be reached or does
    // not answer its handshake: ask first, with a time limit.
    hello(endpoint)?;
    let name = c"RPC";
    // SAFETY: a valid C string; ggml returns null when no such backend.
    let reg = unsafe { sys::ggml_backend_reg_by_name(name.as_ptr()) };
    if reg.is_null() {
        return Err(
            "no RPC backend module (libggml-rpc.so) is loaded; fix: run `make rpc-server` and set `[engine] backends_dir` to target/rpc/client"
                .into(),
        );
    }
    // SAFETY: a registered backend and a valid C string.
    let add = unsafe {
        sys::ggml_backend_reg_get_proc_address(reg, c"ggml_backend_rpc_add_server".as_ptr())
    };
    if add.is_null() {
        return Err(
            "the RPC backend module cannot add servers (another llama.cpp version?)".into(),
        );
    }
    let c_endpoint =
        std::ffi::CString::new(endpoint).map_err(|_| "a NUL in the address".to_string())?;
    // SAFETY: the module's own function, of the type its header declares.
    let server = unsafe {
        let add: AddServer = std::mem::transmute(add);
        add(c_endpoint.as_ptr())
    };
    if server.is_null() {
        return Err(format!(
            "{endpoint} did not answer as an RPC server; fix: start `hearth-rpc-server --host ADDR --port PORT` there (`make rpc-server` builds it), or remove it from `[engine] rpc_servers`"
        ));
    }
    // SAFETY: a registry ggml made for this server; registering adds its
    // devices to the process's list.
    unsafe { sys::ggml_backend_register(server) };
    Ok(())
}

/// The protocol version this llama.cpp speaks (`RPC_PROTO_MAJOR_VERSION` in
/// `ggml-rpc.h`), the HELLO command's number and its capability bytes
/// (`RPC_CONN_CAPS_SIZE`): a server of another major version is refused.
const PROTO_MAJOR: u8 = 7;
const PROTO_MINOR: u8 = 0;
const CMD_HELLO: u8 = 14;
const CAPS: usize = 24;
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// llama.cpp's HELLO exchange over a connection of our own, closed after:
/// `| cmd: u8 | size: u64 LE | caps |` out, `| size: u64 LE | major, minor,
/// patch, pad, caps |` back. Zero capabilities ask for the plain transport.
fn hello(endpoint: &str) -> Result<(), String> {
    let unreachable = |why: String| {
        format!(
            "{endpoint} did not answer as an RPC server ({why}); fix: start `hearth-rpc-server --host ADDR --port PORT` there (`make rpc-server` builds it), or remove it from `[engine] rpc_servers`"
        )
    };
    let addr = endpoint
        .to_socket_addrs()
        .map_err(|e| unreachable(e.to_string()))?
        .next()
        .ok_or_else(|| unreachable("no address".into()))?;
    let mut sock =
        TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).map_err(|e| unreachable(e.to_string()))?;
    sock.set_read_timeout(Some(PROBE_TIMEOUT))
        .and_then(|()| sock.set_write_timeout(Some(PROBE_TIMEOUT)))
        .map_err(|e| unreachable(e.to_string()))?;
    let mut request = vec![CMD_HELLO];
    request.extend_from_slice(&(CAPS as u64).to_le_bytes());
    request.extend_from_slice(&[0; CAPS]);
    sock.write_all(&request)
        .map_err(|e| unreachable(e.to_string()))?;
    let mut size = [0u8; 8];
    sock.read_exact(&mut size)
        .map_err(|e| unreachable(format!("no handshake: {e}")))?;
    if u64::from_le_bytes(size) != 4 + CAPS as u64 {
        return Err(unreachable("not llama.cpp's RPC protocol".into()));
    }
    let mut response = [0u8; 4 + CAPS];
    sock.read_exact(&mut response)
        .map_err(|e| unreachable(format!("no handshake: {e}")))?;
    let [major, minor, patch, ..] = response;
    if major != PROTO_MAJOR || minor > PROTO_MINOR {
        return Err(format!(
            "{endpoint} speaks RPC protocol {major}.{minor}.{patch}, this hearth {PROTO_MAJOR}.x; fix: build its server from this hearth's sources (`make rpc-server`)"
        ));
    }
    Ok(())
}

/// A warning when the endpoint's host is, or resolves to, an address that
/// is neither loopback nor private.
fn public_warning(endpoint: &str) -> Option<String> {
    let addrs: Vec<IpAddr> = endpoint
        .to_socket_addrs()
        .map(|a| a.map(|s| s.ip()).collect())
        .unwrap_or_default();
    let public: Vec<String> = addrs
        .iter()
        .filter(|ip| !is_private(ip))
        .map(ToString::to_string)
        .collect();
    (!public.is_empty()).then(|| {
        format!(
            "the RPC server {endpoint} is on a public address ({}): llama.cpp's RPC protocol has no authentication, so anyone who reaches it can use the device and read what it holds; bind it to a private network only",
            public.join(", ")
        )
    })
}

/// Loopback, private (RFC 1918, unique local), link-local or shared
/// (carrier-grade NAT, as Tailscale uses) addresses.
pub fn is_private(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.is_loopback() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listener that answers one connection with `reply`.
    fn fake_server(reply: Vec<u8>) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            if let Ok((mut sock, _)) = listener.accept() {
                let mut request = [0u8; 1 + 8 + CAPS];
                let _ = sock.read_exact(&mut request);
                let _ = sock.write_all(&reply);
            }
        });
        endpoint
    }

    fn hello_reply(major: u8, minor: u8) -> Vec<u8> {
        let mut reply = (4 + CAPS as u64).to_le_bytes().to_vec();
        reply.extend_from_slice(&[major, minor, 0, 0]);
        reply.extend_from_slice(&[0; CAPS]);
        reply
    }

    #[test]
    fn the_handshake_refuses_what_llama_cpp_would_abort_on() {
        // Positive control: the protocol this llama.cpp speaks.
        assert_eq!(hello(&fake_server(hello_reply(PROTO_MAJOR, 0))), Ok(()));
        let other = hello(&fake_server(hello_reply(6, 0))).unwrap_err();
        assert!(
            other.contains("protocol 6.0.0") && other.contains("make rpc-server"),
            "{other}"
        );
        let newer = hello(&fake_server(hello_reply(PROTO_MAJOR, 1))).unwrap_err();
        assert!(newer.contains("protocol 7.1"), "{newer}");
        let http = hello(&fake_server(b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec())).unwrap_err();
        assert!(http.contains("not llama.cpp's RPC protocol"), "{http}");
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let refused = hello(&closed.to_string()).unwrap_err();
        assert!(refused.contains("fix:"), "{refused}");
    }

    #[test]
    fn private_and_public_addresses() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.9",
            "192.168.1.20",
            "100.100.1.1",
            "169.254.3.4",
            "::1",
            "fd12::5",
            "fe80::1",
        ] {
            assert!(is_private(&private.parse().unwrap()), "{private}");
        }
        for public in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2001:db8::1",
            "1.1.1.1",
        ] {
            assert!(!is_private(&public.parse().unwrap()), "{public}");
        }
        assert!(public_warning("127.0.0.1:50052").is_none());
        let warned = public_warning("8.8.8.8:50052").expect("a public address is warned about");
        assert!(warned.contains("no authentication"), "{warned}");
    }
}

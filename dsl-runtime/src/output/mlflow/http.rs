//! HTTP/1.1 requests over a plain TCP connection, one connection per request.
//!
//! Written by hand: the tracking server speaks JSON over HTTP, and the HTTP crates either bring an
//! async runtime or TLS and compression stacks that every experiment would compile for a feature
//! most runs do not use. Only `http://` is spoken; with a server behind `https://` a run says
//! so at start-up and is not tracked.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long connecting and each read or write may take: a server that does not answer costs the
/// background thread this long, never the training thread.
const CONNECT: Duration = Duration::from_secs(3);
const READ_WRITE: Duration = Duration::from_secs(20);

/// A server: `http://host[:port][/prefix]`, with the `Authorization` header to send.
#[derive(Clone)]
pub(crate) struct Endpoint {
    host: String,
    port: u16,
    prefix: String,
    authorization: Option<String>,
}

/// An answer: its status and body.
pub(crate) struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Endpoint {
    /// `uri` as `MLFLOW_TRACKING_URI` holds it.
    pub fn parse(uri: &str, authorization: Option<String>) -> Result<Self, String> {
        let rest = match uri.split_once("://") {
            Some(("http", rest)) => rest,
            Some((scheme, _)) => {
                return Err(format!(
                    "`{uri}`: only `http://` tracking servers are supported (not `{scheme}://`); reach an https server through a local proxy"
                ));
            }
            None => {
                return Err(format!(
                    "`{uri}` is not a URL: write e.g. `http://127.0.0.1:5000`"
                ));
            }
        };
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        // Credentials in the URL are not supported: they would end up in `config.json`.
        if authority.contains('@') {
            return Err(
                "credentials go in MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD or MLFLOW_TRACKING_TOKEN, not in the URL"
                    .to_owned(),
            );
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) => (
                host,
                port.parse()
                    .map_err(|_| format!("`{uri}`: `{port}` is not a port number"))?,
            ),
            None => (authority, 80),
        };
        if host.is_empty() {
            return Err(format!("`{uri}` names no host"));
        }
        Ok(Self {
            host: host.to_owned(),
            port,
            prefix: prefix.to_owned(),
            authorization,
        })
    }

    /// `method` on `path` (under the prefix), with a JSON or binary `body`.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, &[u8])>,
    ) -> std::io::Result<Response> {
        let address = (self.host.as_str(), self.port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::other(format!("`{}` has no address", self.host)))?;
        let mut stream = TcpStream::connect_timeout(&address, CONNECT)?;
        stream.set_read_timeout(Some(READ_WRITE))?;
        stream.set_write_timeout(Some(READ_WRITE))?;
        let mut head = format!(
            "{method} {}{path} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\nAccept: application/json\r\n",
            self.prefix, self.host, self.port
        );
        if let Some(authorization) = &self.authorization {
            head.push_str(&format!("Authorization: {authorization}\r\n"));
        }
        let (content_type, bytes) = body.unwrap_or(("application/json", &[]));
        head.push_str(&format!(
            "Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            bytes.len()
        ));
        stream.write_all(head.as_bytes())?;
        stream.write_all(bytes)?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        parse_response(&answer)
    }
}

fn parse_response(answer: &[u8]) -> std::io::Result<Response> {
    let malformed = || std::io::Error::other("the server's answer is not HTTP");
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(malformed)?;
    let head = String::from_utf8_lossy(&answer[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(malformed)?;
    let chunked = lines.any(|line| {
        let line = line.to_ascii_lowercase();
        line.starts_with("transfer-encoding:") && line.contains("chunked")
    });
    let rest = &answer[end + 4..];
    let body = if chunked {
        unchunk(rest).ok_or_else(malformed)?
    } else {
        rest.to_vec()
    };
    Ok(Response { status, body })
}

/// A chunked body's bytes.
fn unchunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// `user:password` for a `Basic` header (RFC 4648 base64, with padding).
pub(crate) fn basic(user: &str, password: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = format!("{user}:{password}").into_bytes();
    let mut out = String::from("Basic ");
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_answers_and_credentials_read_as_http_says() {
        let endpoint = Endpoint::parse("http://127.0.0.1:5000/mlflow/", None).unwrap();
        assert_eq!(
            (
                endpoint.host.as_str(),
                endpoint.port,
                endpoint.prefix.as_str()
            ),
            ("127.0.0.1", 5000, "/mlflow")
        );
        let refused = |uri| Endpoint::parse(uri, None).err().unwrap_or_default();
        assert!(refused("https://x").contains("only `http://`"));
        assert!(refused("http://u:p@x").contains("not in the URL"));
        let plain = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!((plain.status, plain.body.as_slice()), (200, &b"{}"[..]));
        let chunked = parse_response(
            b"HTTP/1.1 404 NOT FOUND\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(
            (chunked.status, chunked.body.as_slice()),
            (404, &b"abcde"[..])
        );
        // RFC 4648's test vectors, through `user:password`'s colon.
        assert_eq!(
            basic("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        assert_eq!(basic("a", ""), "Basic YTo=");
        assert_eq!(basic("ab", "c"), "Basic YWI6Yw==");
    }
}

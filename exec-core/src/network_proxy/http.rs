//! The HTTP front end: `CONNECT host:port` and absolute-form plain-HTTP requests (hyper).

use std::convert::Infallible;
use std::sync::Arc;

use cordon_policies::normalize_host;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::relay::{relay, relay_tcp};
use super::{Destination, HANDSHAKE_TIMEOUT, State};

type ProxyBody = BoxBody<Bytes, hyper::Error>;

fn text_response(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut response =
        Response::new(Full::new(Bytes::from(body)).map_err(|never| match never {}).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A CONNECT's tunnel, run by the connection's own task once hyper hands the connection over.
type Tunnel = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Serves one client connection as HTTP/1.1. A CONNECT's tunnel runs here, inside this
/// connection's task, so stopping the proxy stops every tunnel too.
pub(super) async fn serve(stream: TcpStream, state: Arc<State>) {
    let (tunnels, mut tunnel) = tokio::sync::mpsc::unbounded_channel::<Tunnel>();
    let service = hyper::service::service_fn(move |request| {
        handle(request, Arc::clone(&state), tunnels.clone())
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HANDSHAKE_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if let Ok(tunnel) = tunnel.try_recv() {
        tunnel.await;
    }
}

async fn handle(
    request: Request<Incoming>,
    state: Arc<State>,
    tunnels: tokio::sync::mpsc::UnboundedSender<Tunnel>,
) -> Result<Response<ProxyBody>, Infallible> {
    let method = request.method().to_string();
    let Some((host, port)) = destination(&request) else {
        return Ok(text_response(
            StatusCode::BAD_REQUEST,
            "cordon proxy: expected CONNECT host:port or an absolute http:// URL\n".to_owned(),
        ));
    };
    let upstream = match state.open(Destination { host: &host, port, method: &method }).await {
        Ok(upstream) => upstream,
        Err((refusal, line)) => return Ok(text_response(refusal.status, line)),
    };
    if request.method() == Method::CONNECT {
        // The receiver lives until the connection ends; a send cannot fail before then.
        let _ = tunnels.send(Box::pin(tunnel(request, upstream)));
        Ok(Response::new(Full::new(Bytes::new()).map_err(|never| match never {}).boxed()))
    } else {
        Ok(forward(request, upstream).await.unwrap_or_else(|error| {
            text_response(
                StatusCode::BAD_GATEWAY,
                format!("cordon proxy: {host}:{port}: upstream error: {error}\n"),
            )
        }))
    }
}

/// `host, port` from `CONNECT host:port`, an absolute `http://` URI, or the Host header.
fn destination(request: &Request<Incoming>) -> Option<(String, u16)> {
    if request.method() == Method::CONNECT {
        let authority = request.uri().authority()?;
        return Some((normalize_host(authority.host()), authority.port_u16()?));
    }
    match request.uri().scheme_str() {
        Some("http") => {
            let authority = request.uri().authority()?;
            Some((normalize_host(authority.host()), authority.port_u16().unwrap_or(80)))
        }
        Some(_) => None,
        None => {
            let host = request.headers().get(hyper::header::HOST)?.to_str().ok()?;
            let authority: hyper::http::uri::Authority = host.parse().ok()?;
            Some((normalize_host(authority.host()), authority.port_u16().unwrap_or(80)))
        }
    }
}

/// After `200` to a CONNECT: bytes both ways until either side closes. The client's socket is
/// taken back from hyper when it can be (no per-read indirection), after what hyper had
/// already read past the request.
async fn tunnel(request: Request<Incoming>, mut upstream: TcpStream) {
    let Ok(upgraded) = hyper::upgrade::on(request).await else { return };
    match upgraded.downcast::<TokioIo<TcpStream>>() {
        Ok(parts) => {
            let client = parts.io.into_inner();
            if !parts.read_buf.is_empty() && upstream.write_all(&parts.read_buf).await.is_err() {
                return;
            }
            relay_tcp(client, upstream).await;
        }
        Err(upgraded) => relay(&mut TokioIo::new(upgraded), &mut upstream).await,
    }
}

/// Sends a plain-HTTP request upstream in origin form, without the proxy's own headers.
async fn forward(
    mut request: Request<Incoming>,
    upstream: TcpStream,
) -> Result<Response<ProxyBody>, hyper::Error> {
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    if let Ok(uri) = path.parse() {
        *request.uri_mut() = uri;
    }
    let headers = request.headers_mut();
    headers.remove("proxy-connection");
    headers.remove(hyper::header::PROXY_AUTHORIZATION);
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await?;
    tokio::spawn(connection);
    let response = sender.send_request(request).await?;
    Ok(response.map(BodyExt::boxed))
}

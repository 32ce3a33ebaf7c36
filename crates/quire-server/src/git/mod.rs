//! Git over smart HTTP: `{public-url}/git/{spaceId}.git` is the space's repository
//! (`domain::git`), cloned and fetched with a plain `git` client.
//!
//! The caller authenticates with HTTP Basic, an API token as the password (any user name),
//! so that credential helpers work; a bearer token works too. Reading needs read access to
//! the space, checked as the API checks it, and a space the caller may not see is the same
//! 404 as one that does not exist.
//!
//! A push (`git-receive-pack`) needs edit access; what it does is `domain::git::push`'s.
//! Its protocol (commands, a pack, a status report with messages on the side band) is
//! read and written here; the pack itself is checked and stored by `git index-pack`.
//!
//! The fetch protocol is the `git` program's: `git upload-pack --stateless-rpc` answers, so
//! protocol v0 and v2, shallow and partial clones, and negotiation that sends only what a
//! client lacks all come from git itself rather than from a second implementation of its
//! pack protocol. It runs sealed: no system or global configuration, no hooks, a fixed
//! environment, one repository folder, a time cap, and a cap on how many run at once
//! (`--max-git-operations`). Without a `git` program the git endpoints answer 501 and
//! everything else works.

use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use base64::Engine;
use futures_util::StreamExt;
use serde::Deserialize;
use tokio::io::AsyncWriteExt;

use crate::domain::auth::{authenticate_token, Caller};
use crate::error::{error_response, ApiError, ApiResult};
use crate::state::AppState;

/// The largest request body a fetch negotiation may send (wants and haves), after
/// decompression.
const MAX_REQUEST_BYTES: usize = 16 << 20;

/// The longest a git operation may run before it is stopped.
const MAX_SECONDS: u64 = 600;

/// The git routes, mounted beside the API's.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/git/{repo}/info/refs", get(info_refs))
        .route("/git/{repo}/git-upload-pack", post(upload_pack))
        .route("/git/{repo}/git-receive-pack", post(receive_pack))
}

/// The space a repository path names: `{spaceId}.git` or `{spaceId}`.
fn space_of(repo: &str) -> &str {
    repo.strip_suffix(".git").unwrap_or(repo)
}

/// `?service=` of the reference advertisement.
#[derive(Deserialize)]
pub struct Service {
    service: Option<String>,
}

/// Whether the `git` program is there (asked once).
fn git_available() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| {
        std::process::Command::new(crate::domain::git::program())
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn no_git() -> Response {
    error_response(
        StatusCode::NOT_IMPLEMENTED,
        "Git access needs the `git` program on this server, and it is not installed.",
    )
}

/// The caller of a git request: Basic credentials whose password (or, without one, user
/// name) is an API token, or a bearer token. A 401 asks the client for credentials.
async fn caller(state: &AppState, headers: &HeaderMap) -> Result<Caller, Response> {
    let ask = |message: &str| {
        let mut res = error_response(StatusCode::UNAUTHORIZED, message);
        res.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"Quire\", charset=\"UTF-8\""),
        );
        res
    };
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return Err(ask(
            "Authentication required: use an API token as the password.",
        ));
    };
    let token = match value.trim().split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("basic") => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(rest.trim())
                .ok()
                .and_then(|b| String::from_utf8(b).ok());
            match decoded.as_deref().and_then(|d| d.split_once(':')) {
                Some((user, "")) => user.to_string(),
                Some((_, password)) => password.to_string(),
                None => return Err(ask("Malformed Basic credentials.")),
            }
        }
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim().to_string(),
        _ => {
            return Err(ask(
                "Authorization must be Basic (an API token as the password).",
            ))
        }
    };
    match authenticate_token(state, &token).await {
        Ok(caller) => Ok(caller),
        Err(ApiError::Unauthorized(m)) => Err(ask(&m)),
        Err(e) => Err(e.into_response()),
    }
}

/// The space's repository, up to date, if the caller may read the space.
async fn readable_repo(
    state: &AppState,
    headers: &HeaderMap,
    repo: &str,
) -> Result<std::path::PathBuf, Response> {
    let caller = caller(state, headers).await?;
    let space_id = space_of(repo);
    let ctx = crate::domain::access::load_space(state, &caller, space_id)
        .await
        .map_err(IntoResponse::into_response)?;
    if ctx.space.deleted_at.is_some() {
        return Err(ApiError::not_found(format!("Space `{space_id}` not found.")).into_response());
    }
    crate::domain::git::prepare(state, &ctx.space.id, &ctx.space.revision_id)
        .await
        .map_err(IntoResponse::into_response)
}

/// `GET /git/{repo}/info/refs?service=git-upload-pack`: the reference advertisement.
pub async fn info_refs(
    State(state): State<AppState>,
    Path(repo): Path<String>,
    Query(q): Query<Service>,
    headers: HeaderMap,
) -> Response {
    match q.service.as_deref() {
        Some("git-upload-pack") => {}
        Some("git-receive-pack") => return receive_refs(&state, &headers, &repo).await,
        _ => {
            return ApiError::bad_request(
                "Only the smart HTTP protocol is served: `service` must be `git-upload-pack`.",
            )
            .into_response()
        }
    }
    if !git_available() {
        return no_git();
    }
    // The turn covers making the repository: the first of a large space is heavy.
    let _turn = match crate::domain::heavy::take(&state, &state.git_runs, "git operations").await {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    let dir = match readable_repo(&state, &headers, &repo).await {
        Ok(d) => d,
        Err(res) => return res,
    };
    let protocol = git_protocol(&headers);
    let out = match run(&dir, protocol.as_deref(), true, Bytes::new()).await {
        Ok(out) => out,
        Err(e) => return e.into_response(),
    };
    let mut body = Vec::new();
    // Protocol v2 starts with its capabilities; v0 with the service line.
    if protocol.as_deref().is_none_or(|p| !p.contains("version=2")) {
        body.extend_from_slice(&pkt_line(b"# service=git-upload-pack\n"));
        body.extend_from_slice(b"0000");
    }
    body.extend_from_slice(&out);
    git_response(
        "application/x-git-upload-pack-advertisement",
        Body::from(body),
    )
}

/// `POST /git/{repo}/git-upload-pack`: a fetch, answered with a pack.
pub async fn upload_pack(
    State(state): State<AppState>,
    Path(repo): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if !git_available() {
        return no_git();
    }
    let turn = match crate::domain::heavy::take(&state, &state.git_runs, "git operations").await {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    let dir = match readable_repo(&state, &headers, &repo).await {
        Ok(d) => d,
        Err(res) => return res,
    };
    let request = match read_request(&headers, body).await {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let protocol = git_protocol(&headers);
    match stream(&dir, protocol.as_deref(), request, turn) {
        Ok(body) => git_response("application/x-git-upload-pack-result", body),
        Err(e) => e.into_response(),
    }
}

/// The space of a push, if the caller may edit it.
async fn writable_space(
    state: &AppState,
    headers: &HeaderMap,
    repo: &str,
) -> Result<(Caller, crate::domain::access::SpaceCtx), Response> {
    let caller = caller(state, headers).await?;
    let ctx = crate::domain::access::load_space(state, &caller, space_of(repo))
        .await
        .map_err(IntoResponse::into_response)?;
    ctx.require_live()
        .and_then(|()| ctx.require(crate::domain::access::Role::Edit, "push to this space"))
        .map_err(IntoResponse::into_response)?;
    Ok((caller, ctx))
}

/// What a push may ask for.
const RECEIVE_CAPABILITIES: &str = "report-status side-band-64k quiet ofs-delta agent=quire";

/// `GET /git/{repo}/info/refs?service=git-receive-pack`: the branches, for a push.
async fn receive_refs(state: &AppState, headers: &HeaderMap, repo: &str) -> Response {
    if !git_available() {
        return no_git();
    }
    let _turn = match crate::domain::heavy::take(state, &state.git_runs, "git operations").await {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    let (_, ctx) = match writable_space(state, headers, repo).await {
        Ok(found) => found,
        Err(res) => return res,
    };
    let dir = match crate::domain::git::prepare(state, &ctx.space.id, &ctx.space.revision_id).await
    {
        Ok(d) => d,
        Err(e) => return e.into_response(),
    };
    let refs: Vec<(String, String)> = std::fs::read_to_string(dir.join("packed-refs"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
        .filter_map(|l| l.split_once(' '))
        .map(|(oid, name)| (oid.to_string(), name.to_string()))
        .collect();
    let mut body = pkt_line(b"# service=git-receive-pack\n");
    body.extend_from_slice(b"0000");
    if refs.is_empty() {
        let line = format!(
            "{} capabilities^{{}}\0{RECEIVE_CAPABILITIES}\n",
            "0".repeat(40)
        );
        body.extend_from_slice(&pkt_line(line.as_bytes()));
    }
    for (i, (oid, name)) in refs.iter().enumerate() {
        let line = if i == 0 {
            format!("{oid} {name}\0{RECEIVE_CAPABILITIES}\n")
        } else {
            format!("{oid} {name}\n")
        };
        body.extend_from_slice(&pkt_line(line.as_bytes()));
    }
    body.extend_from_slice(b"0000");
    git_response(
        "application/x-git-receive-pack-advertisement",
        Body::from(body),
    )
}

/// `POST /git/{repo}/git-receive-pack`: a push. Each branch becomes or updates a change
/// request (`domain::git::push`); the answer is git's status report, with the change
/// requests' addresses and any refusal's reason on the side band.
///
/// The push takes its turn among the node's git operations before its body is read: one
/// waiting holds no more than what the connection buffers. The body is then streamed, its
/// pack straight to a file in the push's quarantine, never held whole in memory.
pub async fn receive_pack(
    State(state): State<AppState>,
    Path(repo): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if !git_available() {
        return no_git();
    }
    let (caller, ctx) = match writable_space(&state, &headers, &repo).await {
        Ok(found) => found,
        Err(res) => return res,
    };
    let _turn = match crate::domain::heavy::take(&state, &state.git_runs, "git operations").await {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    let incoming = match crate::domain::git::push::Incoming::open(&state, &ctx).await {
        Ok(i) => i,
        Err(e) => return e.into_response(),
    };
    let max = state.config.max_import_bytes;
    let commands = match read_push(&headers, body, max, incoming.pack_path()).await {
        Ok(Pushed::Whole(commands)) => commands,
        Ok(Pushed::Oversized(start)) => return oversized(&start, max),
        Err(e) => return e.into_response(),
    };
    let (commands, capabilities) = match parse_push(&commands) {
        Ok(parsed) => parsed,
        Err(e) => return e.into_response(),
    };
    // Reading a push's files into a revision holds them in memory as a content import does:
    // that part takes turns with imports (`max_imports`). It waits rather than answering
    // 503, its body being on disk already.
    let reading = tokio::time::timeout(
        Duration::from_secs(MAX_SECONDS),
        state.imports.clone().acquire_owned(),
    );
    let _reading = match reading.await {
        Ok(Ok(turn)) => turn,
        Ok(Err(closed)) => return ApiError::internal(closed).into_response(),
        Err(_) => {
            return ApiError::Busy(
                "This server is busy with other imports and pushes; push again later.".into(),
                60,
            )
            .into_response()
        }
    };
    let author = format!("{} <{}>", caller.user.display_name, caller.user.email);
    let outcome = match crate::domain::git::push::receive(
        &state,
        &ctx,
        &caller.user.id,
        &author,
        commands,
        incoming,
    )
    .await
    {
        Ok(o) => o,
        Err(e) => return e.into_response(),
    };
    let body = report(&capabilities, &outcome);
    git_response("application/x-git-receive-pack-result", Body::from(body))
}

/// A push's body: its commands (the pack went to its file), or, past the cap, its first
/// bytes, which hold its commands (the rest was read and dropped, so that the client
/// reads the answer).
enum Pushed {
    Whole(Bytes),
    Oversized(Bytes),
}

/// The most bytes a push's commands may take (64 branches at most, each a line).
const PUSH_START_BYTES: usize = 64 * 1024;

/// Where a push's body goes as it is read: its commands kept, its pack written to a file,
/// at most `max` bytes in all.
struct PushSink {
    commands: Vec<u8>,
    /// Whether the commands' flush line was read (what follows is the pack).
    ended: bool,
    file: tokio::fs::File,
    read: usize,
    max: usize,
    over: bool,
}

impl PushSink {
    /// Takes the next bytes of the body (after any decompression).
    async fn feed(&mut self, mut data: &[u8]) -> ApiResult<()> {
        use tokio::io::AsyncWriteExt;
        self.read = self.read.saturating_add(data.len());
        if self.read > self.max && !self.over {
            self.over = true;
            if !self.ended {
                let room = PUSH_START_BYTES.saturating_sub(self.commands.len());
                self.commands
                    .extend_from_slice(&data[..room.min(data.len())]);
            }
        }
        if self.over {
            return Ok(());
        }
        if !self.ended {
            let before = self.commands.len();
            self.commands.extend_from_slice(data);
            match commands_end(&self.commands) {
                Ok(Some(end)) => {
                    self.ended = true;
                    self.commands.truncate(end);
                    data = &data[end - before..];
                }
                Ok(None) if self.commands.len() > PUSH_START_BYTES => {
                    return Err(ApiError::bad_request(
                        "Malformed push: its commands take more than 64 KiB.",
                    ))
                }
                Ok(None) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        self.file.write_all(data).await.map_err(ApiError::internal)
    }
}

/// Where a push's commands end (after their flush line), once the bytes read hold them.
fn commands_end(data: &[u8]) -> ApiResult<Option<usize>> {
    let mut at = 0usize;
    loop {
        let Some(head) = data.get(at..at + 4) else {
            return Ok(None);
        };
        let len = std::str::from_utf8(head)
            .ok()
            .and_then(|h| usize::from_str_radix(h, 16).ok())
            .ok_or_else(|| ApiError::bad_request("Malformed push: not a pkt-line."))?;
        if len == 0 {
            return Ok(Some(at + 4));
        }
        if len < 4 {
            return Err(ApiError::bad_request("Malformed push: not a pkt-line."));
        }
        at += len;
    }
}

/// Reads a push's body: its commands, its pack written to `pack` (within `max` bytes in
/// all). Past `max`, the rest is read and dropped (nothing kept, up to eight times `max`
/// in all), so that the client gets a status report it shows rather than a closed
/// connection. A gzipped body is inflated as it is read, a few KiB at a time.
async fn read_push(
    headers: &HeaderMap,
    body: Body,
    max: usize,
    pack: &std::path::Path,
) -> ApiResult<Pushed> {
    use http_body_util::BodyExt;
    use std::io::Write;
    let gzipped = match headers.get(header::CONTENT_ENCODING) {
        None => false,
        Some(v) if v.as_bytes().eq_ignore_ascii_case(b"gzip") => true,
        Some(_) => {
            return Err(ApiError::bad_request(
                "A push's body may be gzipped or sent as it is.",
            ))
        }
    };
    let file = tokio::fs::File::create(pack)
        .await
        .map_err(ApiError::internal)?;
    let mut sink = PushSink {
        commands: Vec::new(),
        ended: false,
        file,
        read: 0,
        max,
        over: false,
    };
    let mut inflate = gzipped.then(|| flate2::write::GzDecoder::new(Vec::new()));
    let not_gzip = || ApiError::bad_request("The request body is not valid gzip.");
    let mut raw = 0usize;
    let mut body = body;
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|_| ApiError::bad_request("The push was cut off before its end."))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        raw = raw.saturating_add(data.len());
        if sink.over {
            if raw > max.saturating_mul(8) {
                break;
            }
            continue;
        }
        match inflate.as_mut() {
            None => sink.feed(&data).await?,
            Some(z) => {
                // A few KiB in at a time: what comes out of each stays small.
                for piece in data.chunks(4096) {
                    z.write_all(piece).map_err(|_| not_gzip())?;
                    let out = std::mem::take(z.get_mut());
                    sink.feed(&out).await?;
                    if sink.over {
                        break;
                    }
                }
            }
        }
    }
    if let Some(z) = inflate.take().filter(|_| !sink.over) {
        let rest = z.finish().map_err(|_| not_gzip())?;
        sink.feed(&rest).await?;
    }
    use tokio::io::AsyncWriteExt;
    sink.file.flush().await.map_err(ApiError::internal)?;
    Ok(if sink.over {
        Pushed::Oversized(sink.commands.into())
    } else if !sink.ended {
        return Err(ApiError::bad_request("Malformed push: truncated commands."));
    } else {
        Pushed::Whole(sink.commands.into())
    })
}

/// The answer to a push past `max` bytes: every ref refused, with the reason the client
/// prints (`remote:` and its status report).
fn oversized(start: &[u8], max: usize) -> Response {
    let Ok((commands, capabilities)) = parse_push(start) else {
        return ApiError::PayloadTooLarge(format!(
            "A git push may hold at most {max} bytes (`--max-import-bytes`)."
        ))
        .into_response();
    };
    let why = format!("the push holds more than {max} bytes (--max-import-bytes)");
    let outcome = crate::domain::git::push::Outcome {
        unpack: Err(why.clone()),
        refs: commands
            .into_iter()
            .map(|c| (c.name, Err(why.clone())))
            .collect(),
        messages: vec![format!(
            "Refused: {why}. Push fewer commits or smaller files at once; nothing was changed."
        )],
    };
    let body = report(&capabilities, &outcome);
    git_response("application/x-git-receive-pack-result", Body::from(body))
}

/// A push's status report (and its messages on the side band when the client asked for
/// one), as `git receive-pack` writes it.
fn report(capabilities: &[String], outcome: &crate::domain::git::push::Outcome) -> Vec<u8> {
    let mut report = Vec::new();
    let unpack = match &outcome.unpack {
        Ok(()) => "unpack ok\n".to_string(),
        Err(why) => format!("unpack {}\n", one_line(why)),
    };
    report.extend_from_slice(&pkt_line(unpack.as_bytes()));
    for (name, result) in &outcome.refs {
        let line = match result {
            Ok(()) => format!("ok {name}\n"),
            Err(why) => format!("ng {name} {}\n", one_line(why)),
        };
        report.extend_from_slice(&pkt_line(line.as_bytes()));
    }
    report.extend_from_slice(b"0000");
    let sideband = capabilities.iter().any(|c| c == "side-band-64k");
    if sideband {
        let mut out = Vec::new();
        if !capabilities.iter().any(|c| c == "quiet") || !outcome.messages.is_empty() {
            for m in &outcome.messages {
                let mut band = vec![2u8];
                band.extend_from_slice(format!("{m}\n").as_bytes());
                out.extend_from_slice(&pkt_line(&band));
            }
        }
        for chunk in report.chunks(65_000) {
            let mut band = vec![1u8];
            band.extend_from_slice(chunk);
            out.extend_from_slice(&pkt_line(&band));
        }
        out.extend_from_slice(b"0000");
        out
    } else {
        report
    }
}

/// A reason on one line, as a status report carries it.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// A push's commands and the capabilities its first command asks for (what follows their
/// flush line, the pack, is not read here).
fn parse_push(data: &[u8]) -> ApiResult<(Vec<crate::domain::git::push::Command>, Vec<String>)> {
    let bad = |why: &str| ApiError::bad_request(format!("Malformed push: {why}."));
    let mut commands = Vec::new();
    let mut capabilities = Vec::new();
    let mut at = 0usize;
    loop {
        let head = data
            .get(at..at + 4)
            .ok_or_else(|| bad("truncated commands"))?;
        let len = std::str::from_utf8(head)
            .ok()
            .and_then(|h| usize::from_str_radix(h, 16).ok())
            .ok_or_else(|| bad("not a pkt-line"))?;
        if len == 0 {
            break;
        }
        if len < 4 {
            return Err(bad("not a pkt-line"));
        }
        let line = data
            .get(at + 4..at + len)
            .ok_or_else(|| bad("truncated commands"))?;
        at += len;
        let line = std::str::from_utf8(line).map_err(|_| bad("a command is not UTF-8"))?;
        let line = line.trim_end_matches('\n');
        let (command, caps) = match line.split_once('\0') {
            Some((c, caps)) => (c, Some(caps)),
            None => (line, None),
        };
        if let Some(caps) = caps {
            capabilities = caps.split(' ').map(str::to_string).collect();
        }
        if command.starts_with("shallow ") {
            return Err(bad(
                "pushing from a shallow clone is not supported; fetch the whole history first",
            ));
        }
        let mut parts = command.splitn(3, ' ');
        let (Some(old), Some(new), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("a command is not `old new ref`"));
        };
        if commands.len() >= 64 {
            return Err(bad("more than 64 branches in one push"));
        }
        commands.push(crate::domain::git::push::Command {
            old: old.to_string(),
            new: new.to_string(),
            name: name.to_string(),
        });
    }
    Ok((commands, capabilities))
}

fn git_response(content_type: &'static str, body: Body) -> Response {
    let mut res = Response::new(body);
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

/// The client's `Git-Protocol` header, when it is one git would accept (`version=2`).
fn git_protocol(headers: &HeaderMap) -> Option<String> {
    let v = headers.get("git-protocol")?.to_str().ok()?;
    (v.len() <= 256
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'=' | b':' | b'.' | b'-' | b'_')))
    .then(|| v.to_string())
}

/// One pkt-line holding `data`.
fn pkt_line(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:04x}", data.len() + 4).into_bytes();
    out.extend_from_slice(data);
    out
}

/// The request body, inflated when the client gzipped it, within [`MAX_REQUEST_BYTES`].
async fn read_request(headers: &HeaderMap, body: Body) -> ApiResult<Bytes> {
    read_body(headers, body, MAX_REQUEST_BYTES).await
}

/// The request body, inflated when the client gzipped it, within `max` bytes.
async fn read_body(headers: &HeaderMap, body: Body, max: usize) -> ApiResult<Bytes> {
    let too_large = || {
        ApiError::PayloadTooLarge(format!(
            "A git request may hold at most {max} bytes (`--max-import-bytes`)."
        ))
    };
    let raw = axum::body::to_bytes(body, max)
        .await
        .map_err(|_| too_large())?;
    let gzipped = headers
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
    if !gzipped {
        return Ok(raw);
    }
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&raw[..])
        .take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|_| ApiError::bad_request("The request body is not valid gzip."))?;
    if out.len() > max {
        return Err(too_large());
    }
    Ok(out.into())
}

/// `git upload-pack` on the repository in `dir` (see `domain::git::sealed`).
fn command(
    dir: &std::path::Path,
    protocol: Option<&str>,
    advertise: bool,
) -> tokio::process::Command {
    let mut cmd = crate::domain::git::sealed(dir);
    cmd.args([
        "-c",
        "uploadpack.allowFilter=true",
        "-c",
        "uploadpack.allowAnySHA1InWant=false",
        "upload-pack",
        "--stateless-rpc",
        "--strict",
        "--timeout=600",
    ]);
    if advertise {
        cmd.arg("--advertise-refs");
    }
    cmd.arg(dir);
    if let Some(p) = protocol {
        cmd.env("GIT_PROTOCOL", p);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs upload-pack to its end and returns what it wrote (the advertisement is small).
async fn run(
    dir: &std::path::Path,
    protocol: Option<&str>,
    advertise: bool,
    input: Bytes,
) -> ApiResult<Vec<u8>> {
    let mut child = command(dir, protocol, advertise)
        .spawn()
        .map_err(ApiError::internal)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(&input).await.map_err(ApiError::internal)?;
    }
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .map_err(|_| ApiError::RequestTimeout("The git operation took too long.".into()))?
        .map_err(ApiError::internal)?;
    if !out.status.success() {
        return Err(ApiError::internal(anyhow::anyhow!(
            "git upload-pack failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(out.stdout)
}

/// Runs upload-pack on `request` and streams its answer (a pack can be large); the
/// process is stopped when the client goes away or [`MAX_SECONDS`] pass.
fn stream(
    dir: &std::path::Path,
    protocol: Option<&str>,
    request: Bytes,
    turn: tokio::sync::OwnedSemaphorePermit,
) -> ApiResult<Body> {
    let mut child = command(dir, protocol, false)
        .spawn()
        .map_err(ApiError::internal)?;
    let mut stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    tokio::spawn(async move {
        let _ = stdin.write_all(&request).await;
        // Dropping stdin ends the request.
    });
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        // The first 64 KiB for the log; the rest is read and dropped, so that git never
        // waits on a full pipe.
        let mut text = Vec::new();
        let mut stderr = stderr;
        let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut text).await;
        let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
        let status = tokio::time::timeout(Duration::from_secs(MAX_SECONDS), child.wait()).await;
        match status {
            Ok(Ok(s)) if s.success() => {}
            Ok(Ok(s)) => {
                tracing::warn!(status = %s, stderr = %String::from_utf8_lossy(&text), "git upload-pack failed")
            }
            _ => {
                let _ = child.kill().await;
                tracing::warn!("git upload-pack stopped after {MAX_SECONDS} s");
            }
        }
        drop(turn);
    });
    let chunks = chunks_of(stdout);
    Ok(Body::from_stream(chunks))
}

/// The process's output as a stream of chunks.
fn chunks_of(
    out: tokio::process::ChildStdout,
) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> {
    futures_util::stream::unfold(out, |mut out| async move {
        use tokio::io::AsyncReadExt;
        let mut buf = vec![0u8; 64 * 1024];
        match out.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), out))
            }
            Err(e) => Some((Err(e), out)),
        }
    })
    .boxed()
}

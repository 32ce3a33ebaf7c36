//! Downloads of import sources, all through the safe fetcher, each turned into a bundle by
//! the content engine's converters (off the async threads).

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use quire_content::convert::archive::{Bytes, Content};
use quire_content::convert::{self, website, Asset, Bundle, ConvertError, Limits, SourcePage};
use url::Url;

use super::Source;
use crate::error::{ApiError, ApiResult};
use crate::fetch::Fetched;
use crate::state::AppState;

/// Images a page-based import downloads at most, and the size of each.
const MAX_IMAGES: usize = 200;
const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;

/// Largest single page of a website crawl.
const MAX_CRAWL_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// Sitemap URLs read at most.
const MAX_SITEMAP_URLS: usize = 5_000;

/// How long the upload-pack request of a wiki may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(60);

/// A failure of the source, as the 400 names it.
fn bad(e: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("`url` {e}."))
}

fn converted(e: ConvertError) -> ApiError {
    ApiError::bad_request(format!("`url`: the source {}.", e.0))
}

async fn get(state: &AppState, url: &str, max: usize) -> ApiResult<Fetched> {
    state.fetcher.get(url, max).await.map_err(bad)
}

/// Runs a converter on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ConvertError> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(ApiError::internal)?
        .map_err(converted)
}

/// The limits of this server's imports: an archive's entries may expand to the largest
/// download each, its documents (held in memory) to as much together, and all its entries
/// to eight times that.
pub fn limits(state: &AppState) -> Limits {
    let max = state.config.max_import_bytes as u64;
    Limits {
        max_expanded: max.saturating_mul(8),
        max_entry_bytes: max,
        max_document_bytes: max,
        ..Limits::default()
    }
}

/// The name a downloaded document is called by when it has no title: the URL's last
/// segment.
fn name_of(url: &str) -> String {
    Url::parse(url)
        .ok()
        .and_then(|u| {
            u.path_segments()
                .and_then(|mut s| s.next_back().map(str::to_string))
        })
        .filter(|s| !s.is_empty())
        .map(|s| convert::title_from_name(&s))
        .unwrap_or_else(|| "Imported page".to_string())
}

/// Downloads and converts the source at `url`; also says how many of the images its pages
/// show could not be downloaded.
pub async fn bundle(state: &AppState, source: Source, url: &str) -> ApiResult<(Bundle, usize)> {
    let max = state.config.max_import_bytes;
    let limits = limits(state);
    let mut bundle = match source {
        Source::Markdown => {
            let f = get(state, url, max).await?;
            let text = String::from_utf8(f.bytes.to_vec())
                .map_err(|_| bad("is not UTF-8 text (a markdown file was expected)"))?;
            let key = f.url.clone();
            let title = name_of(&f.url);
            let page = convert::markdown_page(key.clone(), "", &title, &text);
            let images = convert::markdown_images(&key, page.body.as_deref().unwrap_or(""));
            Bundle {
                pages: vec![page],
                assets: Vec::new(),
                remote_images: images,
                ..Bundle::default()
            }
        }
        Source::Html => {
            let f = get(state, url, max).await?;
            html_bundle(f, &["main", "article", "[role=main]"]).await?
        }
        Source::GoogleDocs => {
            let export = google_export_url(url);
            let f = get(state, &export, max).await?;
            if f.bytes.starts_with(b"PK\x03\x04") {
                let title = "Google document".to_string();
                blocking(move || convert::docx::convert(Bytes::new(f.bytes), &title, &limits))
                    .await?
            } else {
                let mut b = html_bundle(f, &[]).await?;
                for p in &mut b.pages {
                    if let Some(body) = p.body.as_mut() {
                        *body = unwrap_google_links(body);
                    }
                }
                b
            }
        }
        Source::Docx => {
            let f = get(state, url, max).await?;
            let title = name_of(&f.url);
            blocking(move || convert::docx::convert(Bytes::new(f.bytes), &title, &limits)).await?
        }
        Source::Zip => {
            let f = get(state, url, max).await?;
            blocking(move || convert::tree::from_zip(Bytes::new(f.bytes), &limits)).await?
        }
        Source::Confluence => {
            let f = get(state, url, max).await?;
            blocking(move || convert::confluence::convert(Bytes::new(f.bytes), &limits)).await?
        }
        Source::Notion => {
            let f = get(state, url, max).await?;
            blocking(move || convert::notion::convert(Bytes::new(f.bytes), &limits)).await?
        }
        Source::GithubWiki => wiki(state, url, max, limits).await?,
        Source::Website => crawl(state, url).await?,
    };
    let missed = fetch_images(state, &mut bundle).await;
    Ok((bundle, missed))
}

async fn html_bundle(f: Fetched, content: &'static [&'static str]) -> ApiResult<Bundle> {
    let text = String::from_utf8_lossy(&f.bytes).into_owned();
    let key = f.url.clone();
    let fallback = name_of(&f.url);
    blocking(move || {
        let (page, images, _) = convert::html::page(&key, &text, content, &fallback);
        Ok(Bundle {
            pages: vec![page],
            assets: Vec::new(),
            remote_images: images,
            ..Bundle::default()
        })
    })
    .await
}

/// A Google document's HTML export: `.../document/d/<id>/edit` becomes
/// `.../document/d/<id>/export?format=html`; an export URL is kept.
fn google_export_url(url: &str) -> String {
    let Ok(mut u) = Url::parse(url) else {
        return url.to_string();
    };
    let segs: Vec<String> = u
        .path_segments()
        .map(|s| s.map(str::to_string).collect())
        .unwrap_or_default();
    if let Some(i) = segs.iter().position(|s| s == "d") {
        if segs.get(i + 2).map(String::as_str) != Some("export") && i + 1 < segs.len() {
            let mut path: Vec<String> = segs[..=i + 1].to_vec();
            path.push("export".into());
            u.set_path(&path.join("/"));
            u.set_query(Some("format=html"));
        }
    }
    u.to_string()
}

/// Google wraps links as `https://www.google.com/url?q=<target>&...`: the target is kept.
fn unwrap_google_links(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut rest = md;
    const WRAP: &str = "https://www.google.com/url?q=";
    while let Some(at) = rest.find(WRAP) {
        out.push_str(&rest[..at]);
        let tail = &rest[at + WRAP.len()..];
        let end = tail.find([')', '>', ' ', '\n']).unwrap_or(tail.len());
        let target = tail[..end].split('&').next().unwrap_or("");
        let decoded = url::form_urlencoded::parse(format!("q={target}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        out.push_str(&decoded);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Downloads the images web pages show, as assets under their URL; one that cannot be
/// fetched stays a link to where it was. Returns how many could not be.
async fn fetch_images(state: &AppState, bundle: &mut Bundle) -> usize {
    let mut seen: HashSet<String> = bundle.assets.iter().map(|a| a.key.clone()).collect();
    let mut left = state.config.max_import_bytes;
    let wanted: Vec<String> = bundle
        .remote_images
        .iter()
        .filter(|u| seen.insert((*u).clone()))
        .take(MAX_IMAGES)
        .cloned()
        .collect();
    let mut missed = 0;
    for url in wanted {
        if left == 0 {
            missed += 1;
            continue;
        }
        match state.fetcher.get(&url, MAX_IMAGE_BYTES.min(left)).await {
            Ok(f) => {
                left = left.saturating_sub(f.bytes.len());
                let name = Url::parse(&url)
                    .ok()
                    .and_then(|u| {
                        u.path_segments()
                            .and_then(|mut s| s.next_back().map(str::to_string))
                    })
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "image".into());
                bundle.assets.push(Asset {
                    key: url,
                    name,
                    content: Content::Held(f.bytes.to_vec()),
                });
            }
            Err(e) => {
                missed += 1;
                tracing::info!(error = %e, "import image not fetched");
            }
        }
    }
    missed
}

/// A GitHub wiki (any git repository) over smart HTTP: the advertisement, then one pack of
/// the head commit alone.
async fn wiki(state: &AppState, url: &str, max: usize, limits: Limits) -> ApiResult<Bundle> {
    // A wiki's page (`.../owner/repo/wiki`) names the repository `.../owner/repo.wiki.git`.
    let base = url.trim_end_matches('/');
    let base = match base.strip_suffix("/wiki") {
        Some(repo) => format!("{repo}.wiki.git"),
        None => base.to_string(),
    };
    let refs = get(
        state,
        &format!("{base}/info/refs?service=git-upload-pack"),
        1024 * 1024,
    )
    .await?;
    if refs.content_type.as_deref() != Some("application/x-git-upload-pack-advertisement") {
        return Err(bad(
            "is not a git repository served over HTTP (smart protocol)",
        ));
    }
    let ad = convert::git::parse_advertisement(&refs.bytes).map_err(converted)?;
    let body = convert::git::upload_request(&ad, &ad.head);
    let answer = state
        .fetcher
        .post_opaque(
            &format!("{base}/git-upload-pack"),
            "application/x-git-upload-pack-request",
            &body,
            max,
            GIT_TIMEOUT,
        )
        .await
        .map_err(bad)?;
    blocking(move || {
        let pack = convert::git::pack_of_response(&answer.bytes, &ad)?;
        let objects = convert::git::read_pack(&pack, &limits)?;
        let files = convert::git::files_of(&objects, &ad.head, &limits)?;
        convert::git::wiki(files)
    })
    .await
}

/// A bounded crawl of one origin from `start`: robots.txt honoured, sitemap.xml URLs
/// queued first, then links breadth first; at most the configured pages and bytes.
async fn crawl(state: &AppState, start: &str) -> ApiResult<Bundle> {
    let scope = Url::parse(start).map_err(|_| bad("must be an absolute http(s) URL"))?;
    let max_pages = state.config.import_crawl_pages.max(1);
    let mut budget = state.config.max_import_bytes;
    // The first page must answer: it decides whether the source exists at all.
    let first = get(state, start, MAX_CRAWL_PAGE_BYTES.min(budget)).await?;
    let origin = Url::parse(&first.url).map_err(|_| bad("could not be fetched"))?;
    let scope = website::crawl_key(&origin, &origin)
        .or_else(|| website::crawl_key(&scope, &scope))
        .unwrap_or(origin.clone());
    let robots = match state
        .fetcher
        .get(scope.join("/robots.txt").map_err(bad)?.as_str(), 512 * 1024)
        .await
    {
        Ok(f) => website::Robots::parse(&f.bytes),
        Err(_) => website::Robots::allow_all(),
    };
    let mut queue: VecDeque<Url> = VecDeque::new();
    let mut queued: HashSet<String> = HashSet::new();
    let mut sitemaps = robots.sitemaps();
    if sitemaps.is_empty() {
        if let Ok(u) = scope.join("/sitemap.xml") {
            sitemaps.push(u.to_string());
        }
    }
    let mut sitemap_urls = Vec::new();
    for sm in sitemaps.into_iter().take(4) {
        if let Ok(f) = state.fetcher.get(&sm, 4 * 1024 * 1024).await {
            let locs = website::sitemap_locations(&f.bytes, MAX_SITEMAP_URLS);
            sitemap_urls.extend(locs);
        }
    }
    let mut pages: Vec<SourcePage> = Vec::new();
    let mut images = Vec::new();
    let consider = |u: Url, queue: &mut VecDeque<Url>, queued: &mut HashSet<String>| {
        if let Some(k) = website::crawl_key(&u, &scope) {
            if queued.insert(k.to_string()) && robots.allowed(k.as_str()) {
                queue.push_back(k);
            }
        }
    };
    let start_key = website::crawl_key(&origin, &scope).unwrap_or(origin.clone());
    queued.insert(start_key.to_string());
    for s in sitemap_urls {
        // Sitemaps should hold absolute URLs; relative ones are read against the site.
        if let Ok(u) = scope.join(&s) {
            consider(u, &mut queue, &mut queued);
        }
    }
    let mut next: Option<(Url, Fetched)> = if robots.allowed(start_key.as_str()) {
        Some((start_key, first))
    } else {
        None
    };
    loop {
        let Some((key, fetched)) = next.take() else {
            if pages.len() >= max_pages || budget == 0 {
                break;
            }
            let Some(u) = queue.pop_front() else { break };
            match state
                .fetcher
                .get(u.as_str(), MAX_CRAWL_PAGE_BYTES.min(budget))
                .await
            {
                Ok(f) => {
                    // A redirect out of the crawl's scope is not followed into it.
                    let landed = Url::parse(&f.url)
                        .ok()
                        .and_then(|l| website::crawl_key(&l, &scope));
                    if let Some(l) = landed {
                        if l != u && !queued.insert(l.to_string()) {
                            continue;
                        }
                        next = Some((l, f));
                    }
                }
                Err(e) => tracing::info!(error = %e, "crawl page not fetched"),
            }
            continue;
        };
        budget = budget.saturating_sub(fetched.bytes.len());
        let is_html = fetched
            .content_type
            .as_deref()
            .is_none_or(|t| t.contains("html"));
        if !is_html {
            continue;
        }
        let text = String::from_utf8_lossy(&fetched.bytes).into_owned();
        let k = key.to_string();
        let fallback = name_of(&k);
        let (page, found_images, links) = tokio::task::spawn_blocking(move || {
            convert::html::page(&k, &text, &["main", "article", "[role=main]"], &fallback)
        })
        .await
        .map_err(ApiError::internal)?;
        images.extend(found_images);
        for l in links {
            if let Ok(u) = key.join(&l) {
                consider(u, &mut queue, &mut queued);
            }
        }
        pages.push(page);
    }
    if pages.is_empty() {
        return Err(bad(
            "holds no page the crawl may read (robots.txt, or no HTML)",
        ));
    }
    Ok(Bundle {
        pages: website::nest(pages),
        assets: Vec::new(),
        remote_images: images,
        ..Bundle::default()
    })
}

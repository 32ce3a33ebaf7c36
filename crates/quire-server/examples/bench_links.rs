//! Links benchmark: a 10,000-page space whose pages link to each other (pages, anchors, a
//! file, the web, and some missing pages); then, ten times, one page changes and the
//! space's links are listed again. Figures: `GET SPACE/links?limit=100` end to end after
//! each one-page change (loading the new revision, reading the changed page's body, joining
//! 10,000 pages' link sets, rendering 100 items), and the join alone
//! (`domain::links::of_revision`).
//!
//! Run: `cargo run --release -p quire-server --example bench_links [-- PAGES]`

mod support;

use std::time::{Duration, Instant};

use quire_content::model::{Page, PageKind, Revision};
use support::{pct, Bench};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn body(i: usize, pages: usize, salt: usize) -> String {
    let next = (i + 1) % pages;
    let far = (i * 7919 + salt) % pages;
    let mut s = format!("## Section {i}\n\nSome prose about topic {i}, revision {salt}.\n\n");
    s.push_str(&format!(
        "See [the next page](/pages/p{next}), [a far page](/pages/p{far}#section-{far}), \
         [the web](https://example.com/{i}) and [home](/pages/p0).\n\n"
    ));
    if i.is_multiple_of(50) {
        s.push_str(&format!("A [missing page](/pages/gone-{i}).\n\n"));
    }
    s.push_str("```rust\nfn main() {}\n```\n");
    s
}

fn generated(pages: usize) -> Revision {
    support::chapters(pages, 100, |i| body(i, pages, 0))
}

#[tokio::main]
async fn main() {
    let pages: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let bench = Bench::start(dir.path()).await;
    let mut rev = generated(pages);
    bench.seed(rev.clone()).await;
    let path = format!("/v1/spaces/{}/links?limit=100", bench.space);

    let t = Instant::now();
    let first = bench.client.ok(reqwest::Method::GET, &path, None).await;
    let cold = t.elapsed();
    let total = first["stats"]["total"].as_u64().unwrap();
    let broken = first["stats"]["broken"]["total"].as_u64().unwrap();

    let mut http = Vec::new();
    let mut join = Vec::new();
    for round in 1..=10 {
        // One page changes: its body (and so its link set) is new, every other is shared.
        let target = (round * 997) % pages;
        let page = find(&mut rev.pages, &format!("p{target}")).unwrap();
        if let PageKind::Document(d) = &mut page.kind {
            d.markdown = body(target, pages, round);
        }
        bench.seed(rev.clone()).await;
        let t = Instant::now();
        let listed = bench.client.ok(reqwest::Method::GET, &path, None).await;
        http.push(t.elapsed());
        assert_eq!(listed["items"].as_array().unwrap().len(), 100);
        // The join alone, on another change, with the changed page's body not yet read.
        let page = find(&mut rev.pages, &format!("p{}", (target + 1) % pages)).unwrap();
        if let PageKind::Document(d) = &mut page.kind {
            d.markdown = body((target + 1) % pages, pages, 100 + round);
        }
        bench.seed(rev.clone()).await;
        let space = quire_server::store::spaces::get(&bench.state.db, &bench.space)
            .await
            .unwrap()
            .unwrap();
        let row = quire_server::domain::content::revision_row(
            &bench.state,
            &bench.space,
            &space.revision_id,
        )
        .await
        .unwrap()
        .unwrap();
        let t = Instant::now();
        quire_server::domain::links::of_revision(&bench.state, &bench.space, &row.root)
            .await
            .unwrap();
        join.push(t.elapsed());
    }
    println!("pages: {pages}; links (targets): {total}; broken: {broken}");
    println!("first listing (every page read): {:.1} ms", ms(cold));
    println!(
        "GET SPACE/links?limit=100 after a one-page change: p50 {:.1} ms, max {:.1} ms",
        pct(http.clone(), 0.5),
        pct(http, 1.0)
    );
    println!(
        "links of the revision after a one-page change (join only): p50 {:.1} ms, max {:.1} ms",
        pct(join.clone(), 0.5),
        pct(join, 1.0)
    );
    bench.stop().await;
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn find<'a>(pages: &'a mut [Page], id: &str) -> Option<&'a mut Page> {
    for p in pages {
        if p.id == id {
            return Some(p);
        }
        if let Some(found) = find(&mut p.pages, id) {
            return Some(found);
        }
    }
    None
}

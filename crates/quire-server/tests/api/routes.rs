//! The route table: every route declares the access it needs, consistent with the
//! resources its path names, and the access check really runs on every one of them.

use std::collections::HashSet;

use quire_server::api::operations as table;
use quire_server::http::operation::Access;
use reqwest::Method;

use crate::harness::TestApp;

/// Operations open to anyone, without a token: the official spec declares no security for
/// them. A sign-in page lists an organization's SSO logins before anyone is signed in, and
/// a published site's visitors send its events.
const PUBLIC: &[&str] = &[
    "listSSOProviderLoginsInOrganization",
    "trackEventsInSiteById",
];

/// Operations open to any authenticated user: each scopes its answer to the caller.
const USER_SCOPED: &[&str] = &[
    "getApiInformation",
    "getAuthenticatedUser",
    "getUserById",
    "updateUserById",
    "listOrganizationsForAuthenticatedUser",
    "createOrganization",
    "getOrganizationsForEmailDomain",
    "joinOrganizationWithInvite",
    "resolvePublishedContentByUrl",
    "getPublishedContentByUrl",
    "getEmbedByUrl",
    "getContentByUrl",
    // Custom hostnames are looked up across organizations: the admins of the one whose site
    // holds it see it, anyone else a 404; a subdomain is a public address.
    "getCustomHostname",
    "dnsRevalidateCustomHostname",
    "removeCustomHostname",
    "getSubdomain",
];

#[test]
fn every_route_declares_access_matching_its_path() {
    let mut seen_ops = HashSet::new();
    let mut seen_routes = HashSet::new();
    for r in table() {
        assert!(
            seen_ops.insert(r.operation),
            "operation {} declared twice",
            r.operation
        );
        assert!(
            seen_routes.insert((r.method.clone(), r.path)),
            "{} {} declared twice",
            r.method,
            r.path
        );
        let ok = match r.access {
            Access::Public => PUBLIC.contains(&r.operation),
            Access::User => USER_SCOPED.contains(&r.operation),
            Access::Space(_) | Access::SpaceIfExists(_) => r.path.contains("{spaceId}"),
            Access::Collection(_) | Access::CollectionIfExists(_) => {
                r.path.contains("{collectionId}")
            }
            Access::TeamView | Access::TeamManage => r.path.contains("{teamId}"),
            Access::SiteRead | Access::SiteAdmin | Access::SiteAdminIfExists => {
                r.path.contains("{siteId}") && r.path.contains("{organizationId}")
            }
            Access::OrgMember | Access::OrgNonGuest | Access::OrgAdmin | Access::OrgCreate => {
                r.path.contains("{organizationId}")
            }
        };
        assert!(
            ok,
            "{} {} ({}) declares {:?}, which does not fit its path",
            r.method, r.path, r.operation, r.access
        );
        // A route naming a space or collection must check access on that resource.
        if r.path.contains("{spaceId}") {
            assert!(
                matches!(r.access, Access::Space(_) | Access::SpaceIfExists(_)),
                "{}",
                r.operation
            );
        }
        if r.path.contains("{siteId}") && r.access != Access::Public {
            assert!(
                matches!(
                    r.access,
                    Access::SiteRead | Access::SiteAdmin | Access::SiteAdminIfExists
                ),
                "{}",
                r.operation
            );
        }
        if r.path.contains("{collectionId}") {
            assert!(
                matches!(
                    r.access,
                    Access::Collection(_) | Access::CollectionIfExists(_)
                ),
                "{}",
                r.operation
            );
        }
    }
}

#[tokio::test]
async fn every_route_refuses_requests_without_a_token() {
    let app = TestApp::start().await;
    for r in table() {
        if r.access == Access::Public {
            continue;
        }
        let path = r
            .path
            .split('/')
            .map(|seg| if seg.starts_with('{') { "someid" } else { seg })
            .collect::<Vec<_>>()
            .join("/");
        let method = Method::from_bytes(r.method.as_str().as_bytes()).unwrap();
        let res = app
            .call(method, &path, None, Some(serde_json::json!({})))
            .await;
        assert_eq!(
            res.status, 401,
            "{} {} answered {} without a token",
            r.method, r.path, res.status
        );
    }
}

#[tokio::test]
async fn public_routes_answer_without_a_token_and_hide_nothing_else() {
    let app = TestApp::start().await;
    for r in table().into_iter().filter(|r| r.access == Access::Public) {
        assert!(PUBLIC.contains(&r.operation), "{} is public", r.operation);
        // Public routes only read, but for the events that published sites send.
        let body = match r.operation {
            "trackEventsInSiteById" => Some(serde_json::json!({ "events": [] })),
            _ => {
                assert_eq!(r.method, Method::GET, "public routes only read");
                None
            }
        };
        let path = r
            .path
            .replace("{organizationId}", "nosuchorg")
            .replace("{siteId}", "nosuchsite");
        let res = app.call(r.method.clone(), &path, None, body).await;
        assert_eq!(res.status, 404, "{} {}: {}", r.method, path, res.body);
    }
}

/// The official specifications, once `npm ci` has run in `conformance/`; `None` (with a
/// loud notice) when they are not installed: the conformance suite's `routes.test.js`
/// makes the same check, and `scripts/test.sh` always runs it.
fn official_specs() -> Option<Vec<(&'static str, serde_json::Value)>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conformance/node_modules/@gitbook");
    let mut specs = Vec::new();
    for (name, dir) in [("0.137.0", "api"), ("0.202.0", "api-202")] {
        let file = root.join(dir).join("spec/openapi.json");
        let Ok(text) = std::fs::read_to_string(&file) else {
            eprintln!(
                "\n*** NOTICE: {} is missing (run `npm ci` in conformance/): the route table \
                 is NOT checked against the official specs here; conformance/test/routes.test.js \
                 checks it. ***\n",
                file.display()
            );
            return None;
        };
        specs.push((name, serde_json::from_str(&text).expect("spec is JSON")));
    }
    Some(specs)
}

/// Where a spec declares an operation: `(METHOD, path)`, paths relative to the `/v1` base.
fn declared(spec: &serde_json::Value, operation: &str) -> Option<(String, String)> {
    let paths = spec["paths"].as_object()?;
    paths.iter().find_map(|(path, item)| {
        item.as_object()?.iter().find_map(|(method, op)| {
            (op["operationId"] == operation).then(|| (method.to_uppercase(), path.clone()))
        })
    })
}

/// A route's path as the specs write it: their server base ends in `/v1`, and the page
/// path, routed as `{*pagePath}`, is `{pagePath}` there.
fn spec_path(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/v1")?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let rest = if rest.is_empty() { "/" } else { rest };
    Some(rest.replace("{*pagePath}", "{pagePath}"))
}

#[test]
fn every_route_is_an_official_operation_with_its_method_and_path() {
    let Some(specs) = official_specs() else {
        return;
    };
    let mut problems = Vec::new();
    for r in table() {
        let Some(path) = spec_path(r.path) else {
            problems.push(format!("{} {} is not under /v1", r.method, r.path));
            continue;
        };
        let found: Vec<_> = specs
            .iter()
            .filter_map(|(name, spec)| declared(spec, r.operation).map(|d| (name, d)))
            .collect();
        if found.is_empty() {
            problems.push(format!(
                "{} {}: operationId {} is in neither spec",
                r.method, r.path, r.operation
            ));
        } else if !found
            .iter()
            .any(|(_, (method, p))| method == r.method.as_str() && *p == path)
        {
            problems.push(format!(
                "{} {} ({}) differs from the spec: {found:?}",
                r.method, r.path, r.operation
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

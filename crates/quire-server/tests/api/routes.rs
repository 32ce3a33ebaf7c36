//! The route table: every route declares the access it needs, consistent with the
//! resources its path names, and the access check really runs on every one of them.

use std::collections::HashSet;

use quire_server::api::operations as table;
use quire_server::http::operation::Access;
use reqwest::Method;

use crate::harness::TestApp;

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
            Access::Public => false,
            Access::User => USER_SCOPED.contains(&r.operation),
            Access::Space(_) | Access::SpaceIfExists(_) => r.path.contains("{spaceId}"),
            Access::Collection(_) | Access::CollectionIfExists(_) => {
                r.path.contains("{collectionId}")
            }
            Access::TeamView | Access::TeamManage => r.path.contains("{teamId}"),
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

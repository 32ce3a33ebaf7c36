//! Schema migrations, as code: one ordered list applied at start, each in a transaction,
//! on SQLite and PostgreSQL alike. Never edit a released migration; add a new one.

use anyhow::Context;

use super::{Db, Dialect};

/// `(version, name, statements)`; statements are separated by `;` and hold no `;` themselves.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "foundation", FOUNDATION),
    (2, "spaces and collections", SPACES),
    (3, "content and change requests", CONTENT),
    (4, "comments", COMMENTS),
    (5, "search", SEARCH),
    (6, "sites", SITES),
    (7, "search index generation", SEARCH_GENERATION),
    (8, "site visitor authentication", VISITOR_AUTH),
    (9, "translations", TRANSLATIONS),
    (10, "openapi specs", OPENAPI),
    (11, "saml", SAML),
    (12, "listing versions", LISTING_VERSIONS),
    (13, "sso identities", SSO_IDENTITIES),
    (14, "failed jobs", FAILED_JOBS),
    (15, "published content scopes", PUBLISHED_SCOPES),
    (16, "app accounts", APP_ACCOUNTS),
    (17, "change request reviews", REVIEWS),
    (18, "invitation links for addresses", INVITE_SECRETS),
    (19, "git commit identities", GIT_COMMITS),
    (20, "git sync", GIT_SYNC),
    (21, "git sync claim", GIT_SYNC_CLAIM),
    (22, "site redirects and contributions", SITE_REDIRECTS),
    (
        23,
        "site space customizations and site mcp servers",
        SITE_EXTRAS,
    ),
    (24, "site hostnames", SITE_HOSTNAMES),
    (25, "storage uploads and custom fonts", CUSTOM_FONTS),
    (26, "translation glossary", GLOSSARY),
    (27, "site insights", SITE_INSIGHTS),
    (28, "sign-in failures", SIGN_IN_FAILURES),
    (29, "git commit ids", GIT_COMMIT_IDS),
    (30, "comment totals", COMMENT_TOTALS),
    (31, "content objects by space only", OBJECTS_BY_SPACE),
    (32, "comment listing versions", COMMENT_VERSIONS),
    (33, "hostname proofs and invitation expiry", HOSTNAME_PROOFS),
    (34, "git trees carried from parents", GIT_CARRIED),
    (35, "git sync placement", GIT_SYNC_PLACED),
    (36, "server settings", SERVER_SETTINGS),
    (37, "recent pages", RECENT_PAGES),
    (38, "one session table", ONE_SESSION_TABLE),
    (39, "sessions by expiry", SESSIONS_BY_EXPIRY),
    (40, "search manifests", SEARCH_MANIFESTS),
];

/// What each space's index was built from (`domain::search::index`): per page, its key
/// and fingerprints of its text and of its place, in one value, so that an index update
/// finds the changed pages of a revision without reading the revision the index was built
/// on, nor a row per page. Indexes from before have none and are rebuilt on their next
/// update.
const SEARCH_MANIFESTS: &str = r#"
CREATE TABLE search_manifests (
    space_id TEXT PRIMARY KEY REFERENCES spaces (id) ON DELETE CASCADE,
    data {bytes} NOT NULL
)
"#;

/// Ended sessions are purged at every sign-in (`store::sessions::purge_expired`): by
/// their end, not by reading the whole table.
const SESSIONS_BY_EXPIRY: &str = r#"
CREATE INDEX app_sessions_expires ON app_sessions (expires_at)
"#;

/// Single sign-on sessions join the app's own (`app_sessions`), confined to the
/// organization of the provider that opened them: one table, one cookie, one sessions
/// page. Sessions a single sign-on opened before (at most eight hours old, under the
/// cookie this build no longer reads) end; the next login opens one in the new table.
const ONE_SESSION_TABLE: &str = r#"
ALTER TABLE app_sessions ADD COLUMN org_id TEXT;
ALTER TABLE app_sessions ADD COLUMN provider_id TEXT;
CREATE INDEX app_sessions_provider ON app_sessions (provider_id);
DROP TABLE browser_sessions
"#;

/// The pages each person opened last in the app (`store::recent`), for their home and the
/// quick find; a few dozen a person, the oldest dropped.
const RECENT_PAGES: &str = r#"
CREATE TABLE recent_pages (
    user_id TEXT NOT NULL,
    space_id TEXT NOT NULL,
    page_id TEXT NOT NULL,
    seen_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, space_id, page_id)
);
CREATE INDEX recent_pages_by_user ON recent_pages (user_id, seen_at)
"#;

/// Settings of the whole server that its administrators change in the app
/// (`store::settings`): who may create organizations, to start with.
const SERVER_SETTINGS: &str = r#"
CREATE TABLE server_settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at BIGINT NOT NULL
)
"#;

/// Where the content of the revision in step with a synced branch is in that branch's tree
/// (`domain::git::sync`): an import reads the branch against it, keeping pages' identities
/// at the repository's own paths, and an export lays out only what changed over it.
const GIT_SYNC_PLACED: &str = r#"
ALTER TABLE git_sync ADD COLUMN synced_placed TEXT
"#;

/// A revision's commit is made from its parents' trees, keeping what it did not change
/// (`domain::git`): where its pages, files and reusable contents are in that tree when it
/// is not where Quire's own layout puts them (`placed`, a blob of JSON), and whether it is
/// made so (`carried`). Commits recorded before were laid out whole and stay so, so that
/// every node rebuilds the ids already handed out.
const GIT_CARRIED: &str = r#"
ALTER TABLE git_commits ADD COLUMN placed TEXT;
ALTER TABLE git_commits ADD COLUMN carried BIGINT NOT NULL DEFAULT 1;
UPDATE git_commits SET carried = 0
"#;

/// A custom hostname serves its site once its control is proven (`domain::hostnames`):
/// when it was. The hostnames held before are taken as proven: they were being served, and
/// an upgrade should not take every site's address offline until its admins act. Invitations
/// by address expire (`--invite-ttl-ms`), and the expired ones are found by age.
const HOSTNAME_PROOFS: &str = r#"
ALTER TABLE sites ADD COLUMN hostname_verified_at BIGINT;
UPDATE sites SET hostname_verified_at = updated_at WHERE hostname IS NOT NULL;
CREATE INDEX pending_invites_created ON pending_invites (created_at)
"#;

/// A space's comments, replies and reactions move a listing version of their own
/// (`store::spaces::Listing`): a comment no longer makes every node build the space's
/// change requests' answers again, which show only its counts, and an edit of a change
/// request's content no longer has its comments' answers built again.
const COMMENT_VERSIONS: &str = r#"
ALTER TABLE spaces ADD COLUMN comments_version BIGINT NOT NULL DEFAULT 0
"#;

/// Content objects are read by space and hash (`store::objects`), through the table's key:
/// an index by hash alone served no read, and cost every object written an entry at a
/// random place in it (a page edit's objects dirtied twice the index pages; BENCHMARKS.md,
/// "Writes beside reads").
const OBJECTS_BY_SPACE: &str = r#"
DROP INDEX IF EXISTS content_objects_hash
"#;

/// Every comment of a space (outside its change requests) and of each change request,
/// counted beside the open ones (`store::comments::count`): a listing reads its total
/// instead of counting the rows, which took time in proportion to them.
const COMMENT_TOTALS: &str = r#"
ALTER TABLE spaces ADD COLUMN comments_all BIGINT NOT NULL DEFAULT 0;
ALTER TABLE change_requests ADD COLUMN comments_all BIGINT NOT NULL DEFAULT 0;
UPDATE spaces SET comments_all = (SELECT COUNT(*) FROM comments c
    WHERE c.space_id = spaces.id AND c.change_request_id IS NULL);
UPDATE change_requests SET comments_all = (SELECT COUNT(*) FROM comments c
    WHERE c.change_request_id = change_requests.id)
"#;

/// The id of the commit made from each revision (`store::git`), recorded by the node that
/// first made it, so that the API shows a revision's commit (`Revision.git`) on every node.
/// Beside `oid`, which names a pushed commit (one whose objects came with a pack).
const GIT_COMMIT_IDS: &str = r#"
ALTER TABLE git_commits ADD COLUMN commit_oid TEXT
"#;

/// Failed sign-ins counted per account and per client address (`store::sessions`), shared
/// by every node; keys are keyed digests, so no address is kept in the clear, and a row
/// ends with its window.
const SIGN_IN_FAILURES: &str = r#"
CREATE TABLE sign_in_failures (
    key TEXT PRIMARY KEY,
    failures BIGINT NOT NULL,
    since BIGINT NOT NULL
);
CREATE INDEX sign_in_failures_since ON sign_in_failures (since)
"#;

/// Site insights (`store::insights`), rolled up: one row per site, UTC day, event type and
/// the dimensions an aggregation groups by, with its count; never a row per event, and
/// nothing of the visitor (no address, user agent, cookie, session or visitor id). Absent
/// dimensions are `''` so that the key is unique. `site_insights_days` counts the keys a
/// site's day holds (all of them, and those of free text: searches and outside links),
/// which caps them; days past the retention are pruned by a job.
const SITE_INSIGHTS: &str = r#"
CREATE TABLE site_insights (
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    day BIGINT NOT NULL,
    event_type TEXT NOT NULL,
    section_id TEXT NOT NULL,
    site_space_id TEXT NOT NULL,
    space_id TEXT NOT NULL,
    page_id TEXT NOT NULL,
    detail TEXT NOT NULL,
    position TEXT NOT NULL,
    events BIGINT NOT NULL,
    PRIMARY KEY (site_id, day, event_type, section_id, site_space_id, space_id, page_id, detail, position)
);
CREATE INDEX site_insights_day ON site_insights (day);
CREATE TABLE site_insights_days (
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    day BIGINT NOT NULL,
    keys_used BIGINT NOT NULL,
    texts_used BIGINT NOT NULL,
    PRIMARY KEY (site_id, day)
);
CREATE INDEX site_insights_days_day ON site_insights_days (day)
"#;

/// Redirects of a published site (`store::redirects`): a source path inside the site, unique
/// per site, and a destination in its structure (a section, a site space, or a page of a
/// site space's space). Change-request contributors also count their writes, with the
/// latest one's time (`UserContributor`); rows before this counted one write each.
const SITE_REDIRECTS: &str = r#"
CREATE TABLE site_redirects (
    id TEXT PRIMARY KEY,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    source TEXT NOT NULL,
    kind TEXT NOT NULL,
    section_id TEXT,
    site_space_id TEXT,
    page_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX site_redirects_source ON site_redirects (site_id, source);
CREATE INDEX site_redirects_list ON site_redirects (site_id, created_at, id);
ALTER TABLE change_request_contributors ADD COLUMN edits BIGINT NOT NULL DEFAULT 1;
ALTER TABLE change_request_contributors ADD COLUMN last_at BIGINT NOT NULL DEFAULT 0;
UPDATE change_request_contributors SET last_at = first_at
"#;

/// What a site space overrides of its site's customization (only the fields it sets), and
/// the outside MCP servers a site names (their headers may hold credentials: admins only).
const SITE_EXTRAS: &str = r#"
CREATE TABLE site_space_customizations (
    site_space_id TEXT PRIMARY KEY REFERENCES site_spaces (id) ON DELETE CASCADE,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    settings TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX site_space_customizations_site ON site_space_customizations (site_id);
CREATE TABLE site_mcp_servers (
    id TEXT PRIMARY KEY,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    headers TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX site_mcp_servers_site ON site_mcp_servers (site_id, created_at, id)
"#;

/// Files uploaded through signed URLs (`generateStorageUploadURL`): the key, what the URL
/// was made for, and once the bytes came, the name they are stored under (then the key
/// takes no more bytes);
/// and an organization's custom fonts, each weight naming a finished upload (`faces`: JSON
/// array of `{weight, key}`).
const CUSTOM_FONTS: &str = r#"
CREATE TABLE storage_uploads (
    storage_key TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    declared_type TEXT NOT NULL,
    declared_size BIGINT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    hash TEXT,
    content_type TEXT,
    size BIGINT,
    uploaded_at BIGINT
);
CREATE INDEX storage_uploads_org ON storage_uploads (org_id, created_at);
CREATE TABLE custom_fonts (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    family TEXT NOT NULL,
    faces TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX custom_fonts_org ON custom_fonts (org_id, created_at, id)
"#;

/// An organization's translation glossary: each entry a term in several languages (JSON
/// object of language code to term), which translation runs keep to.
const GLOSSARY: &str = r#"
CREATE TABLE glossary_entries (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    translations TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX glossary_entries_org ON glossary_entries (org_id, created_at, id)
"#;

/// A custom hostname belongs to one site on the whole server (a second site that held the
/// same one before this keeps none), and the outcome of its latest DNS check.
const SITE_HOSTNAMES: &str = r#"
UPDATE sites SET hostname = NULL WHERE hostname IS NOT NULL AND EXISTS (
    SELECT 1 FROM sites other WHERE other.hostname = sites.hostname AND other.id < sites.id
);
CREATE UNIQUE INDEX sites_hostname ON sites (hostname);
ALTER TABLE sites ADD COLUMN hostname_status TEXT
"#;

/// Git Sync with a repository elsewhere: where (the URL may hold credentials: it is never
/// shown), which branch, the commit and revision last known to hold the same content, and
/// the latest operation; `exports` once the space was exported (then each merge exports).
const GIT_SYNC: &str = r#"
CREATE TABLE git_sync (
    space_id TEXT PRIMARY KEY REFERENCES spaces (id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    ref_name TEXT NOT NULL,
    provider TEXT,
    tree_url TEXT,
    commit_url TEXT,
    project_dir TEXT,
    exports BIGINT NOT NULL,
    configured_by TEXT NOT NULL,
    synced_commit TEXT,
    synced_revision TEXT,
    op_direction TEXT,
    op_state TEXT,
    op_started BIGINT,
    op_ended BIGINT,
    op_error TEXT,
    updated_at BIGINT NOT NULL
)
"#;

/// The one sync job of a space that runs now (`store::git::sync_claim`).
const GIT_SYNC_CLAIM: &str = r#"
ALTER TABLE git_sync ADD COLUMN running_job TEXT
"#;

/// The author and message of each revision's git commit, fixed when the commit is first
/// made, so that its id never changes; a pushed revision's commit is the one pushed (`oid`),
/// its objects in the packs kept in blob storage; a pushed branch's name stays its change
/// request's (`store::git`).
const GIT_COMMITS: &str = r#"
CREATE TABLE git_commits (
    revision_id TEXT PRIMARY KEY,
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    author TEXT NOT NULL,
    message TEXT NOT NULL,
    oid TEXT
);
CREATE INDEX git_commits_space ON git_commits (space_id);
CREATE TABLE git_packs (
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    blob TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (space_id, blob)
);
CREATE TABLE git_branches (
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    change_request_id TEXT NOT NULL REFERENCES change_requests (id) ON DELETE CASCADE,
    PRIMARY KEY (space_id, name)
)
"#;

/// An invitation by address carries the hash of a secret: its link lets the invited person
/// create their account in the app (the secret itself is shown once, to the admin).
const INVITE_SECRETS: &str = r#"
ALTER TABLE pending_invites ADD COLUMN secret_hash TEXT;
CREATE INDEX pending_invites_secret ON pending_invites (secret_hash)
"#;

/// Reviews of change requests (each submission kept, against the revision it saw) and the
/// reviewers requested and not yet heard from (a review fulfils its reviewer's request).
const REVIEWS: &str = r#"
CREATE TABLE change_request_reviews (
    id TEXT PRIMARY KEY,
    change_request_id TEXT NOT NULL REFERENCES change_requests (id) ON DELETE CASCADE,
    reviewer_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    requested_by TEXT,
    revision_id TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX change_request_reviews_cr ON change_request_reviews (change_request_id, created_at);
CREATE TABLE change_request_reviewers (
    change_request_id TEXT NOT NULL REFERENCES change_requests (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    requested_by TEXT NOT NULL,
    revision_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (change_request_id, user_id)
)
"#;

/// The app's own sign-in: a password for local accounts (argon2id, in PHC form), the flag of
/// an instance administrator, and server-side sessions (only the secret's hash is stored;
/// idle and absolute expiry; `csrf` is the token every form of the session carries).
const APP_ACCOUNTS: &str = r#"
ALTER TABLE users ADD COLUMN password_hash TEXT;
ALTER TABLE users ADD COLUMN instance_admin BIGINT NOT NULL DEFAULT 0;
CREATE TABLE app_sessions (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf TEXT NOT NULL,
    agent TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    seen_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX app_sessions_secret ON app_sessions (secret_hash);
CREATE INDEX app_sessions_user ON app_sessions (user_id)
"#;

/// Which accounts an organization's single sign-on may open (ARCHITECTURE.md, "Single
/// sign-on and accounts"): `sso_identities` links an identity of a provider (the e-mail it
/// asserts) to an account; `users.sso_org_id` names the organization whose SSO created an
/// account; `api_tokens.org_id` confines a token made from an SSO session to that session's
/// organization; `saml_requests.link_user_id` marks a login that links its provider to an
/// account signed in elsewhere.
///
/// Accounts made before this migration are sorted out once: one that has never had a token
/// from `quire admin` (unlabelled) and joined an organization through SSO belongs to the
/// first such organization, and its tokens from the account page are confined to it. Tokens
/// made on the account page of any other account were made by an SSO session into an
/// account that existed on its own (the path this migration closes), and are revoked.
const SSO_IDENTITIES: &str = r#"
CREATE TABLE sso_identities (
    provider_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (provider_id, subject)
);
CREATE INDEX sso_identities_user ON sso_identities (user_id);
ALTER TABLE users ADD COLUMN sso_org_id TEXT;
ALTER TABLE api_tokens ADD COLUMN org_id TEXT;
ALTER TABLE saml_requests ADD COLUMN link_user_id TEXT;
UPDATE users SET sso_org_id = (SELECT m.org_id FROM members m WHERE m.user_id = users.id
    AND m.sso = 1 ORDER BY m.joined_at, m.org_id LIMIT 1)
WHERE NOT EXISTS (SELECT 1 FROM api_tokens t WHERE t.user_id = users.id AND t.label IS NULL)
    AND EXISTS (SELECT 1 FROM members m WHERE m.user_id = users.id AND m.sso = 1);
UPDATE api_tokens SET org_id = (SELECT u.sso_org_id FROM users u WHERE u.id = api_tokens.user_id)
WHERE label IS NOT NULL;
UPDATE api_tokens SET revoked_at = created_at
WHERE label IS NOT NULL AND org_id IS NULL AND revoked_at IS NULL
"#;

/// Jobs that cannot succeed stop being retried: `attempts` counts the claims (starts),
/// `failures` the runs that ended in an error; a job failed for good keeps its row with
/// `failed_at` set (and its reason in `last_error`) for the operator, and is never claimed.
const FAILED_JOBS: &str = r#"
ALTER TABLE jobs ADD COLUMN failures BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN failed_at BIGINT
"#;

/// What a published-content token may read, kept on the server so that the token stays
/// short: the row is named by a hash of the scope (written once per scope, read through a
/// cache), expires with the last token issued for it, and counts against the caller that
/// first asked for it. Search sections record the conditions that guard their text (empty:
/// none), so that a published site's search filters them per visitor.
const PUBLISHED_SCOPES: &str = r#"
CREATE TABLE published_scopes (
    id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    created_by TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX published_scopes_expiry ON published_scopes (expires_at);
CREATE INDEX published_scopes_caller ON published_scopes (created_by, expires_at);
ALTER TABLE search_sections ADD COLUMN guard TEXT NOT NULL DEFAULT '';
CREATE INDEX search_sections_guarded ON search_sections (space_id) WHERE guard <> ''
"#;

/// A number per space that every write to its change requests, comments, replies or
/// reactions moves on, in the write's transaction: a node answers a listing of them from
/// memory only while the number it read is the one the answer was built at.
const LISTING_VERSIONS: &str = r#"
ALTER TABLE spaces ADD COLUMN listings_version BIGINT NOT NULL DEFAULT 0
"#;

/// Translations of spaces (`ORG/translations`): the settings and state of each, and per
/// source page the hash of what was last translated (content, languages, instructions), so
/// that a run sends only the pages that changed. `queued` records a run requested while
/// one was running; `run_job` names the job that holds the run.
const TRANSLATIONS: &str = r#"
CREATE TABLE translations (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    source_space TEXT NOT NULL,
    source_language TEXT NOT NULL,
    language TEXT NOT NULL,
    instructions TEXT NOT NULL,
    status TEXT NOT NULL,
    queued BIGINT NOT NULL,
    run_job TEXT,
    run_started_at BIGINT,
    failure TEXT,
    failed_at BIGINT,
    result_space TEXT,
    result_revision TEXT,
    runs BIGINT NOT NULL,
    total_words BIGINT NOT NULL,
    total_duration BIGINT NOT NULL,
    latest_duration BIGINT NOT NULL,
    latest_pages BIGINT NOT NULL,
    latest_words BIGINT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX translations_org ON translations (org_id, created_at, id);
CREATE TABLE translation_pages (
    translation_id TEXT NOT NULL REFERENCES translations (id) ON DELETE CASCADE,
    page_id TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (translation_id, page_id)
)
"#;

/// SAML single sign-on. Providers of an organization (`''` for settings not yet given: such a
/// provider is `pending`); the AuthnRequests sent and not yet answered, with their expiry, so
/// that any node can finish a login and each request is answered once; the assertion ids
/// already accepted, kept until the assertion expires, so that none is accepted twice; the
/// browser sessions a login opens (only the hash of the cookie is stored), each knowing the
/// provider that made it; a label on API tokens created from the account page.
const SAML: &str = r#"
CREATE TABLE saml_providers (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    sso_url TEXT NOT NULL,
    certificate TEXT NOT NULL,
    default_team TEXT,
    default_role TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX saml_providers_org ON saml_providers (org_id, created_at, id);
CREATE TABLE saml_requests (
    id TEXT PRIMARY KEY,
    provider_id TEXT NOT NULL REFERENCES saml_providers (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX saml_requests_expiry ON saml_requests (expires_at);
CREATE TABLE saml_assertions (
    provider_id TEXT NOT NULL,
    assertion_id TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (provider_id, assertion_id)
);
CREATE INDEX saml_assertions_expiry ON saml_assertions (expires_at);
CREATE TABLE browser_sessions (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id TEXT NOT NULL,
    provider_id TEXT NOT NULL,
    csrf TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX browser_sessions_secret ON browser_sessions (secret_hash);
CREATE INDEX browser_sessions_user ON browser_sessions (user_id);
ALTER TABLE api_tokens ADD COLUMN label TEXT
"#;

/// OpenAPI specifications of an organization, by slug, and their versions. The source
/// waiting to be processed (a URL, or text given in the request) stays on the spec's row
/// until the processing job takes it; `source_seq` counts the sources given, so that a job
/// finishing after a newer source arrived does not report on the older one. A version's
/// document (checked, as JSON) lives in the blob store under its hash.
const OPENAPI: &str = r#"
CREATE TABLE openapi_specs (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    slug TEXT NOT NULL,
    source_url TEXT,
    source_text TEXT,
    source_seq BIGINT NOT NULL,
    visibility TEXT NOT NULL,
    processing_state TEXT NOT NULL,
    last_version TEXT,
    last_processed_at BIGINT,
    last_error_code TEXT,
    last_errors TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX openapi_specs_slug ON openapi_specs (org_id, slug);
CREATE TABLE openapi_spec_versions (
    id TEXT PRIMARY KEY,
    spec_id TEXT NOT NULL REFERENCES openapi_specs (id) ON DELETE CASCADE,
    hash TEXT NOT NULL,
    size BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX openapi_spec_versions_spec ON openapi_spec_versions (spec_id, created_at, id);
CREATE INDEX openapi_spec_versions_hash ON openapi_spec_versions (hash)
"#;

/// The visitor-authentication settings of a site (`SitePublishingAuth`), one row per site,
/// created when first read: the secret that signs visitor tokens lives apart from the site
/// row, so that no read of a site (listings, the access cache) carries it.
const VISITOR_AUTH: &str = r#"
CREATE TABLE site_publishing_auth (
    site_id TEXT PRIMARY KEY REFERENCES sites (id) ON DELETE CASCADE,
    private_key TEXT NOT NULL,
    fallback_url TEXT,
    backend TEXT NOT NULL,
    integration TEXT,
    updated_at BIGINT NOT NULL
)
"#;

/// A counter bumped by every write of a space's search index, in the writing transaction:
/// what queries cache of an index (postings, page texts) is named by it, so that no write
/// can leave a cached copy in use (see `crate::domain::search::snapshot`).
const SEARCH_GENERATION: &str = r#"
ALTER TABLE search_spaces ADD COLUMN generation BIGINT NOT NULL DEFAULT 0
"#;

/// Docs sites and their structure. Sections and section groups share one position space
/// per site (the top level of the structure); site spaces are ordered within their section,
/// or within the site when it has no sections; sections within their group.
const SITES: &str = r#"
CREATE TABLE sites (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    title TEXT NOT NULL,
    visibility TEXT NOT NULL,
    basename TEXT,
    hostname TEXT,
    proxy TEXT,
    published BIGINT NOT NULL,
    adaptive_content BIGINT NOT NULL,
    agents_context TEXT NOT NULL,
    default_site_space TEXT,
    default_section TEXT,
    customization TEXT,
    customization_updated_at BIGINT,
    adaptive_schema TEXT,
    adaptive_schema_updated_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX sites_org ON sites (org_id, created_at);
CREATE TABLE site_section_groups (
    id TEXT PRIMARY KEY,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    icon TEXT,
    position BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX site_section_groups_site ON site_section_groups (site_id, position);
CREATE TABLE site_sections (
    id TEXT PRIMARY KEY,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    group_id TEXT REFERENCES site_section_groups (id) ON DELETE SET NULL,
    title TEXT NOT NULL,
    description TEXT,
    path TEXT NOT NULL,
    condition TEXT,
    icon TEXT,
    default_site_space TEXT,
    position BIGINT NOT NULL,
    group_position BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX site_sections_site ON site_sections (site_id, position);
CREATE TABLE site_spaces (
    id TEXT PRIMARY KEY,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    section_id TEXT REFERENCES site_sections (id) ON DELETE CASCADE,
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    condition TEXT,
    position BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX site_spaces_site ON site_spaces (site_id, position);
CREATE INDEX site_spaces_space ON site_spaces (space_id);
CREATE TABLE site_share_links (
    id TEXT PRIMARY KEY,
    site_id TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    share_key TEXT NOT NULL UNIQUE,
    active BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX site_share_links_site ON site_share_links (site_id, created_at)
"#;

/// The search index (see `crate::domain::search`). Words are bytes so that prefix ranges compare
/// bytewise on both engines, whatever the database collation.
const SEARCH: &str = r#"
CREATE TABLE search_spaces (
    space_id TEXT PRIMARY KEY REFERENCES spaces (id) ON DELETE CASCADE,
    revision_id TEXT NOT NULL,
    analyzer TEXT NOT NULL,
    pages BIGINT NOT NULL,
    title_len BIGINT NOT NULL,
    head_len BIGINT NOT NULL,
    body_len BIGINT NOT NULL,
    next_key BIGINT NOT NULL,
    delta_from BIGINT NOT NULL,
    pending BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE search_pages (
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    page_key BIGINT NOT NULL,
    page_id TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    path TEXT NOT NULL,
    ancestors TEXT NOT NULL,
    terms TEXT NOT NULL,
    title_len BIGINT NOT NULL,
    head_len BIGINT NOT NULL,
    body_len BIGINT NOT NULL,
    PRIMARY KEY (space_id, page_key)
);
CREATE UNIQUE INDEX search_pages_id ON search_pages (space_id, page_id);
CREATE TABLE search_sections (
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    page_key BIGINT NOT NULL,
    idx BIGINT NOT NULL,
    anchor TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (space_id, page_key, idx)
);
CREATE TABLE search_postings (
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    term TEXT NOT NULL,
    block BIGINT NOT NULL,
    data {bytes} NOT NULL,
    PRIMARY KEY (space_id, term, block)
);
CREATE TABLE search_delta (
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    term TEXT NOT NULL,
    page_key BIGINT NOT NULL,
    data {bytes} NOT NULL,
    PRIMARY KEY (space_id, term, page_key)
);
CREATE INDEX search_delta_page ON search_delta (space_id, page_key);
CREATE TABLE search_dead (
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    page_key BIGINT NOT NULL,
    terms TEXT NOT NULL,
    PRIMARY KEY (space_id, page_key)
);
CREATE TABLE search_terms (
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    term TEXT NOT NULL,
    df BIGINT NOT NULL,
    PRIMARY KEY (space_id, term)
);
CREATE TABLE search_words (
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    word {bytes} NOT NULL,
    term TEXT NOT NULL,
    PRIMARY KEY (space_id, word)
)
"#;

const COMMENTS: &str = r#"
CREATE TABLE comments (
    id TEXT PRIMARY KEY,
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    change_request_id TEXT REFERENCES change_requests (id) ON DELETE CASCADE,
    posted_by TEXT NOT NULL,
    posted_at BIGINT NOT NULL,
    edited_at BIGINT,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    resolved_at BIGINT,
    resolved_by TEXT,
    revision_id TEXT NOT NULL,
    page_id TEXT,
    page_title TEXT,
    page_hash TEXT,
    node_id TEXT,
    table_record TEXT,
    table_definition TEXT,
    replies BIGINT NOT NULL
);
CREATE INDEX comments_list ON comments (space_id, change_request_id, posted_at, id);
CREATE TABLE comment_replies (
    id TEXT PRIMARY KEY,
    comment_id TEXT NOT NULL REFERENCES comments (id) ON DELETE CASCADE,
    posted_by TEXT NOT NULL,
    posted_at BIGINT NOT NULL,
    edited_at BIGINT,
    body TEXT NOT NULL
);
CREATE INDEX comment_replies_list ON comment_replies (comment_id, posted_at, id);
CREATE TABLE reactions (
    target_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    emoji TEXT NOT NULL,
    reacted_at BIGINT NOT NULL,
    PRIMARY KEY (target_id, user_id, emoji)
)
"#;

/// `{bytes}` stands for the binary column type: `BLOB` on SQLite, `BYTEA` on PostgreSQL.
const CONTENT: &str = r#"
CREATE TABLE content_objects (
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    hash TEXT NOT NULL,
    data {bytes} NOT NULL,
    size BIGINT NOT NULL,
    PRIMARY KEY (space_id, hash)
);
CREATE INDEX content_objects_hash ON content_objects (hash);
CREATE TABLE blob_refs (
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    hash TEXT NOT NULL,
    PRIMARY KEY (space_id, hash)
);
CREATE INDEX blob_refs_hash ON blob_refs (hash);
CREATE TABLE blobs (
    hash TEXT PRIMARY KEY,
    size BIGINT NOT NULL,
    content_type TEXT NOT NULL,
    width BIGINT,
    height BIGINT,
    created_at BIGINT NOT NULL
);
CREATE TABLE change_requests (
    id TEXT PRIMARY KEY,
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    number BIGINT NOT NULL,
    status TEXT NOT NULL,
    subject TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    revision_id TEXT NOT NULL,
    revision_initial TEXT NOT NULL,
    revision_base TEXT NOT NULL,
    revision_merged TEXT,
    merged_by TEXT,
    merged_at BIGINT,
    comments BIGINT NOT NULL
);
CREATE UNIQUE INDEX change_requests_number ON change_requests (space_id, number);
CREATE INDEX change_requests_status ON change_requests (space_id, status, created_at, id);
CREATE TABLE change_request_contributors (
    change_request_id TEXT NOT NULL REFERENCES change_requests (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    first_at BIGINT NOT NULL,
    PRIMARY KEY (change_request_id, user_id)
);
CREATE INDEX change_request_contributors_user ON change_request_contributors (user_id)
"#;

const SPACES: &str = r#"
CREATE TABLE collections (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    parent_id TEXT REFERENCES collections (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    description TEXT,
    default_level TEXT,
    position BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX collections_org ON collections (org_id, position, id);
CREATE INDEX collections_parent ON collections (parent_id);
CREATE TABLE spaces (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    parent_id TEXT REFERENCES collections (id) ON DELETE SET NULL,
    title TEXT NOT NULL,
    emoji TEXT,
    visibility TEXT NOT NULL,
    edit_mode TEXT NOT NULL,
    language TEXT,
    default_level TEXT,
    revision_id TEXT NOT NULL,
    comments BIGINT NOT NULL,
    change_requests BIGINT NOT NULL,
    change_requests_open BIGINT NOT NULL,
    change_requests_draft BIGINT NOT NULL,
    position BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    deleted_at BIGINT
);
CREATE INDEX spaces_org ON spaces (org_id, position, id);
CREATE INDEX spaces_parent ON spaces (parent_id);
CREATE TABLE content_permissions (
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    target_kind TEXT NOT NULL,
    target_id TEXT NOT NULL,
    principal_kind TEXT NOT NULL,
    principal_id TEXT NOT NULL,
    role TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (target_kind, target_id, principal_kind, principal_id)
);
CREATE INDEX content_permissions_principal ON content_permissions (org_id, principal_kind, principal_id);
CREATE TABLE revisions (
    id TEXT PRIMARY KEY,
    space_id TEXT NOT NULL REFERENCES spaces (id) ON DELETE CASCADE,
    parents TEXT NOT NULL,
    kind TEXT NOT NULL,
    root TEXT NOT NULL,
    created_by TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX revisions_space ON revisions (space_id, created_at)
"#;

const FOUNDATION: &str = r#"
CREATE TABLE server_keys (
    name TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    display_name TEXT NOT NULL,
    photo_url TEXT,
    created_at BIGINT NOT NULL,
    first_auth_at BIGINT
);
CREATE UNIQUE INDEX users_email ON users (email);
CREATE TABLE api_tokens (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (token_hash);
CREATE TABLE organizations (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    hostname TEXT,
    email_domains TEXT NOT NULL,
    default_role TEXT,
    default_content TEXT,
    logo_url TEXT,
    sso BIGINT NOT NULL,
    ai BIGINT NOT NULL,
    invite_links BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX organizations_hostname ON organizations (hostname);
CREATE TABLE organization_domains (
    domain TEXT NOT NULL,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    PRIMARY KEY (domain, org_id)
);
CREATE TABLE members (
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role TEXT,
    joined_at BIGINT NOT NULL,
    last_seen_at BIGINT,
    sso BIGINT NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX members_user ON members (user_id);
CREATE INDEX members_joined ON members (org_id, joined_at, user_id);
CREATE TABLE teams (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX teams_org ON teams (org_id, created_at, id);
CREATE TABLE team_members (
    team_id TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL,
    added_at BIGINT NOT NULL,
    PRIMARY KEY (team_id, user_id),
    FOREIGN KEY (org_id, user_id) REFERENCES members (org_id, user_id) ON DELETE CASCADE
);
CREATE INDEX team_members_user ON team_members (org_id, user_id);
CREATE TABLE pending_invites (
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    role TEXT,
    sso BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, email)
);
CREATE INDEX pending_invites_email ON pending_invites (email);
CREATE TABLE invite_links (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    role TEXT,
    target_kind TEXT NOT NULL,
    target_id TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX invite_links_org ON invite_links (org_id, created_at, id);
CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    run_at BIGINT NOT NULL,
    locked_until BIGINT,
    attempts BIGINT NOT NULL,
    last_error TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX jobs_due ON jobs (run_at)
"#;

/// Applies every migration not yet recorded, serialised across nodes.
pub async fn run(db: &Db) -> anyhow::Result<()> {
    let mut conn = db.pool().acquire().await?;
    if db.dialect() == Dialect::Postgres {
        // Several nodes may start at once: one migrates, the others wait.
        sqlx::query("SELECT pg_advisory_lock(72010523)")
            .execute(&mut *conn)
            .await?;
    }
    let result = apply(db, &mut conn).await;
    if db.dialect() == Dialect::Postgres {
        sqlx::query("SELECT pg_advisory_unlock(72010523)")
            .execute(&mut *conn)
            .await?;
    }
    result
}

async fn apply(db: &Db, conn: &mut sqlx::pool::PoolConnection<sqlx::Any>) -> anyhow::Result<()> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS quire_migrations \
         (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
    )
    .execute(&mut **conn)
    .await?;
    for (version, name, sql) in MIGRATIONS {
        let begin = match db.dialect() {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres => "BEGIN",
        };
        sqlx::query(begin).execute(&mut **conn).await?;
        let done: Option<i64> =
            sqlx::query_scalar("SELECT version FROM quire_migrations WHERE version = $1")
                .bind(*version)
                .fetch_optional(&mut **conn)
                .await?;
        if done.is_some() {
            sqlx::query("COMMIT").execute(&mut **conn).await?;
            continue;
        }
        let outcome = async {
            let bytes = match db.dialect() {
                Dialect::Sqlite => "BLOB",
                Dialect::Postgres => "BYTEA",
            };
            let sql = sql.replace("{bytes}", bytes);
            for stmt in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
                sqlx::query(stmt)
                    .execute(&mut **conn)
                    .await
                    .with_context(|| format!("migration {version} ({name}) failed at: {stmt}"))?;
            }
            sqlx::query(
                "INSERT INTO quire_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
            )
            .bind(*version)
            .bind(*name)
            .bind(chrono::Utc::now().timestamp_millis())
            .execute(&mut **conn)
            .await?;
            anyhow::Ok(())
        }
        .await;
        match outcome {
            Ok(()) => {
                sqlx::query("COMMIT").execute(&mut **conn).await?;
            }
            Err(err) => {
                let _ = sqlx::query("ROLLBACK").execute(&mut **conn).await;
                return Err(err);
            }
        }
    }
    Ok(())
}

/// The migration versions this build knows, for tests that compare schemas.
pub fn known_versions() -> Vec<i64> {
    MIGRATIONS.iter().map(|m| m.0).collect()
}

/// The migrations of this build that the database has not recorded (readiness: a node
/// started before another migrated, or a failed migration).
pub async fn pending(db: &Db) -> sqlx::Result<Vec<i64>> {
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM quire_migrations")
        .fetch_all(db.pool())
        .await?;
    Ok(known_versions()
        .into_iter()
        .filter(|v| !applied.contains(v))
        .collect())
}

//! Response bodies of the sites family, following the official schemas (`Site`,
//! `SiteSpace`, `SiteSection`, `SiteSectionGroup`, `ShareLink`, `SiteStructure`,
//! `PublishedContentSite`, `SiteAdaptiveSchema`, `SitePublishingAuth`).

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::api::views;
use crate::clock::iso;
use crate::domain::access::grants::Grants;
use crate::domain::access::Role;
use crate::domain::sites::{self as rules, Top, Urls};
use crate::state::AppState;
use crate::store::sites::{
    GroupRow, PublishingAuthRow, SectionRow, ShareLinkRow, SiteRow, SiteSpaceRow, Structure,
};
use crate::store::spaces::SpaceRow;
use crate::values::{AgentsContext, SiteType, SiteVisibility, VisitorAuthBackend};

/// `urls` of a site.
#[derive(Serialize)]
pub struct SiteUrls {
    location: String,
    app: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    published: Option<String>,
}

/// `urls` of what a site holds: only its published address.
#[derive(Serialize)]
pub struct PublishedUrls {
    #[serde(skip_serializing_if = "Option::is_none")]
    published: Option<String>,
}

/// `SiteAdaptiveContent`.
#[derive(Serialize)]
pub struct AdaptiveContent {
    enabled: bool,
}

/// `SiteProxy`.
#[derive(Serialize)]
pub struct Proxy {
    origin: String,
    target: String,
}

/// `Site`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Site {
    object: &'static str,
    id: String,
    #[serde(rename = "type")]
    site_type: SiteType,
    title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    hostname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    basename: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy: Option<Proxy>,
    visibility: SiteVisibility,
    published: bool,
    site_spaces: i64,
    created_at: String,
    adaptive_content: AdaptiveContent,
    agents_context: AgentsContext,
    features: Vec<Value>,
    urls: SiteUrls,
}

/// `Site` for a stored site.
pub fn site(state: &AppState, s: &SiteRow) -> Site {
    let published = s.published != 0;
    let site_url = Urls::new(state, s, None).site();
    Site {
        object: "site",
        id: s.id.clone(),
        site_type: s.site_type,
        title: s.title.clone(),
        hostname: s.hostname.clone(),
        basename: s.basename.clone(),
        proxy: s.proxy.as_ref().map(|origin| Proxy {
            origin: origin.clone(),
            target: site_url.clone(),
        }),
        visibility: s.visibility,
        published,
        site_spaces: s.site_spaces,
        created_at: iso(s.created_at),
        adaptive_content: AdaptiveContent {
            enabled: s.adaptive_content != 0,
        },
        agents_context: s.agents_context,
        features: Vec::new(),
        urls: SiteUrls {
            location: state.url(&format!("/v1/orgs/{}/sites/{}", s.org_id, s.id)),
            app: state.url(&format!("/o/{}/sites/{}", s.org_id, s.id)),
            published: published.then_some(site_url),
        },
    }
}

/// `SiteSpace`.
#[derive(Serialize)]
pub struct SiteSpace {
    object: &'static str,
    id: String,
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    section: Option<String>,
    space: views::Space,
    title: String,
    default: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    condition: Option<String>,
    /// Newer renderers read these; Quire has no draft or hidden site spaces.
    draft: bool,
    hidden: bool,
    urls: PublishedUrls,
}

/// `SiteSection`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteSection {
    object: &'static str,
    id: String,
    title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    default: bool,
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    condition: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    section_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    icon: Option<String>,
    site_spaces: Vec<SiteSpace>,
    urls: PublishedUrls,
}

/// `SiteSectionGroup`.
#[derive(Serialize)]
pub struct SiteSectionGroup {
    object: &'static str,
    id: String,
    title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    icon: Option<String>,
    sections: Vec<SiteSection>,
}

/// An item of the top level of a `SiteStructure` with sections.
#[derive(Serialize)]
#[serde(untagged)]
pub enum TopItem {
    /// A section outside groups.
    Section(SiteSection),
    /// A group.
    Group(SiteSectionGroup),
}

/// `SiteStructure`.
#[derive(Serialize)]
#[serde(tag = "type", content = "structure")]
pub enum SiteStructure {
    /// A site with sections.
    #[serde(rename = "sections")]
    Sections(Vec<TopItem>),
    /// A site whose site spaces sit at its root.
    #[serde(rename = "siteSpaces")]
    SiteSpaces(Vec<SiteSpace>),
}

/// `SiteStructureItem`: what a sort or move answers with.
#[derive(Serialize)]
#[serde(untagged)]
pub enum StructureItem {
    /// A site space.
    SiteSpace(Box<SiteSpace>),
    /// A section.
    Section(SiteSection),
    /// A group.
    Group(SiteSectionGroup),
}

/// `SitePublishingAuth`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SitePublishingAuth {
    object: &'static str,
    backend: VisitorAuthBackend,
    private_key: String,
    #[serde(rename = "fallbackURL", skip_serializing_if = "Option::is_none")]
    fallback_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    integration: Option<String>,
}

/// `SitePublishingAuth` for stored settings.
pub fn publishing_auth(row: PublishingAuthRow) -> SitePublishingAuth {
    SitePublishingAuth {
        object: "publishing-auth",
        backend: row.backend,
        private_key: row.private_key,
        fallback_url: row.fallback_url,
        integration: row.integration,
    }
}

/// `ShareLink`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShareLink {
    object: &'static str,
    id: String,
    created_at: String,
    name: String,
    active: bool,
    urls: PublishedUrls,
}

/// `ShareLink` for a stored link of `site`.
pub fn share_link(state: &AppState, site: &SiteRow, l: &ShareLinkRow) -> ShareLink {
    ShareLink {
        object: "share-link",
        id: l.id.clone(),
        created_at: iso(l.created_at),
        name: l.name.clone(),
        active: l.active != 0,
        urls: PublishedUrls {
            published: Some(Urls::new(state, site, Some(&l.share_key)).site()),
        },
    }
}

/// `SiteAdaptiveSchema`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdaptiveSchema {
    pub object: &'static str,
    pub json_schema: Value,
    pub updated_at: String,
}

/// `SiteAdaptiveTemplateCondition`.
#[derive(Serialize)]
pub struct TemplateCondition {
    pub description: String,
    pub condition: String,
}

/// `PublishedContentSite`.
#[derive(Serialize)]
pub struct PublishedContentSite {
    pub object: &'static str,
    pub site: Site,
    pub structure: SiteStructure,
    pub customizations: Customizations,
    pub scripts: Vec<Value>,
}

/// `PublishedContentSite.customizations`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Customizations {
    pub site: Value,
    pub site_spaces: HashMap<String, Value>,
}

/// Everything needed to describe what a site holds, for one reader.
pub struct Describe<'a> {
    pub state: &'a AppState,
    pub site: &'a SiteRow,
    pub structure: &'a Structure,
    /// The spaces the site spaces point to.
    pub spaces: &'a HashMap<String, SpaceRow>,
    /// Their counts of open comments.
    pub comments: &'a HashMap<String, i64>,
    /// The reader's grants, for each space's `permissions` (`None`: a read-only visitor).
    pub grants: Option<&'a Grants>,
    /// Published URLs, under a share link when one was resolved.
    pub urls: Urls,
}

impl Describe<'_> {
    fn published_url(&self, url: impl FnOnce() -> String) -> PublishedUrls {
        PublishedUrls {
            published: (self.site.published != 0).then(url),
        }
    }

    /// `SiteSpace` of a site space; `None` when its space is gone.
    pub fn site_space(&self, ss: &SiteSpaceRow) -> Option<SiteSpace> {
        let space = self.spaces.get(&ss.space_id)?;
        let role = self
            .grants
            .and_then(|g| g.space_role(space))
            .unwrap_or(Role::Read);
        Some(SiteSpace {
            object: "site-space",
            id: ss.id.clone(),
            path: ss.path.clone(),
            section: ss.section_id.clone(),
            space: views::space(
                self.state,
                space,
                self.comments.get(&ss.space_id).copied().unwrap_or(0),
                role,
            ),
            title: space.title.clone(),
            default: rules::is_default_site_space(self.site, self.structure, ss),
            condition: ss.condition.clone(),
            draft: false,
            hidden: false,
            urls: self.published_url(|| self.urls.site_space(self.site, self.structure, ss)),
        })
    }

    /// `SiteSection` of a section, with its site spaces.
    pub fn section(&self, x: &SectionRow) -> SiteSection {
        SiteSection {
            object: "site-section",
            id: x.id.clone(),
            title: x.title.clone(),
            description: x.description.clone(),
            default: rules::default_section(self.site, self.structure)
                .is_some_and(|d| d.id == x.id),
            path: x.path.clone(),
            condition: x.condition.clone(),
            section_group: x.group_id.clone(),
            icon: x.icon.clone(),
            site_spaces: rules::site_spaces_in(self.structure, Some(&x.id))
                .into_iter()
                .filter_map(|ss| self.site_space(ss))
                .collect(),
            urls: self.published_url(|| self.urls.section(self.site, self.structure, x)),
        }
    }

    /// `SiteSectionGroup` of a group, with its sections.
    pub fn group(&self, g: &GroupRow) -> SiteSectionGroup {
        SiteSectionGroup {
            object: "site-section-group",
            id: g.id.clone(),
            title: g.title.clone(),
            icon: g.icon.clone(),
            sections: rules::group_sections(self.structure, &g.id)
                .into_iter()
                .map(|x| self.section(x))
                .collect(),
        }
    }

    /// `SiteStructure` of the whole site.
    pub fn structure(&self) -> SiteStructure {
        if self.structure.sections.is_empty() {
            SiteStructure::SiteSpaces(
                rules::site_spaces_in(self.structure, None)
                    .into_iter()
                    .filter_map(|ss| self.site_space(ss))
                    .collect(),
            )
        } else {
            SiteStructure::Sections(
                rules::top_level(self.structure)
                    .into_iter()
                    .map(|t| match t {
                        Top::Section(x) => TopItem::Section(self.section(x)),
                        Top::Group(g) => TopItem::Group(self.group(g)),
                    })
                    .collect(),
            )
        }
    }
}

/// `SiteRedirect`.
#[derive(Serialize)]
pub struct SiteRedirect {
    object: &'static str,
    id: String,
    source: String,
    destination: crate::domain::redirects::Destination,
}

/// `SiteRedirect` of a stored redirect.
pub fn site_redirect(
    r: &crate::store::redirects::RedirectRow,
) -> crate::error::ApiResult<SiteRedirect> {
    Ok(SiteRedirect {
        object: "site-redirect",
        id: r.id.clone(),
        source: r.source.clone(),
        destination: crate::domain::redirects::Destination::of(r)?,
    })
}

/// Answer of `getSiteRedirectBySource`: the redirect and the URL it sends to.
#[derive(Serialize)]
pub struct ResolvedRedirect {
    pub redirect: SiteRedirect,
    pub target: String,
}

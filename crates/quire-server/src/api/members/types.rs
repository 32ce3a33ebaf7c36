//! Response bodies of the member operations that are not shared resources.

use serde::Serialize;

use crate::api::views::{Space, Team};
use crate::domain::access::Role;

/// The member's place in a team.
#[derive(Serialize)]
pub struct TeamRole {
    pub role: String,
}

/// An item of `listTeamsForOrganizationMember`: a team and the member's role in it.
#[derive(Serialize)]
pub struct MemberTeam {
    pub team: Team,
    pub member: TeamRole,
}

/// An item of `listSpacesForOrganizationMember`: a space and the member's role on it.
#[derive(Serialize)]
pub struct MemberSpace {
    pub permission: Role,
    pub space: Space,
}

//! Response bodies of the team operations that are not shared resources.

use serde::Serialize;

use crate::api::views::Member;

/// The member's role in the team.
#[derive(Serialize)]
pub struct RoleInTeam {
    pub role: String,
}

/// What the caller may do with the membership.
#[derive(Serialize)]
pub struct MembershipPermissions {
    pub view: bool,
}

/// `TeamMember`: an organization member and their place in the team.
#[derive(Serialize)]
pub struct TeamMember {
    pub organization: Member,
    pub team: RoleInTeam,
    pub permissions: MembershipPermissions,
}

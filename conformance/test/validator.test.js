// Self-checks of the validator (no server): it must reject what the official schemas
// reject, or the rest of the suite would prove nothing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GitBookAPI } from '@gitbook/api';
import { spec137, spec202, validate, SchemaViolation } from '../lib/spec.js';

const user = {
    object: 'user',
    id: 'u1',
    displayName: 'Ada',
    email: 'ada@example.com',
    urls: { location: 'http://127.0.0.1:1/v1/users/u1' },
};
const member = {
    object: 'member',
    id: 'u1',
    role: 'edit',
    user,
    disabled: false,
    joinedAt: '2024-01-01T00:00:00.000Z',
    sso: false,
    spaces: 0,
    teams: 0,
};

const rejects = (fn, pattern) => assert.throws(fn, (e) => e instanceof SchemaViolation && (!pattern || pattern.test(e.message)));

test('valid bodies pass, including nullable roles (guests)', () => {
    validate(spec137, 'getAuthenticatedUser', 200, user);
    validate(spec137, 'getMemberInOrganizationById', 200, member);
    validate(spec137, 'getMemberInOrganizationById', 200, { ...member, role: null });
    validate(spec137, 'listMembersInOrganizationById', 200, { items: [member], count: 1, next: { page: 'x' } });
    validate(spec137, 'removeMemberFromOrganizationById', 204, undefined, { hasBody: false });
});

test('schema violations are caught with the ajv errors and the body', () => {
    rejects(() => validate(spec137, 'getMemberInOrganizationById', 200, { ...member, role: 'owner' }), /ajv errors/);
    rejects(() => validate(spec137, 'getAuthenticatedUser', 200, { ...user, displayName: undefined }), /displayName/);
    rejects(() => validate(spec137, 'getAuthenticatedUser', 200, { ...user, urls: { location: 'not a uri' } }), /format/);
    rejects(() => validate(spec137, 'getMemberInOrganizationById', 200, { ...member, joinedAt: 'yesterday' }));
    rejects(() => validate(spec137, 'listMembersInOrganizationById', 200, { items: [member], next: {} }), /page/);
    rejects(() => validate(spec137, 'listMembersInOrganizationById', 200, { count: 0 }), /items/);
    rejects(() => validate(spec202, 'createOrganization', 201, { object: 'organization', id: 'o1' }));
});

test('statuses and error bodies are checked', () => {
    rejects(() => validate(spec137, 'getOrganizationById', 201, {}), /not declared/);
    rejects(() => validate(spec137, 'removeMemberFromOrganizationById', 204, { ok: true }), /no content/);
    validate(spec137, 'getOrganizationById', 404, { error: { code: 404, message: 'Not found' } });
    rejects(() => validate(spec137, 'getOrganizationById', 404, { error: { code: 400, message: 'x' } }));
    rejects(() => validate(spec137, 'getOrganizationById', 404, { message: 'Not found' }));
    // Undeclared error statuses fall back to the common error shape.
    validate(spec137, 'updateOrganizationById', 403, { error: { code: 403, message: 'Admins only' } });
    rejects(() => validate(spec137, 'updateOrganizationById', 403, { error: { code: 403 } }));
    rejects(() => validate(spec137, 'updateOrganizationById', 403, { error: { code: 401, message: 'x' } }), /differs/);
});

test('every operation under test is in the official spec and the official client', () => {
    const ops137 = {
        getApiInformation: (a) => a.getApiInformation,
        getAuthenticatedUser: (a) => a.user.getAuthenticatedUser,
        getUserById: (a) => a.users.getUserById,
        updateUserById: (a) => a.users.updateUserById,
        listOrganizationsForAuthenticatedUser: (a) => a.orgs.listOrganizationsForAuthenticatedUser,
        getOrganizationById: (a) => a.orgs.getOrganizationById,
        updateOrganizationById: (a) => a.orgs.updateOrganizationById,
        getOrganizationsForEmailDomain: (a) => a.emailDomains.getOrganizationsForEmailDomain,
        listMembersInOrganizationById: (a) => a.orgs.listMembersInOrganizationById,
        getMemberInOrganizationById: (a) => a.orgs.getMemberInOrganizationById,
        updateMemberInOrganizationById: (a) => a.orgs.updateMemberInOrganizationById,
        removeMemberFromOrganizationById: (a) => a.orgs.removeMemberFromOrganizationById,
        updateOrganizationMemberLastSeenAt: (a) => a.orgs.updateOrganizationMemberLastSeenAt,
        setUserAsSSOMemberForOrganization: (a) => a.orgs.setUserAsSsoMemberForOrganization,
        listSpacesForOrganizationMember: (a) => a.orgs.listSpacesForOrganizationMember,
        listTeamsForOrganizationMember: (a) => a.orgs.listTeamsForOrganizationMember,
        listTeamsInOrganizationById: (a) => a.orgs.listTeamsInOrganizationById,
        createOrganizationTeam: (a) => a.orgs.createOrganizationTeam,
        getTeamInOrganizationById: (a) => a.orgs.getTeamInOrganizationById,
        updateTeamInOrganizationById: (a) => a.orgs.updateTeamInOrganizationById,
        removeTeamFromOrganizationById: (a) => a.orgs.removeTeamFromOrganizationById,
        listTeamMembersInOrganizationById: (a) => a.orgs.listTeamMembersInOrganizationById,
        updateMembersInOrganizationTeam: (a) => a.orgs.updateMembersInOrganizationTeam,
        addMemberToOrganizationTeamById: (a) => a.orgs.addMemberToOrganizationTeamById,
        deleteMemberFromOrganizationTeamById: (a) => a.orgs.deleteMemberFromOrganizationTeamById,
        inviteUsersToOrganization: (a) => a.orgs.inviteUsersToOrganization,
        listOrganizationInviteLinks: (a) => a.orgs.listOrganizationInviteLinks,
        createOrganizationInvite: (a) => a.orgs.createOrganizationInvite,
        getOrganizationInviteLink: (a) => a.orgs.getOrganizationInviteLink,
        updateOrganizationInviteById: (a) => a.orgs.updateOrganizationInviteById,
        deleteOrganizationInviteById: (a) => a.orgs.deleteOrganizationInviteById,
        joinOrganizationWithInvite: (a) => a.orgs.joinOrganizationWithInvite,
    };
    const api = new GitBookAPI({ endpoint: 'http://127.0.0.1:1' });
    for (const [id, method] of Object.entries(ops137)) {
        assert.ok(spec137.operation(id), id);
        assert.equal(typeof method(api), 'function', `client method for ${id}`);
    }
    assert.throws(() => spec137.operation('createOrganization'), 'createOrganization is newer than 0.137.0');
    const create = spec202.operation('createOrganization');
    assert.equal(create.method, 'POST');
    assert.equal(create.path, '/orgs');
});

test('request paths map to their operations', () => {
    assert.equal(spec137.match('GET', '/')?.id, 'getApiInformation');
    assert.equal(spec137.match('GET', '/orgs/o1/members/u1')?.id, 'getMemberInOrganizationById');
    assert.equal(spec137.match('POST', '/orgs/o1/members/u1/sso')?.id, 'setUserAsSSOMemberForOrganization');
    assert.equal(spec137.match('PUT', '/orgs/o1/teams/t1/members/u1')?.id, 'addMemberToOrganizationTeamById');
    assert.equal(spec137.match('POST', '/orgs/o1/invites/i1')?.id, 'joinOrganizationWithInvite');
    assert.equal(spec202.match('POST', '/orgs')?.id, 'createOrganization');
    // A nested page path spans segments.
    assert.equal(spec137.match('GET', '/spaces/s1/content/path/guide/details')?.id, 'getPageByPath');
    assert.equal(
        spec137.match('GET', '/spaces/s1/change-requests/c1/content/path/guide/details')?.id,
        'getPageInChangeRequestByPath',
    );
    assert.equal(spec137.match('GET', '/spaces/s1/revisions/r1/path/guide')?.id, 'getPageInRevisionByPath');
    assert.equal(spec137.match('GET', '/spaces/s1/content/page/p1')?.id, 'getPageById');
});

// Teams: create, list (filters, pagination), get, update, delete, and team membership.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg, listAll } from '../lib/client.js';

let server;
let admin;
let owner; // a plain member who owns a team
let member;
let other;
let outsider;
let org;
before(async () => {
    server = await startServer();
    admin = await newUser(server, 'admin');
    owner = await newUser(server, 'owner');
    member = await newUser(server, 'member');
    other = await newUser(server, 'other');
    outsider = await newUser(server, 'outsider');
    org = await setupOrg(server, admin, 'Teams Org', [
        { user: owner, role: 'edit' },
        { user: member, role: 'read' },
        { user: other, role: 'comment' },
    ]);
});
after(async () => {
    await server?.stop();
});

const teamMembers = async (who, teamId) => {
    const data = check(
        'listTeamMembersInOrganizationById',
        await who.api.orgs.listTeamMembersInOrganizationById(org.id, teamId),
        { status: 200 },
    );
    return Object.fromEntries(data.items.map((i) => [i.organization.id, i.team.role]));
};

test('createOrganizationTeam: 201 with the team; members by id', async () => {
    const empty = check('createOrganizationTeam', await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Empty' }), {
        status: 201,
    });
    assert.equal(empty.object, 'team');
    assert.equal(empty.title, 'Empty');
    assert.equal(empty.members, 0);
    assert.equal(empty.spaces, 0);
    assert.equal(empty.permissions.admin, true);

    const full = check(
        'createOrganizationTeam',
        await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Full', members: [member.id, other.id] }),
        { status: 201 },
    );
    assert.equal(full.members, 2);
    assert.deepEqual(await teamMembers(admin, full.id), { [member.id]: 'member', [other.id]: 'member' });
});

test('createOrganizationTeam: 400 for bad titles and non-members, 403 for non-admins', async () => {
    await expectApiError(admin.api.orgs.createOrganizationTeam(org.id, { title: '' }), 400, 'createOrganizationTeam');
    await expectApiError(admin.api.orgs.createOrganizationTeam(org.id, { title: 'x'.repeat(65) }), 400);
    await expectApiError(admin.api.orgs.createOrganizationTeam(org.id, {}), 400);
    await expectApiError(
        admin.api.orgs.createOrganizationTeam(org.id, { title: 'Bad', members: [outsider.id] }),
        400,
        'createOrganizationTeam',
    );
    await expectApiError(member.api.orgs.createOrganizationTeam(org.id, { title: 'Nope' }), 403, 'createOrganizationTeam');
    await expectApiError(outsider.api.orgs.createOrganizationTeam(org.id, { title: 'Nope' }), 404);
});

test('team ownership: owners manage their team, plain members only view', async () => {
    const team = check('createOrganizationTeam', await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Owned' }), {
        status: 201,
    });
    check(
        'addMemberToOrganizationTeamById',
        await admin.api.orgs.addMemberToOrganizationTeamById(org.id, team.id, owner.id, { role: 'owner' }),
        { status: 204 },
    );
    check(
        'addMemberToOrganizationTeamById',
        await owner.api.orgs.addMemberToOrganizationTeamById(org.id, team.id, member.id, {}),
        { status: 204 },
    );
    assert.deepEqual(await teamMembers(owner, team.id), { [owner.id]: 'owner', [member.id]: 'member' });

    const asOwner = check('getTeamInOrganizationById', await owner.api.orgs.getTeamInOrganizationById(org.id, team.id), {
        status: 200,
    });
    assert.equal(asOwner.permissions.admin, true);
    assert.equal(asOwner.permissions.view, true);
    assert.equal(asOwner.members, 2);

    const renamed = check(
        'updateTeamInOrganizationById',
        await owner.api.orgs.updateTeamInOrganizationById(org.id, team.id, { title: 'Owned Renamed' }),
        { status: 200 },
    );
    assert.equal(renamed.title, 'Owned Renamed');
    assert.equal(renamed.id, team.id);

    const asMember = check('getTeamInOrganizationById', await member.api.orgs.getTeamInOrganizationById(org.id, team.id), {
        status: 200,
    });
    assert.equal(asMember.permissions.admin, false);
    assert.equal(asMember.title, 'Owned Renamed');

    await expectApiError(
        member.api.orgs.updateTeamInOrganizationById(org.id, team.id, { title: 'Member Was Here' }),
        403,
        'updateTeamInOrganizationById',
    );
    await expectApiError(
        member.api.orgs.addMemberToOrganizationTeamById(org.id, team.id, other.id, {}),
        403,
        'addMemberToOrganizationTeamById',
    );
    await expectApiError(owner.api.orgs.removeTeamFromOrganizationById(org.id, team.id), 403);

    // listTeamsInOrganizationById?owner= keeps the teams that member manages.
    const owned = check(
        'listTeamsInOrganizationById',
        await admin.api.orgs.listTeamsInOrganizationById(org.id, { owner: owner.id }),
        { status: 200 },
    );
    assert.deepEqual(owned.items.map((t) => t.id), [team.id]);
    const notOwned = check(
        'listTeamsInOrganizationById',
        await admin.api.orgs.listTeamsInOrganizationById(org.id, { owner: member.id }),
        { status: 200 },
    );
    assert.deepEqual(notOwned.items, []);
});

test('getTeamInOrganizationById / updateTeamInOrganizationById: 404s and 400s', async () => {
    await expectApiError(admin.api.orgs.getTeamInOrganizationById(org.id, 'nosuchteam000000'), 404, 'getTeamInOrganizationById');
    const team = check('createOrganizationTeam', await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Private' }), {
        status: 201,
    });
    await expectApiError(outsider.api.orgs.getTeamInOrganizationById(org.id, team.id), 404, 'getTeamInOrganizationById');
    await expectApiError(
        admin.api.orgs.updateTeamInOrganizationById(org.id, team.id, { title: '' }),
        400,
        'updateTeamInOrganizationById',
    );
    await expectApiError(
        admin.api.orgs.updateTeamInOrganizationById(org.id, 'nosuchteam000000', { title: 'Ghost' }),
        404,
        'updateTeamInOrganizationById',
    );
    const renamed = check(
        'updateTeamInOrganizationById',
        await admin.api.orgs.updateTeamInOrganizationById(org.id, team.id, { title: 'Private Renamed' }),
        { status: 200 },
    );
    assert.equal(renamed.title, 'Private Renamed');
    const again = check('getTeamInOrganizationById', await admin.api.orgs.getTeamInOrganizationById(org.id, team.id), {
        status: 200,
    });
    assert.equal(again.title, 'Private Renamed');
});

test('listTeamsInOrganizationById: title filter and pagination', async () => {
    const ids = [];
    for (const title of ['Zeta Listing', 'Eta Listing', 'Theta Listing']) {
        ids.push(
            check('createOrganizationTeam', await admin.api.orgs.createOrganizationTeam(org.id, { title }), { status: 201 }).id,
        );
    }
    const filtered = check(
        'listTeamsInOrganizationById',
        await member.api.orgs.listTeamsInOrganizationById(org.id, { title: 'LISTING' }),
        { status: 200 },
    );
    assert.deepEqual(filtered.items.map((t) => t.id).sort(), [...ids].sort());
    assert.equal(filtered.count, 3);
    for (const t of filtered.items) assert.equal(t.permissions.admin, false, 'a plain member does not manage');

    const eta = check(
        'listTeamsInOrganizationById',
        await admin.api.orgs.listTeamsInOrganizationById(org.id, { title: 'eta listing' }),
        { status: 200 },
    );
    assert.deepEqual(eta.items.map((t) => t.title).sort(), ['Eta Listing', 'Theta Listing', 'Zeta Listing']);

    const all = check('listTeamsInOrganizationById', await admin.api.orgs.listTeamsInOrganizationById(org.id), {
        status: 200,
    });
    const { items, pages } = await listAll('listTeamsInOrganizationById', (page) =>
        admin.api.orgs.listTeamsInOrganizationById(org.id, { limit: 1, page }),
    );
    assert.deepEqual(items.map((t) => t.id), all.items.map((t) => t.id), 'walking pages yields the same teams');
    assert.equal(new Set(items.map((t) => t.id)).size, items.length);
    for (const p of pages) assert.equal(p.count, all.items.length);

    await expectApiError(admin.api.orgs.listTeamsInOrganizationById(org.id, { owner: outsider.id }), 400);
});

test('updateMembersInOrganizationTeam: add, re-role and remove in one call', async () => {
    const team = check('createOrganizationTeam', await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Bulk' }), {
        status: 201,
    });
    // Add by id and by e-mail.
    check(
        'updateMembersInOrganizationTeam',
        await admin.api.orgs.updateMembersInOrganizationTeam(org.id, team.id, { add: [member.id, other.email] }),
        { status: 204 },
    );
    assert.deepEqual(await teamMembers(admin, team.id), { [member.id]: 'member', [other.id]: 'member' });

    // Re-role one, remove the other, add a third.
    check(
        'updateMembersInOrganizationTeam',
        await admin.api.orgs.updateMembersInOrganizationTeam(org.id, team.id, {
            add: [owner.id],
            remove: [other.id],
            memberships: { [member.id]: { role: 'owner' } },
        }),
        { status: 204 },
    );
    assert.deepEqual(await teamMembers(admin, team.id), { [member.id]: 'owner', [owner.id]: 'member' });

    // A user both added and removed ends removed.
    check(
        'updateMembersInOrganizationTeam',
        await admin.api.orgs.updateMembersInOrganizationTeam(org.id, team.id, { add: [other.id], remove: [other.id] }),
        { status: 204 },
    );
    assert.deepEqual(await teamMembers(admin, team.id), { [member.id]: 'owner', [owner.id]: 'member' });

    const got = check('getTeamInOrganizationById', await admin.api.orgs.getTeamInOrganizationById(org.id, team.id), {
        status: 200,
    });
    assert.equal(got.members, 2);

    await expectApiError(
        admin.api.orgs.updateMembersInOrganizationTeam(org.id, team.id, { add: [outsider.id] }),
        400,
        'updateMembersInOrganizationTeam',
    );
    await expectApiError(
        other.api.orgs.updateMembersInOrganizationTeam(org.id, team.id, { add: [other.id] }),
        403,
        'updateMembersInOrganizationTeam',
    );
    // Nothing changed by the refused calls.
    assert.deepEqual(await teamMembers(admin, team.id), { [member.id]: 'owner', [owner.id]: 'member' });
});

test('addMemberToOrganizationTeamById / deleteMemberFromOrganizationTeamById', async () => {
    const team = check('createOrganizationTeam', await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Single' }), {
        status: 201,
    });
    check(
        'addMemberToOrganizationTeamById',
        await admin.api.orgs.addMemberToOrganizationTeamById(org.id, team.id, other.id),
        { status: 204 },
    );
    assert.deepEqual(await teamMembers(admin, team.id), { [other.id]: 'member' });
    check(
        'addMemberToOrganizationTeamById',
        await admin.api.orgs.addMemberToOrganizationTeamById(org.id, team.id, other.id, { role: 'owner' }),
        { status: 204 },
    );
    assert.deepEqual(await teamMembers(admin, team.id), { [other.id]: 'owner' });

    await expectApiError(
        admin.api.orgs.addMemberToOrganizationTeamById(org.id, team.id, outsider.id, {}),
        400,
        'addMemberToOrganizationTeamById',
    );
    await expectApiError(
        admin.api.orgs.addMemberToOrganizationTeamById(org.id, team.id, other.id, { role: 'boss' }),
        400,
        'addMemberToOrganizationTeamById',
    );

    check(
        'deleteMemberFromOrganizationTeamById',
        await admin.api.orgs.deleteMemberFromOrganizationTeamById(org.id, team.id, other.id),
        { status: 204 },
    );
    assert.deepEqual(await teamMembers(admin, team.id), {});
    // Not a team member any more: still 204.
    check(
        'deleteMemberFromOrganizationTeamById',
        await admin.api.orgs.deleteMemberFromOrganizationTeamById(org.id, team.id, other.id),
        { status: 204 },
    );
    await expectApiError(
        member.api.orgs.deleteMemberFromOrganizationTeamById(org.id, team.id, other.id),
        403,
        'deleteMemberFromOrganizationTeamById',
    );
});

test('listTeamMembersInOrganizationById: pagination over team members', async () => {
    const team = check(
        'createOrganizationTeam',
        await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Paged', members: [admin.id, owner.id, member.id, other.id] }),
        { status: 201 },
    );
    const { items, pages } = await listAll('listTeamMembersInOrganizationById', (page) =>
        admin.api.orgs.listTeamMembersInOrganizationById(org.id, team.id, { limit: 1, page }),
    );
    const ids = items.map((i) => i.organization.id);
    assert.deepEqual([...ids].sort(), [admin.id, owner.id, member.id, other.id].sort());
    assert.equal(new Set(ids).size, 4);
    for (const p of pages) assert.equal(p.count, 4);
    for (const i of items) assert.equal(i.permissions.view, true);
});

test('removeTeamFromOrganizationById: 204, then gone; 204 again', async () => {
    const team = check(
        'createOrganizationTeam',
        await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Doomed', members: [member.id] }),
        { status: 201 },
    );
    check('removeTeamFromOrganizationById', await admin.api.orgs.removeTeamFromOrganizationById(org.id, team.id), {
        status: 204,
    });
    await expectApiError(admin.api.orgs.getTeamInOrganizationById(org.id, team.id), 404, 'getTeamInOrganizationById');
    const mine = check(
        'listTeamsForOrganizationMember',
        await member.api.orgs.listTeamsForOrganizationMember(org.id, member.id),
        { status: 200 },
    );
    assert.ok(!mine.items.some((i) => i.team.id === team.id), 'the deleted team is gone from member teams');
    check('removeTeamFromOrganizationById', await admin.api.orgs.removeTeamFromOrganizationById(org.id, team.id), {
        status: 204,
    });
    await expectApiError(member.api.orgs.removeTeamFromOrganizationById(org.id, team.id), 403);
});

test('a member removed from the organization leaves its teams', async () => {
    const leaver = await newUser(server, 'leaver');
    check(
        'inviteUsersToOrganization',
        await admin.api.orgs.inviteUsersToOrganization(org.id, { emails: [leaver.email], role: 'read' }),
        { status: 200 },
    );
    const team = check(
        'createOrganizationTeam',
        await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Left Behind', members: [member.id, leaver.id] }),
        { status: 201 },
    );
    assert.equal(team.members, 2);
    check('removeMemberFromOrganizationById', await admin.api.orgs.removeMemberFromOrganizationById(org.id, leaver.id), {
        status: 204,
    });
    assert.deepEqual(await teamMembers(admin, team.id), { [member.id]: 'member' });
    const now = check('getTeamInOrganizationById', await admin.api.orgs.getTeamInOrganizationById(org.id, team.id), {
        status: 200,
    });
    assert.equal(now.members, 1);
});

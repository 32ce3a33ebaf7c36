// Organization members: listing (filters, sorting, pagination), roles, removal, ping, SSO,
// and a member's spaces and teams.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg, listAll } from '../lib/client.js';

let server;
let admin;
let editor;
let reader;
let guest;
let commenter;
let outsider;
let org;
before(async () => {
    server = await startServer();
    admin = await newUser(server, 'admin', { name: 'Ada Admin' });
    editor = await newUser(server, 'editor', { name: 'Eddie Editor' });
    reader = await newUser(server, 'reader', { name: 'Rita Reader' });
    guest = await newUser(server, 'guest', { name: 'Gus Guest' });
    commenter = await newUser(server, 'commenter', { name: 'Cora Commenter' });
    outsider = await newUser(server, 'outsider', { name: 'Otto Outsider' });
    org = await setupOrg(server, admin, 'Members Org', [
        { user: editor, role: 'edit' },
        { user: reader, role: 'read' },
        { user: guest, role: null },
        { user: commenter, role: 'comment' },
    ]);
});
after(async () => {
    await server?.stop();
});

const list = (who, query) => who.api.orgs.listMembersInOrganizationById(org.id, query);

test('listMembersInOrganizationById: every member with its role; guests have role null', async () => {
    const data = check('listMembersInOrganizationById', await list(admin), { status: 200 });
    const roles = Object.fromEntries(data.items.map((m) => [m.id, m.role]));
    assert.deepEqual(roles, {
        [admin.id]: 'admin',
        [editor.id]: 'edit',
        [reader.id]: 'read',
        [guest.id]: null,
        [commenter.id]: 'comment',
    });
    assert.equal(data.count, 5);
    for (const m of data.items) {
        assert.equal(m.object, 'member');
        assert.equal(m.user.id, m.id);
        assert.equal(m.disabled, false);
    }
    const ed = data.items.find((m) => m.id === editor.id);
    assert.equal(ed.user.displayName, 'Eddie Editor');
    assert.equal(ed.user.email, editor.email);
});

test('listMembersInOrganizationById: role filter, including guest', async () => {
    const cases = [
        ['admin', [admin.id]],
        ['edit', [editor.id]],
        ['read', [reader.id]],
        ['comment', [commenter.id]],
        ['guest', [guest.id]],
        ['review', []],
        ['create', []],
    ];
    for (const [role, ids] of cases) {
        const data = check('listMembersInOrganizationById', await list(admin, { role }), { status: 200 });
        assert.deepEqual(data.items.map((m) => m.id), ids, `role=${role}`);
        assert.equal(data.count, ids.length, `count for role=${role}`);
    }
    await expectApiError(list(admin, { role: 'owner' }), 400, 'listMembersInOrganizationById');
});

test('listMembersInOrganizationById: search by name or e-mail, case-insensitive', async () => {
    let data = check('listMembersInOrganizationById', await list(admin, { search: 'rita' }), { status: 200 });
    assert.deepEqual(data.items.map((m) => m.id), [reader.id]);

    data = check('listMembersInOrganizationById', await list(admin, { search: editor.email.toUpperCase() }), {
        status: 200,
    });
    assert.deepEqual(data.items.map((m) => m.id), [editor.id]);

    data = check('listMembersInOrganizationById', await list(admin, { search: 'nobody-matches-this' }), {
        status: 200,
    });
    assert.deepEqual(data.items, []);

    data = check('listMembersInOrganizationById', await list(admin, { search: 'o', role: 'comment' }), {
        status: 200,
    });
    assert.deepEqual(data.items.map((m) => m.id), [commenter.id], 'filters combine');
});

test('listMembersInOrganizationById: order by joinedAt, ascending and descending', async () => {
    const asc = check('listMembersInOrganizationById', await list(admin, { order: 'asc', sort: 'joinedAt' }), {
        status: 200,
    });
    const desc = check('listMembersInOrganizationById', await list(admin, { order: 'desc' }), { status: 200 });
    const times = (d) => d.items.map((m) => Date.parse(m.joinedAt));
    const ascTimes = times(asc);
    for (let i = 1; i < ascTimes.length; i++) assert.ok(ascTimes[i - 1] <= ascTimes[i], 'ascending joinedAt');
    const descTimes = times(desc);
    for (let i = 1; i < descTimes.length; i++) assert.ok(descTimes[i - 1] >= descTimes[i], 'descending joinedAt');
    assert.deepEqual(
        asc.items.map((m) => m.id),
        desc.items.map((m) => m.id).reverse(),
        'asc is the reverse of desc',
    );
    assert.equal(asc.items[0].id, admin.id, 'the creator joined first');
    await expectApiError(list(admin, { sort: 'title' }), 400, 'listMembersInOrganizationById');
});

test('updateOrganizationMemberLastSeenAt and sort=lastSeenAt', async () => {
    const pinged = check(
        'updateOrganizationMemberLastSeenAt',
        await reader.api.orgs.updateOrganizationMemberLastSeenAt(org.id),
        { status: 200 },
    );
    if (pinged.gitbookVisitorClaims !== undefined) assert.equal(typeof pinged.gitbookVisitorClaims, 'string');
    // A later ping by the editor.
    await new Promise((r) => setTimeout(r, 5)); // distinct millisecond timestamps
    check('updateOrganizationMemberLastSeenAt', await editor.api.orgs.updateOrganizationMemberLastSeenAt(org.id), {
        status: 200,
    });

    const readerNow = check(
        'getMemberInOrganizationById',
        await admin.api.orgs.getMemberInOrganizationById(org.id, reader.id),
        { status: 200 },
    );
    assert.ok(readerNow.lastSeenAt, 'lastSeenAt is set after a ping');

    const desc = check(
        'listMembersInOrganizationById',
        await list(admin, { sort: 'lastSeenAt', order: 'desc' }),
        { status: 200 },
    );
    const ids = desc.items.map((m) => m.id);
    assert.ok(ids.includes(reader.id) && ids.includes(editor.id));
    assert.ok(ids.indexOf(editor.id) < ids.indexOf(reader.id), 'most recently seen first');
    const seenTimes = desc.items.filter((m) => m.lastSeenAt).map((m) => Date.parse(m.lastSeenAt));
    for (let i = 1; i < seenTimes.length; i++) assert.ok(seenTimes[i - 1] >= seenTimes[i]);

    const asc = check('listMembersInOrganizationById', await list(admin, { sort: 'lastSeenAt', order: 'asc' }), {
        status: 200,
    });
    const ascIds = asc.items.map((m) => m.id);
    assert.ok(ascIds.indexOf(reader.id) < ascIds.indexOf(editor.id), 'least recently seen first');

    await expectApiError(outsider.api.orgs.updateOrganizationMemberLastSeenAt(org.id), 404);
});

test('pagination: limit=1 walks every member exactly once; count is the total', async () => {
    for (const query of [{}, { order: 'asc' }, { role: 'guest' }]) {
        const { items, pages } = await listAll('listMembersInOrganizationById', (page) =>
            list(admin, { ...query, limit: 1, page }),
        );
        const expected = check('listMembersInOrganizationById', await list(admin, query), { status: 200 });
        const ids = items.map((m) => m.id);
        assert.equal(new Set(ids).size, ids.length, 'no member twice');
        assert.deepEqual(ids, expected.items.map((m) => m.id), `same members in the same order for ${JSON.stringify(query)}`);
        for (const p of pages) {
            assert.ok(p.items.length <= 1);
            assert.equal(p.count, expected.items.length);
        }
        assert.equal(pages.at(-1).next, undefined, 'the last page has no next');
    }
    const two = check('listMembersInOrganizationById', await list(admin, { limit: 2 }), { status: 200 });
    assert.equal(two.items.length, 2);
    assert.ok(two.next?.page);
    await expectApiError(list(admin, { page: 'not-a-cursor' }), 400, 'listMembersInOrganizationById');
    await expectApiError(list(admin, { limit: 5000 }), 400, 'listMembersInOrganizationById');
});

test('getMemberInOrganizationById: members and 404 for non-members', async () => {
    const m = check('getMemberInOrganizationById', await editor.api.orgs.getMemberInOrganizationById(org.id, reader.id), {
        status: 200,
    });
    assert.equal(m.id, reader.id);
    assert.equal(m.role, 'read');
    assert.equal(m.sso, false);
    assert.equal(typeof m.joinedAt, 'string');

    const g = check('getMemberInOrganizationById', await admin.api.orgs.getMemberInOrganizationById(org.id, guest.id), {
        status: 200,
    });
    assert.equal(g.role, null);

    await expectApiError(admin.api.orgs.getMemberInOrganizationById(org.id, outsider.id), 404);
    await expectApiError(outsider.api.orgs.getMemberInOrganizationById(org.id, admin.id), 404);
});

test('guests cannot list members', async () => {
    const body = await expectApiError(list(guest), 403, 'listMembersInOrganizationById');
    assert.equal(body.error.code, 403);
});

test('updateMemberInOrganizationById: change role, make guest, and back', async () => {
    const target = await newUser(server, 'target');
    check('inviteUsersToOrganization', await admin.api.orgs.inviteUsersToOrganization(org.id, { emails: [target.email], role: 'read' }), {
        status: 200,
    });

    let m = check(
        'updateMemberInOrganizationById',
        await admin.api.orgs.updateMemberInOrganizationById(org.id, target.id, { role: 'review' }),
        { status: 200 },
    );
    assert.equal(m.role, 'review');

    m = check(
        'updateMemberInOrganizationById',
        await admin.api.orgs.updateMemberInOrganizationById(org.id, target.id, { role: null }),
        { status: 200 },
    );
    assert.equal(m.role, null, 'role null makes a guest');
    const guests = check('listMembersInOrganizationById', await list(admin, { role: 'guest' }), { status: 200 });
    assert.ok(guests.items.some((x) => x.id === target.id));

    m = check(
        'updateMemberInOrganizationById',
        await admin.api.orgs.updateMemberInOrganizationById(org.id, target.id, { role: 'create' }),
        { status: 200 },
    );
    assert.equal(m.role, 'create');

    await expectApiError(
        admin.api.orgs.updateMemberInOrganizationById(org.id, target.id, { role: 'owner' }),
        400,
        'updateMemberInOrganizationById',
    );
    await expectApiError(
        editor.api.orgs.updateMemberInOrganizationById(org.id, target.id, { role: 'admin' }),
        403,
        'updateMemberInOrganizationById',
    );
    await expectApiError(
        admin.api.orgs.updateMemberInOrganizationById(org.id, outsider.id, { role: 'read' }),
        404,
        'updateMemberInOrganizationById',
    );
    // The last admin cannot demote themself.
    await expectApiError(
        admin.api.orgs.updateMemberInOrganizationById(org.id, admin.id, { role: 'read' }),
        400,
        'updateMemberInOrganizationById',
    );

    check('removeMemberFromOrganizationById', await admin.api.orgs.removeMemberFromOrganizationById(org.id, target.id), {
        status: 204,
    });
});

test('setUserAsSSOMemberForOrganization', async () => {
    const m = check(
        'setUserAsSSOMemberForOrganization',
        await admin.api.orgs.setUserAsSsoMemberForOrganization(org.id, commenter.id),
        { status: 200 },
    );
    assert.equal(m.id, commenter.id);
    assert.equal(m.sso, true);
    const again = check(
        'getMemberInOrganizationById',
        await admin.api.orgs.getMemberInOrganizationById(org.id, commenter.id),
        { status: 200 },
    );
    assert.equal(again.sso, true);

    await expectApiError(admin.api.orgs.setUserAsSsoMemberForOrganization(org.id, outsider.id), 404);
    await expectApiError(editor.api.orgs.setUserAsSsoMemberForOrganization(org.id, reader.id), 403);
});

test('listSpacesForOrganizationMember: empty while the organization has no spaces', async () => {
    const data = check(
        'listSpacesForOrganizationMember',
        await admin.api.orgs.listSpacesForOrganizationMember(org.id, editor.id),
        { status: 200 },
    );
    assert.deepEqual(data.items, []);
    if (data.count !== undefined) assert.equal(data.count, 0);
    await expectApiError(admin.api.orgs.listSpacesForOrganizationMember(org.id, outsider.id), 404);
});

test('listTeamsForOrganizationMember: the member’s teams with its role, title filter', async () => {
    const alpha = check(
        'createOrganizationTeam',
        await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Alpha Squad' }),
        { status: 201 },
    );
    const beta = check(
        'createOrganizationTeam',
        await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Beta Squad' }),
        { status: 201 },
    );
    check(
        'addMemberToOrganizationTeamById',
        await admin.api.orgs.addMemberToOrganizationTeamById(org.id, alpha.id, editor.id, { role: 'owner' }),
        { status: 204 },
    );
    check(
        'addMemberToOrganizationTeamById',
        await admin.api.orgs.addMemberToOrganizationTeamById(org.id, beta.id, editor.id, {}),
        { status: 204 },
    );

    const all = check(
        'listTeamsForOrganizationMember',
        await editor.api.orgs.listTeamsForOrganizationMember(org.id, editor.id),
        { status: 200 },
    );
    const byTeam = Object.fromEntries(all.items.map((i) => [i.team.id, i.member.role]));
    assert.deepEqual(byTeam, { [alpha.id]: 'owner', [beta.id]: 'member' });
    assert.equal(all.items.find((i) => i.team.id === alpha.id).team.permissions.admin, true, 'owner manages');
    assert.equal(all.items.find((i) => i.team.id === beta.id).team.permissions.admin, false);

    const filtered = check(
        'listTeamsForOrganizationMember',
        await admin.api.orgs.listTeamsForOrganizationMember(org.id, editor.id, { title: 'beta' }),
        { status: 200 },
    );
    assert.deepEqual(filtered.items.map((i) => i.team.id), [beta.id]);

    const none = check(
        'listTeamsForOrganizationMember',
        await admin.api.orgs.listTeamsForOrganizationMember(org.id, reader.id),
        { status: 200 },
    );
    assert.deepEqual(none.items, []);

    const member = check(
        'getMemberInOrganizationById',
        await admin.api.orgs.getMemberInOrganizationById(org.id, editor.id),
        { status: 200 },
    );
    assert.equal(member.teams, 2, 'the member counts its teams');

    await expectApiError(admin.api.orgs.listTeamsForOrganizationMember(org.id, outsider.id), 404);
});

test('removeMemberFromOrganizationById: 204, also when not a member; self-removal; last admin', async () => {
    const leaving = await newUser(server, 'leaving');
    const kicked = await newUser(server, 'kicked');
    check(
        'inviteUsersToOrganization',
        await admin.api.orgs.inviteUsersToOrganization(org.id, { emails: [leaving.email, kicked.email] }),
        { status: 200 },
    );

    check('removeMemberFromOrganizationById', await admin.api.orgs.removeMemberFromOrganizationById(org.id, kicked.id), {
        status: 204,
    });
    await expectApiError(admin.api.orgs.getMemberInOrganizationById(org.id, kicked.id), 404);
    await expectApiError(kicked.api.orgs.getOrganizationById(org.id), 404, 'getOrganizationById');

    // Again: no longer a member, still 204.
    check('removeMemberFromOrganizationById', await admin.api.orgs.removeMemberFromOrganizationById(org.id, kicked.id), {
        status: 204,
    });
    check(
        'removeMemberFromOrganizationById',
        await admin.api.orgs.removeMemberFromOrganizationById(org.id, outsider.id),
        { status: 204 },
    );

    // A non-admin cannot remove someone else, but can leave.
    await expectApiError(leaving.api.orgs.removeMemberFromOrganizationById(org.id, reader.id), 403);
    check(
        'removeMemberFromOrganizationById',
        await leaving.api.orgs.removeMemberFromOrganizationById(org.id, leaving.id),
        { status: 204 },
    );
    const orgs = check(
        'listOrganizationsForAuthenticatedUser',
        await leaving.api.orgs.listOrganizationsForAuthenticatedUser(),
        { status: 200 },
    );
    assert.deepEqual(orgs.items, []);

    // The last admin cannot leave.
    await expectApiError(admin.api.orgs.removeMemberFromOrganizationById(org.id, admin.id), 400);
});

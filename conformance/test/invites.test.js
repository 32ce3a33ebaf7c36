// Invitations: by e-mail (existing users join at once, unknown addresses wait for their
// user), and invite links (create, list, get, update, delete, join).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, uniqueSuffix } from '../lib/server.js';
import { client, check, expectApiError, newUser, setupOrg, createOrganization, listAll } from '../lib/client.js';

let server;
let admin;
let editor;
let outsider;
let org;
before(async () => {
    server = await startServer();
    admin = await newUser(server, 'admin');
    editor = await newUser(server, 'editor');
    outsider = await newUser(server, 'outsider');
    org = await setupOrg(server, admin, 'Invites Org', [{ user: editor, role: 'edit' }]);
});
after(async () => {
    await server?.stop();
});

const roleOf = async (userId) => {
    const m = check('getMemberInOrganizationById', await admin.api.orgs.getMemberInOrganizationById(org.id, userId), {
        status: 200,
    });
    return m.role;
};

test('inviteUsersToOrganization: an existing user joins at once, with the given role', async () => {
    const bob = await newUser(server, 'bob');
    const res = check(
        'inviteUsersToOrganization',
        await admin.api.orgs.inviteUsersToOrganization(org.id, { emails: [bob.email], role: 'review' }),
        { status: 200 },
    );
    assert.deepEqual(res.users, [bob.id]);
    assert.equal(res.invited, 1);
    assert.equal(await roleOf(bob.id), 'review');
    const orgNow = check('getOrganizationById', await bob.api.orgs.getOrganizationById(org.id), { status: 200 });
    assert.equal(orgNow.id, org.id);
});

test('inviteUsersToOrganization: per-address roles, guests, and the org default role', async () => {
    const a = await newUser(server, 'roleful');
    const g = await newUser(server, 'guestly');
    const d = await newUser(server, 'defaulted');
    const res = check(
        'inviteUsersToOrganization',
        await admin.api.orgs.inviteUsersToOrganization(org.id, {
            emails: [{ email: a.email, role: 'comment' }, { email: g.email, role: null }, d.email],
        }),
        { status: 200 },
    );
    assert.deepEqual([...res.users].sort(), [a.id, g.id, d.id].sort());
    assert.equal(res.invited, 3);
    assert.equal(await roleOf(a.id), 'comment');
    assert.equal(await roleOf(g.id), null);
    const orgNow = check('getOrganizationById', await admin.api.orgs.getOrganizationById(org.id), { status: 200 });
    assert.equal(await roleOf(d.id), orgNow.defaultRole ?? null, 'no role given: the org default role');
});

test('inviteUsersToOrganization: an unknown address waits, and joins at the first authenticated request', async () => {
    const email = `pending-${uniqueSuffix()}@conformance.test`;
    const res = check(
        'inviteUsersToOrganization',
        await admin.api.orgs.inviteUsersToOrganization(org.id, { emails: [email], role: 'create' }),
        { status: 200 },
    );
    assert.deepEqual(res.users, []);
    assert.equal(res.invited, 1);

    const before = check(
        'listMembersInOrganizationById',
        await admin.api.orgs.listMembersInOrganizationById(org.id, { search: email }),
        { status: 200 },
    );
    assert.deepEqual(before.items, [], 'not a member while pending');

    // The user is created, then authenticates for the first time.
    const token = await server.createToken(email, 'Pending Person');
    const pending = client(server, token);
    const me = check('getAuthenticatedUser', await pending.user.getAuthenticatedUser(), { status: 200 });
    const orgs = check(
        'listOrganizationsForAuthenticatedUser',
        await pending.orgs.listOrganizationsForAuthenticatedUser(),
        { status: 200 },
    );
    assert.deepEqual(orgs.items.map((o) => o.id), [org.id], 'the pending invite was honoured');
    assert.equal(await roleOf(me.id), 'create');
});

test('inviteUsersToOrganization: 400 for bad addresses, 403 for non-admins, 404 for outsiders', async () => {
    await expectApiError(
        admin.api.orgs.inviteUsersToOrganization(org.id, { emails: ['not-an-email'] }),
        400,
        'inviteUsersToOrganization',
    );
    await expectApiError(admin.api.orgs.inviteUsersToOrganization(org.id, { emails: [] }), 400);
    await expectApiError(
        admin.api.orgs.inviteUsersToOrganization(org.id, { emails: [outsider.email], role: 'owner' }),
        400,
    );
    await expectApiError(
        editor.api.orgs.inviteUsersToOrganization(org.id, { emails: [outsider.email] }),
        403,
        'inviteUsersToOrganization',
    );
    await expectApiError(outsider.api.orgs.inviteUsersToOrganization(org.id, { emails: [outsider.email] }), 404);
    await expectApiError(outsider.api.orgs.getOrganizationById(org.id), 404, 'getOrganizationById');
});

test('invite links: create, get, list, update, delete', async () => {
    const created = check(
        'createOrganizationInvite',
        await admin.api.orgs.createOrganizationInvite(org.id, { role: 'edit' }),
        { status: 201 },
    );
    assert.equal(created.object, 'invite');
    assert.equal(created.role, 'edit');
    assert.equal(typeof created.id, 'string');

    const got = check('getOrganizationInviteLink', await admin.api.orgs.getOrganizationInviteLink(org.id, created.id), {
        status: 200,
    });
    assert.equal(got.id, created.id);
    assert.equal(got.role, 'edit');

    const updated = check(
        'updateOrganizationInviteById',
        await admin.api.orgs.updateOrganizationInviteById(org.id, created.id, { role: 'read' }),
        { status: 200 },
    );
    assert.equal(updated.role, 'read');

    const guestLink = check(
        'updateOrganizationInviteById',
        await admin.api.orgs.updateOrganizationInviteById(org.id, created.id, { role: null }),
        { status: 200 },
    );
    assert.equal(guestLink.role, null);

    const second = check(
        'createOrganizationInvite',
        await admin.api.orgs.createOrganizationInvite(org.id, { role: 'comment' }),
        { status: 201 },
    );
    const listed = check('listOrganizationInviteLinks', await admin.api.orgs.listOrganizationInviteLinks(org.id), {
        status: 200,
    });
    const roles = Object.fromEntries(listed.items.map((i) => [i.id, i.role]));
    assert.equal(roles[created.id], null);
    assert.equal(roles[second.id], 'comment');

    const { items } = await listAll('listOrganizationInviteLinks', (page) =>
        admin.api.orgs.listOrganizationInviteLinks(org.id, { limit: 1, page }),
    );
    assert.deepEqual(items.map((i) => i.id), listed.items.map((i) => i.id));

    check('deleteOrganizationInviteById', await admin.api.orgs.deleteOrganizationInviteById(org.id, created.id), {
        status: 204,
    });
    await expectApiError(admin.api.orgs.getOrganizationInviteLink(org.id, created.id), 404, 'getOrganizationInviteLink');
    check('deleteOrganizationInviteById', await admin.api.orgs.deleteOrganizationInviteById(org.id, created.id), {
        status: 204,
    });
    const after = check('listOrganizationInviteLinks', await admin.api.orgs.listOrganizationInviteLinks(org.id), {
        status: 200,
    });
    assert.ok(!after.items.some((i) => i.id === created.id));
});

test('invite links: 400 for bad roles, 403 for non-admins', async () => {
    await expectApiError(admin.api.orgs.createOrganizationInvite(org.id, { role: 'owner' }), 400, 'createOrganizationInvite');
    await expectApiError(editor.api.orgs.createOrganizationInvite(org.id, { role: 'read' }), 403, 'createOrganizationInvite');
    await expectApiError(editor.api.orgs.listOrganizationInviteLinks(org.id), 403, 'listOrganizationInviteLinks');
    const link = check('createOrganizationInvite', await admin.api.orgs.createOrganizationInvite(org.id, { role: 'read' }), {
        status: 201,
    });
    await expectApiError(editor.api.orgs.getOrganizationInviteLink(org.id, link.id), 403, 'getOrganizationInviteLink');
    await expectApiError(
        editor.api.orgs.updateOrganizationInviteById(org.id, link.id, { role: 'admin' }),
        403,
        'updateOrganizationInviteById',
    );
    await expectApiError(
        admin.api.orgs.updateOrganizationInviteById(org.id, link.id, { role: 'owner' }),
        400,
        'updateOrganizationInviteById',
    );
    await expectApiError(editor.api.orgs.deleteOrganizationInviteById(org.id, link.id), 403);
    await expectApiError(
        admin.api.orgs.getOrganizationInviteLink(org.id, 'nosuchinvite0000'),
        404,
        'getOrganizationInviteLink',
    );
});

test('joinOrganizationWithInvite: a non-member joins with the link’s role', async () => {
    const link = check(
        'createOrganizationInvite',
        await admin.api.orgs.createOrganizationInvite(org.id, { role: 'comment' }),
        { status: 201 },
    );
    const joiner = await newUser(server, 'joiner');
    await expectApiError(joiner.api.orgs.getOrganizationById(org.id), 404, 'getOrganizationById');

    check('joinOrganizationWithInvite', await joiner.api.orgs.joinOrganizationWithInvite(org.id, link.id), {
        status: 200,
    });
    assert.equal(await roleOf(joiner.id), 'comment');
    check('getOrganizationById', await joiner.api.orgs.getOrganizationById(org.id), { status: 200 });

    // Joining again (already a member) succeeds and changes nothing.
    check('joinOrganizationWithInvite', await joiner.api.orgs.joinOrganizationWithInvite(org.id, link.id), {
        status: 200,
    });
    assert.equal(await roleOf(joiner.id), 'comment');

    await expectApiError(
        outsider.api.orgs.joinOrganizationWithInvite(org.id, 'nosuchinvite0000'),
        404,
        'joinOrganizationWithInvite',
    );
});

test('joinOrganizationWithInvite: refused while invite links are disabled', async () => {
    const closed = await createOrganization(server, admin.token, 'Closed Org');
    const link = check(
        'createOrganizationInvite',
        await admin.api.orgs.createOrganizationInvite(closed.id, { role: 'read' }),
        { status: 201 },
    );
    check('updateOrganizationById', await admin.api.orgs.updateOrganizationById(closed.id, { inviteLinks: false }), {
        status: 200,
    });
    const body = await expectApiError(
        outsider.api.orgs.joinOrganizationWithInvite(closed.id, link.id),
        403,
        'joinOrganizationWithInvite',
    );
    assert.equal(body.error.code, 403);
    await expectApiError(outsider.api.orgs.getOrganizationById(closed.id), 404);

    check('updateOrganizationById', await admin.api.orgs.updateOrganizationById(closed.id, { inviteLinks: true }), {
        status: 200,
    });
    check('joinOrganizationWithInvite', await outsider.api.orgs.joinOrganizationWithInvite(closed.id, link.id), {
        status: 200,
    });
    check('getOrganizationById', await outsider.api.orgs.getOrganizationById(closed.id), { status: 200 });
});

// Content permissions: explicit grants to users and teams on spaces and collections, the
// aggregate of everyone's effective role, listSpacesForOrganizationMember, and how grants
// (or their absence) decide what guests, readers and outsiders get.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg, listAll, GitBookAPIError } from '../lib/client.js';

let server;
let admin;
let editor; // `edit` member
let reader; // `read` member
let guest; // guest, granted things test by test
let teamGuest; // guest, member of `team`
let visitor; // guest, used only by the listSpacesForOrganizationMember test
let outsider;
let org;
let team;
before(async () => {
    server = await startServer();
    [admin, editor, reader, guest, teamGuest, visitor, outsider] = await Promise.all(
        ['admin', 'editor', 'reader', 'guest', 'teamguest', 'visitor', 'outsider'].map((label) =>
            newUser(server, label),
        ),
    );
    org = await setupOrg(server, admin, 'Permissions Org', [
        { user: editor, role: 'edit' },
        { user: reader, role: 'read' },
        { user: guest, role: null },
        { user: teamGuest, role: null },
        { user: visitor, role: null },
    ]);
    team = check(
        'createOrganizationTeam',
        await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Writers', members: [teamGuest.id] }),
        { status: 201 },
    );
});
after(async () => {
    await server?.stop();
});

const ROLES = ['read', 'comment', 'edit', 'review', 'create', 'admin'];
const atLeast = (role, min) => ROLES.indexOf(role) >= ROLES.indexOf(min);

async function createSpace(body = {}) {
    return check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Guarded', ...body }), {
        status: 201,
    });
}

async function createCollection(body = {}) {
    return check('createCollection', await admin.api.orgs.createCollection(org.id, { title: 'Guarded', ...body }), {
        status: 201,
    });
}

async function getSpace(who, id) {
    return check('getSpaceById', await who.api.spaces.getSpaceById(id), { status: 200 });
}

async function getCollection(who, id) {
    return check('getCollectionById', await who.api.collections.getCollectionById(id), { status: 200 });
}

/** `{userId: permission}` from listUserPermissionsIn{Space,Collection}. */
async function userGrants(kind, id) {
    const op = `listUserPermissionsIn${kind}`;
    const api = kind === 'Space' ? admin.api.spaces : admin.api.collections;
    const data = check(op, await api[op](id), { status: 200 });
    assert.equal(data.count, data.items.length, `${op}: count vs items in ${JSON.stringify(data)}`);
    for (const item of data.items) assert.equal(item.user.object, 'user');
    return Object.fromEntries(data.items.map((i) => [i.user.id, i.permission]));
}

/** `{teamId: permission}` from listTeamPermissionsIn{Space,Collection}. */
async function teamGrants(kind, id) {
    const op = `listTeamPermissionsIn${kind}`;
    const api = kind === 'Space' ? admin.api.spaces : admin.api.collections;
    const data = check(op, await api[op](id), { status: 200 });
    assert.equal(data.count, data.items.length, `${op}: count vs items in ${JSON.stringify(data)}`);
    for (const item of data.items) assert.equal(item.team.object, 'team');
    return Object.fromEntries(data.items.map((i) => [i.team.id, i.permission]));
}

/** `{userId: permission}` from listPermissionsAggregateIn{Space,Collection}, every page. */
async function aggregate(kind, id, query = {}) {
    const op = `listPermissionsAggregateIn${kind}`;
    const api = kind === 'Space' ? admin.api.spaces : admin.api.collections;
    const { items } = await listAll(op, (page) => api[op](id, { ...query, page }));
    return Object.fromEntries(items.map((i) => [i.user.id, i.permission]));
}

test('access: a guest needs a grant, a reader cannot edit, an outsider sees nothing', async () => {
    const space = await createSpace({ title: 'Access' });
    await expectApiError(guest.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');
    await expectApiError(outsider.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');
    const asReader = await getSpace(reader, space.id);
    assert.equal(asReader.permissions.view, true);
    assert.equal(asReader.permissions.comment, false);
    assert.equal(asReader.permissions.edit, false);
    assert.equal(asReader.permissions.admin, false);
    await expectApiError(reader.api.spaces.updateSpaceById(space.id, { title: 'Reader Was Here' }), 403, 'updateSpaceById');
    const asEditor = await getSpace(editor, space.id);
    assert.equal(asEditor.permissions.edit, true);
    assert.equal(asEditor.permissions.admin, false);
    assert.equal((await getSpace(admin, space.id)).title, 'Access');
});

test('inviteToSpace (users) → list, update, remove; the guest’s access follows', async () => {
    const space = await createSpace({ title: 'Granted' });
    check('inviteToSpace', await admin.api.spaces.inviteToSpace(space.id, { role: 'comment', users: [guest.id] }), {
        status: 204,
    });
    assert.deepEqual(await userGrants('Space', space.id), { [guest.id]: 'comment' });

    const seen = await getSpace(guest, space.id);
    assert.equal(seen.permissions.view, true);
    assert.equal(seen.permissions.comment, true);
    assert.equal(seen.permissions.edit, false);
    assert.equal(seen.permissions.admin, false);
    await expectApiError(guest.api.spaces.updateSpaceById(space.id, { title: 'Guest' }), 403, 'updateSpaceById');

    check(
        'updateUserPermissionInSpace',
        await admin.api.spaces.updateUserPermissionInSpace(space.id, guest.id, { role: 'edit' }),
        { status: 204 },
    );
    assert.deepEqual(await userGrants('Space', space.id), { [guest.id]: 'edit' });
    const editing = await getSpace(guest, space.id);
    assert.equal(editing.permissions.edit, true);
    assert.equal(editing.permissions.comment, true);
    assert.equal(editing.permissions.admin, false);
    const renamed = check(
        'updateSpaceById',
        await guest.api.spaces.updateSpaceById(space.id, { title: 'Edited by a guest' }),
        { status: 200 },
    );
    assert.equal(renamed.title, 'Edited by a guest');

    check('removeUserFromSpace', await admin.api.spaces.removeUserFromSpace(space.id, guest.id), { status: 204 });
    assert.deepEqual(await userGrants('Space', space.id), {});
    await expectApiError(guest.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');
    // Not granted any more: still 204.
    check('removeUserFromSpace', await admin.api.spaces.removeUserFromSpace(space.id, guest.id), { status: 204 });
});

test('permissions booleans match each granted role', async () => {
    const space = await createSpace({ title: 'Every Role' });
    check('inviteToSpace', await admin.api.spaces.inviteToSpace(space.id, { role: 'read', users: [guest.id] }), {
        status: 204,
    });
    for (const role of ROLES) {
        check(
            'updateUserPermissionInSpace',
            await admin.api.spaces.updateUserPermissionInSpace(space.id, guest.id, { role }),
            { status: 204 },
        );
        const p = (await getSpace(guest, space.id)).permissions;
        assert.equal(p.view, true, role);
        assert.equal(p.comment, atLeast(role, 'comment'), `comment for ${role}`);
        assert.equal(p.edit, atLeast(role, 'edit'), `edit for ${role}`);
        assert.equal(p.review, atLeast(role, 'review'), `review for ${role}`);
        assert.equal(p.admin, role === 'admin', `admin for ${role}`);
    }
    // Guest level on content (role null) takes the grant away.
    check(
        'updateUserPermissionInSpace',
        await admin.api.spaces.updateUserPermissionInSpace(space.id, guest.id, { role: null }),
        { status: 204 },
    );
    await expectApiError(guest.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');
    assert.deepEqual(await userGrants('Space', space.id), {});
});

test('listSpacesForOrganizationMember: a guest’s list is exactly the space granted to them', async () => {
    const space = await createSpace({ title: 'Visitor Space' });
    await createSpace({ title: 'Not For Visitors' });
    const before = check(
        'listSpacesForOrganizationMember',
        await admin.api.orgs.listSpacesForOrganizationMember(org.id, visitor.id),
        { status: 200 },
    );
    assert.deepEqual(before.items, []);

    check('inviteToSpace', await admin.api.spaces.inviteToSpace(space.id, { role: 'comment', users: [visitor.id] }), {
        status: 204,
    });
    const data = check(
        'listSpacesForOrganizationMember',
        await admin.api.orgs.listSpacesForOrganizationMember(org.id, visitor.id),
        { status: 200 },
    );
    assert.equal(data.items.length, 1);
    assert.equal(data.items[0].permission, 'comment');
    assert.equal(data.items[0].space.id, space.id);
    assert.equal(data.items[0].space.title, 'Visitor Space');
    if (data.count !== undefined) assert.equal(data.count, 1);

    // A member's list holds every space they reach, with their role on it.
    const readerList = await listAll('listSpacesForOrganizationMember', (page) =>
        admin.api.orgs.listSpacesForOrganizationMember(org.id, reader.id, { limit: 1, page }),
    );
    const readerIds = readerList.items.map((i) => i.space.id);
    assert.ok(readerIds.includes(space.id));
    assert.equal(new Set(readerIds).size, readerIds.length);
    assert.equal(readerList.items.find((i) => i.space.id === space.id).permission, 'read');

    check('removeUserFromSpace', await admin.api.spaces.removeUserFromSpace(space.id, visitor.id), { status: 204 });
    const after = check(
        'listSpacesForOrganizationMember',
        await admin.api.orgs.listSpacesForOrganizationMember(org.id, visitor.id),
        { status: 200 },
    );
    assert.deepEqual(after.items, []);
});

test('inviteToSpace (teams) → listTeamPermissionsInSpace, update, remove', async () => {
    const space = await createSpace({ title: 'Team Space' });
    await expectApiError(teamGuest.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');
    check('inviteToSpace', await admin.api.spaces.inviteToSpace(space.id, { role: 'read', teams: [team.id] }), {
        status: 204,
    });
    const listed = check('listTeamPermissionsInSpace', await admin.api.spaces.listTeamPermissionsInSpace(space.id), {
        status: 200,
    });
    assert.equal(listed.items.length, 1);
    assert.equal(listed.items[0].permission, 'read');
    assert.equal(listed.items[0].team.id, team.id);
    assert.equal(listed.items[0].team.spaces, 1, 'the team reaches one space');
    assert.deepEqual(await userGrants('Space', space.id), {}, 'team grants are not user grants');

    const seen = await getSpace(teamGuest, space.id);
    assert.equal(seen.permissions.comment, false);
    check(
        'updateTeamPermissionInSpace',
        await admin.api.spaces.updateTeamPermissionInSpace(space.id, team.id, { role: 'comment' }),
        { status: 204 },
    );
    assert.deepEqual(await teamGrants('Space', space.id), { [team.id]: 'comment' });
    const commenting = await getSpace(teamGuest, space.id);
    assert.equal(commenting.permissions.comment, true);
    assert.equal(commenting.permissions.edit, false);

    check('removeTeamFromSpace', await admin.api.spaces.removeTeamFromSpace(space.id, team.id), { status: 204 });
    assert.deepEqual(await teamGrants('Space', space.id), {});
    await expectApiError(teamGuest.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');
    check('removeTeamFromSpace', await admin.api.spaces.removeTeamFromSpace(space.id, team.id), { status: 204 });
});

test('listPermissionsAggregateInSpace: every member’s effective role, ?role= filter, pages', async () => {
    const space = await createSpace({ title: 'Aggregate' });
    check('inviteToSpace', await admin.api.spaces.inviteToSpace(space.id, { role: 'comment', users: [guest.id] }), {
        status: 204,
    });
    check('inviteToSpace', await admin.api.spaces.inviteToSpace(space.id, { role: 'edit', teams: [team.id] }), {
        status: 204,
    });
    // An explicit grant above the organization role raises it.
    check('inviteToSpace', await admin.api.spaces.inviteToSpace(space.id, { role: 'review', users: [reader.id] }), {
        status: 204,
    });
    const all = await aggregate('Space', space.id);
    assert.deepEqual(all, {
        [admin.id]: 'admin',
        [editor.id]: 'edit',
        [reader.id]: 'review',
        [guest.id]: 'comment',
        [teamGuest.id]: 'edit',
    });
    assert.equal(all[visitor.id], undefined, 'a guest without a grant is not listed');

    const edit = await aggregate('Space', space.id, { role: 'edit' });
    assert.deepEqual(edit, { [editor.id]: 'edit', [teamGuest.id]: 'edit' });
    const admins = await aggregate('Space', space.id, { role: 'admin' });
    assert.deepEqual(admins, { [admin.id]: 'admin' });

    const { items, pages } = await listAll('listPermissionsAggregateInSpace', (page) =>
        admin.api.spaces.listPermissionsAggregateInSpace(space.id, { limit: 2, page }),
    );
    assert.equal(items.length, 5);
    assert.equal(pages.length, 3);
    for (const p of pages) assert.equal(p.count, 5);
    await expectApiError(
        outsider.api.spaces.listPermissionsAggregateInSpace(space.id),
        404,
        'listPermissionsAggregateInSpace',
    );
});

test('listUserPermissionsInSpace / listTeamPermissionsInSpace: pagination', async () => {
    const space = await createSpace({ title: 'Paged Grants' });
    const second = check(
        'createOrganizationTeam',
        await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Paged Team' }),
        { status: 201 },
    );
    check(
        'inviteToSpace',
        await admin.api.spaces.inviteToSpace(space.id, { role: 'comment', users: [guest.id, visitor.id, reader.id] }),
        { status: 204 },
    );
    check(
        'inviteToSpace',
        await admin.api.spaces.inviteToSpace(space.id, { role: 'read', teams: [team.id, second.id] }),
        { status: 204 },
    );
    const users = await listAll('listUserPermissionsInSpace', (page) =>
        admin.api.spaces.listUserPermissionsInSpace(space.id, { limit: 1, page }),
    );
    assert.deepEqual(users.items.map((i) => i.user.id).sort(), [guest.id, visitor.id, reader.id].sort());
    assert.equal(users.pages.length, 3);
    for (const p of users.pages) assert.equal(p.count, 3);
    for (const i of users.items) assert.equal(i.permission, 'comment');
    const teams = await listAll('listTeamPermissionsInSpace', (page) =>
        admin.api.spaces.listTeamPermissionsInSpace(space.id, { limit: 1, page }),
    );
    assert.deepEqual(teams.items.map((i) => i.team.id).sort(), [team.id, second.id].sort());
    assert.equal(teams.pages.length, 2);
    for (const p of teams.pages) assert.equal(p.count, 2);
    // A reader may look at the grants.
    const asReader = check('listUserPermissionsInSpace', await reader.api.spaces.listUserPermissionsInSpace(space.id), {
        status: 200,
    });
    assert.equal(asReader.items.length, 3);
    check('removeTeamFromSpace', await admin.api.spaces.removeTeamFromSpace(space.id, team.id), { status: 204 });
    for (const id of [guest.id, visitor.id]) {
        check('removeUserFromSpace', await admin.api.spaces.removeUserFromSpace(space.id, id), { status: 204 });
    }
});

test('default levels: a space’s or its collection’s defaultLevel raises members, never guests', async () => {
    const space = await createSpace({ title: 'Open Door' });
    check('updateSpaceById', await admin.api.spaces.updateSpaceById(space.id, { defaultLevel: 'edit' }), { status: 200 });
    const asReader = await getSpace(reader, space.id);
    assert.equal(asReader.permissions.edit, true, 'defaultLevel edit lets a reader edit');
    assert.equal(asReader.permissions.admin, false);
    assert.equal((await aggregate('Space', space.id))[reader.id], 'edit');
    await expectApiError(guest.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');

    const collection = await createCollection({ title: 'Open Shelf' });
    const inside = await createSpace({ title: 'Open Shelf Space', parent: collection.id });
    check(
        'updateCollectionById',
        await admin.api.collections.updateCollectionById(collection.id, { defaultLevel: 'comment' }),
        { status: 200 },
    );
    const inherited = await getSpace(reader, inside.id);
    assert.equal(inherited.defaultLevel, 'inherit');
    assert.equal(inherited.permissions.comment, true, 'the space inherits its collection’s level');
    assert.equal(inherited.permissions.edit, false);
    assert.equal((await aggregate('Collection', collection.id))[reader.id], 'comment');
    await expectApiError(guest.api.spaces.getSpaceById(inside.id), 404, 'getSpaceById');
});

test('a member removed from the organization loses their content grants', async () => {
    const leaver = await newUser(server, 'leaver');
    check(
        'inviteUsersToOrganization',
        await admin.api.orgs.inviteUsersToOrganization(org.id, { emails: [{ email: leaver.email, role: null }] }),
        { status: 200 },
    );
    const space = await createSpace({ title: 'Left Behind' });
    check('inviteToSpace', await admin.api.spaces.inviteToSpace(space.id, { role: 'edit', users: [leaver.id] }), {
        status: 204,
    });
    assert.equal((await getSpace(leaver, space.id)).permissions.edit, true);

    check('removeMemberFromOrganizationById', await admin.api.orgs.removeMemberFromOrganizationById(org.id, leaver.id), {
        status: 204,
    });
    await expectApiError(leaver.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');
    const listedAfterRemoval = await userGrants('Space', space.id);

    // Invited again as a guest, they start without the old grant.
    check(
        'inviteUsersToOrganization',
        await admin.api.orgs.inviteUsersToOrganization(org.id, { emails: [{ email: leaver.email, role: null }] }),
        { status: 200 },
    );
    let statusAfterReinvite;
    try {
        statusAfterReinvite = (await leaver.api.spaces.getSpaceById(space.id)).status;
    } catch (err) {
        if (!(err instanceof GitBookAPIError)) throw err;
        statusAfterReinvite = err.code;
    }
    assert.deepEqual(
        { listedAfterRemoval, statusAfterReinvite },
        { listedAfterRemoval: {}, statusAfterReinvite: 404 },
        'the grant went with the membership',
    );
});

test('a deleted team’s grants leave the permission lists', async () => {
    const doomed = check(
        'createOrganizationTeam',
        await admin.api.orgs.createOrganizationTeam(org.id, { title: 'Doomed Team', members: [visitor.id] }),
        { status: 201 },
    );
    const space = await createSpace({ title: 'Orphaned Grant' });
    const collection = await createCollection({ title: 'Orphaned Shelf' });
    check('inviteToSpace', await admin.api.spaces.inviteToSpace(space.id, { role: 'read', teams: [doomed.id] }), {
        status: 204,
    });
    check(
        'inviteToCollection',
        await admin.api.collections.inviteToCollection(collection.id, { role: 'read', teams: [doomed.id] }),
        { status: 204 },
    );
    check('removeTeamFromOrganizationById', await admin.api.orgs.removeTeamFromOrganizationById(org.id, doomed.id), {
        status: 204,
    });
    await expectApiError(visitor.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');
    const inSpace = check('listTeamPermissionsInSpace', await admin.api.spaces.listTeamPermissionsInSpace(space.id), {
        status: 200,
    });
    const inCollection = check(
        'listTeamPermissionsInCollection',
        await admin.api.collections.listTeamPermissionsInCollection(collection.id),
        { status: 200 },
    );
    // `count` is the "Total count of objects in the list".
    assert.deepEqual(
        { inSpace, inCollection },
        { inSpace: { items: [], count: 0 }, inCollection: { items: [], count: 0 } },
    );
});

test('space permissions: 400 for bad bodies, 403 for non-admins, 404 when invisible', async () => {
    const space = await createSpace({ title: 'Strict Grants' });
    await expectApiError(admin.api.spaces.inviteToSpace(space.id, { users: [guest.id] }), 400, 'inviteToSpace');
    await expectApiError(admin.api.spaces.inviteToSpace(space.id, { role: 'read' }), 400, 'inviteToSpace');
    await expectApiError(
        admin.api.spaces.inviteToSpace(space.id, { role: 'owner', users: [guest.id] }),
        400,
        'inviteToSpace',
    );
    await expectApiError(
        editor.api.spaces.inviteToSpace(space.id, { role: 'read', users: [guest.id] }),
        403,
        'inviteToSpace',
    );
    await expectApiError(
        outsider.api.spaces.inviteToSpace(space.id, { role: 'read', users: [guest.id] }),
        404,
        'inviteToSpace',
    );
    await expectApiError(
        reader.api.spaces.updateUserPermissionInSpace(space.id, guest.id, { role: 'read' }),
        403,
        'updateUserPermissionInSpace',
    );
    await expectApiError(reader.api.spaces.removeUserFromSpace(space.id, guest.id), 403, 'removeUserFromSpace');
    await expectApiError(reader.api.spaces.removeTeamFromSpace(space.id, team.id), 403, 'removeTeamFromSpace');
    await expectApiError(
        reader.api.spaces.updateTeamPermissionInSpace(space.id, team.id, { role: 'read' }),
        403,
        'updateTeamPermissionInSpace',
    );
    await expectApiError(
        outsider.api.spaces.listUserPermissionsInSpace(space.id),
        404,
        'listUserPermissionsInSpace',
    );
    await expectApiError(
        outsider.api.spaces.listTeamPermissionsInSpace(space.id),
        404,
        'listTeamPermissionsInSpace',
    );
    await expectApiError(
        admin.api.spaces.updateUserPermissionInSpace(space.id, 'nosuchuser000000', { role: 'read' }),
        404,
        'updateUserPermissionInSpace',
    );
    await expectApiError(
        admin.api.spaces.updateTeamPermissionInSpace(space.id, 'nosuchteam000000', { role: 'read' }),
        404,
        'updateTeamPermissionInSpace',
    );
    assert.deepEqual(await userGrants('Space', space.id), {}, 'refused calls grant nothing');
    assert.deepEqual(await teamGrants('Space', space.id), {});
});

test('collections: user grants reach the collection and the spaces inside it', async () => {
    const collection = await createCollection({ title: 'Granted Shelf' });
    const inside = await createSpace({ title: 'On The Shelf', parent: collection.id });
    const outside = await createSpace({ title: 'Off The Shelf' });
    await expectApiError(guest.api.collections.getCollectionById(collection.id), 404, 'getCollectionById');

    check(
        'inviteToCollection',
        await admin.api.collections.inviteToCollection(collection.id, { role: 'comment', users: [guest.id] }),
        { status: 204 },
    );
    assert.deepEqual(await userGrants('Collection', collection.id), { [guest.id]: 'comment' });
    const seen = await getCollection(guest, collection.id);
    assert.equal(seen.permissions.view, true);
    assert.equal(seen.permissions.admin, false);
    assert.equal(seen.permissions.create, false);
    const inherited = await getSpace(guest, inside.id);
    assert.equal(inherited.permissions.comment, true);
    assert.equal(inherited.permissions.edit, false);
    const shelf = check(
        'listSpacesInCollectionById',
        await guest.api.collections.listSpacesInCollectionById(collection.id),
        { status: 200 },
    );
    assert.deepEqual(shelf.items.map((s) => s.id), [inside.id]);
    const guestList = check('listSpacesInOrganizationById', await guest.api.orgs.listSpacesInOrganizationById(org.id), {
        status: 200,
    });
    assert.ok(guestList.items.some((s) => s.id === inside.id));
    assert.ok(!guestList.items.some((s) => s.id === outside.id), 'nothing outside the granted collection');
    await expectApiError(guest.api.spaces.getSpaceById(outside.id), 404, 'getSpaceById');

    check(
        'updateUserPermissionInCollection',
        await admin.api.collections.updateUserPermissionInCollection(collection.id, guest.id, { role: 'edit' }),
        { status: 204 },
    );
    assert.deepEqual(await userGrants('Collection', collection.id), { [guest.id]: 'edit' });
    assert.equal((await getSpace(guest, inside.id)).permissions.edit, true);
    const agg = await aggregate('Collection', collection.id, { role: 'edit' });
    assert.deepEqual(agg, { [editor.id]: 'edit', [guest.id]: 'edit' });
    const all = await aggregate('Collection', collection.id);
    assert.equal(all[admin.id], 'admin');
    assert.equal(all[reader.id], 'read');
    assert.equal(all[visitor.id], undefined);
    assert.equal((await aggregate('Space', inside.id))[guest.id], 'edit', 'the space inherits the grant');

    check(
        'removeUserFromCollection',
        await admin.api.collections.removeUserFromCollection(collection.id, guest.id),
        { status: 204 },
    );
    assert.deepEqual(await userGrants('Collection', collection.id), {});
    await expectApiError(guest.api.collections.getCollectionById(collection.id), 404, 'getCollectionById');
    await expectApiError(guest.api.spaces.getSpaceById(inside.id), 404, 'getSpaceById');
    check(
        'removeUserFromCollection',
        await admin.api.collections.removeUserFromCollection(collection.id, guest.id),
        { status: 204 },
    );
});

test('collections: team grants → listTeamPermissionsInCollection, update, remove', async () => {
    const collection = await createCollection({ title: 'Team Shelf' });
    const inside = await createSpace({ title: 'Team Shelf Space', parent: collection.id });
    check(
        'inviteToCollection',
        await admin.api.collections.inviteToCollection(collection.id, { role: 'read', teams: [team.id] }),
        { status: 204 },
    );
    const listed = check(
        'listTeamPermissionsInCollection',
        await admin.api.collections.listTeamPermissionsInCollection(collection.id),
        { status: 200 },
    );
    assert.equal(listed.items.length, 1);
    assert.equal(listed.items[0].permission, 'read');
    assert.equal(listed.items[0].team.id, team.id);
    assert.equal((await getSpace(teamGuest, inside.id)).permissions.comment, false);

    check(
        'updateTeamPermissionInCollection',
        await admin.api.collections.updateTeamPermissionInCollection(collection.id, team.id, { role: 'create' }),
        { status: 204 },
    );
    assert.deepEqual(await teamGrants('Collection', collection.id), { [team.id]: 'create' });
    const creating = await getCollection(teamGuest, collection.id);
    assert.equal(creating.permissions.create, true);
    assert.equal(creating.permissions.admin, false);
    assert.equal((await getSpace(teamGuest, inside.id)).permissions.edit, true);
    assert.equal((await aggregate('Collection', collection.id))[teamGuest.id], 'create');
    const made = check(
        'createSpace',
        await teamGuest.api.orgs.createSpace(org.id, { title: 'Made By A Guest', parent: collection.id }),
        { status: 201 },
    );
    assert.equal(made.parent, collection.id);
    assert.equal(made.permissions.edit, true);
    await expectApiError(teamGuest.api.orgs.createSpace(org.id, { title: 'Not At The Root' }), 403, 'createSpace');

    check(
        'removeTeamFromCollection',
        await admin.api.collections.removeTeamFromCollection(collection.id, team.id),
        { status: 204 },
    );
    assert.deepEqual(await teamGrants('Collection', collection.id), {});
    await expectApiError(teamGuest.api.collections.getCollectionById(collection.id), 404, 'getCollectionById');
    await expectApiError(teamGuest.api.spaces.getSpaceById(inside.id), 404, 'getSpaceById');
    check(
        'removeTeamFromCollection',
        await admin.api.collections.removeTeamFromCollection(collection.id, team.id),
        { status: 204 },
    );
});

test('collection permissions: 400 / 403 / 404', async () => {
    const collection = await createCollection({ title: 'Strict Shelf' });
    await expectApiError(admin.api.collections.inviteToCollection(collection.id, { role: 'read' }), 400, 'inviteToCollection');
    await expectApiError(
        admin.api.collections.inviteToCollection(collection.id, { users: [guest.id] }),
        400,
        'inviteToCollection',
    );
    await expectApiError(
        reader.api.collections.inviteToCollection(collection.id, { role: 'read', users: [guest.id] }),
        403,
        'inviteToCollection',
    );
    await expectApiError(
        outsider.api.collections.inviteToCollection(collection.id, { role: 'read', users: [guest.id] }),
        404,
        'inviteToCollection',
    );
    await expectApiError(
        reader.api.collections.updateUserPermissionInCollection(collection.id, guest.id, { role: 'read' }),
        403,
        'updateUserPermissionInCollection',
    );
    await expectApiError(
        reader.api.collections.updateTeamPermissionInCollection(collection.id, team.id, { role: 'read' }),
        403,
        'updateTeamPermissionInCollection',
    );
    await expectApiError(
        reader.api.collections.removeUserFromCollection(collection.id, guest.id),
        403,
        'removeUserFromCollection',
    );
    await expectApiError(
        reader.api.collections.removeTeamFromCollection(collection.id, team.id),
        403,
        'removeTeamFromCollection',
    );
    await expectApiError(
        admin.api.collections.updateUserPermissionInCollection(collection.id, 'nosuchuser000000', { role: 'read' }),
        404,
        'updateUserPermissionInCollection',
    );
    await expectApiError(
        admin.api.collections.updateTeamPermissionInCollection(collection.id, 'nosuchteam000000', { role: 'read' }),
        404,
        'updateTeamPermissionInCollection',
    );
    await expectApiError(
        outsider.api.collections.listUserPermissionsInCollection(collection.id),
        404,
        'listUserPermissionsInCollection',
    );
    await expectApiError(
        outsider.api.collections.listTeamPermissionsInCollection(collection.id),
        404,
        'listTeamPermissionsInCollection',
    );
    await expectApiError(
        outsider.api.collections.listPermissionsAggregateInCollection(collection.id),
        404,
        'listPermissionsAggregateInCollection',
    );
    assert.deepEqual(await userGrants('Collection', collection.id), {}, 'refused calls grant nothing');
    assert.deepEqual(await teamGrants('Collection', collection.id), {});
});

test('inviteToSpace / inviteToCollection: 404 for user and team ids that do not exist', async () => {
    // Both operations declare `404: No team or user with the provided Id`.
    const space = await createSpace({ title: 'Ghost Grants' });
    const collection = await createCollection({ title: 'Ghost Shelf' });
    const statusOf = async (promise) => {
        try {
            const res = await promise;
            return res.status;
        } catch (err) {
            if (!(err instanceof GitBookAPIError)) throw err; // e.g. a SchemaViolation
            return err.code;
        }
    };
    const got = {
        'inviteToSpace users': await statusOf(
            admin.api.spaces.inviteToSpace(space.id, { role: 'read', users: ['nosuchuser000000'] }),
        ),
        'inviteToSpace teams': await statusOf(
            admin.api.spaces.inviteToSpace(space.id, { role: 'read', teams: ['nosuchteam000000'] }),
        ),
        'inviteToCollection users': await statusOf(
            admin.api.collections.inviteToCollection(collection.id, { role: 'read', users: ['nosuchuser000000'] }),
        ),
        'inviteToCollection teams': await statusOf(
            admin.api.collections.inviteToCollection(collection.id, { role: 'read', teams: ['nosuchteam000000'] }),
        ),
    };
    assert.deepEqual(got, {
        'inviteToSpace users': 404,
        'inviteToSpace teams': 404,
        'inviteToCollection users': 404,
        'inviteToCollection teams': 404,
    });
    assert.deepEqual(await userGrants('Space', space.id), {});
    assert.deepEqual(await teamGrants('Collection', collection.id), {});
});

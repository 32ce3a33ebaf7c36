// listChangeRequestsForOrganization (GET /v1/orgs/{organizationId}/change-requests, 0.202.0
// only), called through the 0.202.0 client: every answer validated against the 0.202.0
// schema; what members, guests and outsiders see; filters; sorting; paging.

import { test, before, after } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, client202, expectApiError, newUser, setupOrg, spec202 } from '../lib/client.js';
import { createChangeRequest } from '../lib/content.js';

const OP = 'listChangeRequestsForOrganization';

let server;
let admin;
let editor;
let guest;
let outsider;
let org;
let spaceA;
let spaceB;
const crs = {};

before(async () => {
    server = await startServer();
    admin = await newUser(server, 'admin');
    editor = await newUser(server, 'editor');
    guest = await newUser(server, 'guest');
    outsider = await newUser(server, 'outsider');
    for (const who of [admin, editor, guest, outsider]) who.api202 = client202(server, who.token);
    org = await setupOrg(server, admin, 'Org Change Requests', [
        { user: editor, role: 'edit' },
        { user: guest, role: null },
    ]);
    const space = async (title) =>
        check('createSpace', await admin.api.orgs.createSpace(org.id, { title }), { status: 201 });
    spaceA = await space('A');
    spaceB = await space('B');
    check('inviteToSpace', await admin.api.spaces.inviteToSpace(spaceA.id, { role: 'read', users: [guest.id] }), {
        status: 204,
    });
    // The outsider's own organization, with a change request that must never show.
    const theirs = await setupOrg(server, outsider, 'Elsewhere');
    const theirSpace = check('createSpace', await outsider.api.orgs.createSpace(theirs.id, { title: 'T' }), {
        status: 201,
    });
    await createChangeRequest(outsider, theirSpace.id, 'theirs');

    // A few milliseconds apart, so that the sort orders below are not ties.
    crs.a1 = await createChangeRequest(admin, spaceA.id, 'a1');
    await delay(5);
    crs.a2 = await createChangeRequest(editor, spaceA.id, 'a2');
    await delay(5);
    crs.b1 = await createChangeRequest(editor, spaceB.id, 'b1');
    await delay(5);
    check(
        'updateChangeRequestById',
        await editor.api.spaces.updateChangeRequestById(spaceA.id, crs.a2.id, { status: 'draft' }),
        { status: 200 },
    );
});
after(async () => {
    await server?.stop();
});

async function list(who, query) {
    return check(OP, await who.api202.orgs.listChangeRequestsForOrganization(org.id, query), {
        spec: spec202,
        status: 200,
    });
}

const subjects = (data) => data.items.map((c) => c.subject).sort();

test('open change requests of every space a member reads, in the official shape', async () => {
    const data = await list(admin);
    assert.deepEqual(subjects(data), ['a1', 'b1']);
    assert.equal(data.count, 2);
    for (const cr of data.items) {
        assert.equal(cr.object, 'change-request');
        assert.equal(cr.status, 'open');
    }
    assert.deepEqual(subjects(await list(editor)), ['a1', 'b1']);
});

test('a guest sees only the spaces granted to them; an outsider gets 404', async () => {
    const data = await list(guest, { status: ['open', 'draft'] });
    assert.deepEqual(subjects(data), ['a1', 'a2']);
    assert.ok(data.items.every((c) => c.space === spaceA.id));
    assert.equal((await list(guest, { space: spaceB.id })).count, 0);
    await expectApiError(outsider.api202.orgs.listChangeRequestsForOrganization(org.id), 404, OP);
    const anonymous = client202(server);
    await expectApiError(anonymous.orgs.listChangeRequestsForOrganization(org.id), 401, OP);
});

test('status (an array), creator, contributor, space and orderBy', async () => {
    assert.deepEqual(subjects(await list(admin, { status: ['draft'] })), ['a2']);
    assert.deepEqual(subjects(await list(admin, { status: ['open', 'draft'] })), ['a1', 'a2', 'b1']);
    assert.deepEqual(subjects(await list(admin, { status: ['merged', 'archived'] })), []);
    assert.deepEqual(subjects(await list(admin, { creator: editor.id, status: ['open', 'draft'] })), ['a2', 'b1']);
    assert.deepEqual(subjects(await list(admin, { contributor: outsider.id })), []);
    assert.deepEqual(subjects(await list(admin, { space: spaceB.id })), ['b1']);
    const byCreation = await list(admin, { orderBy: 'createdAt', status: ['open', 'draft'] });
    assert.deepEqual(
        byCreation.items.map((c) => c.subject),
        ['b1', 'a2', 'a1'],
    );
    // a2 was updated (drafted) after b1 was opened.
    const byUpdate = await list(admin, { orderBy: 'updatedAt', status: ['open', 'draft'] });
    assert.deepEqual(
        byUpdate.items.map((c) => c.subject),
        ['a2', 'b1', 'a1'],
    );
    assert.equal((await list(admin, { requestedReviewer: editor.id })).count, 0);
    assert.deepEqual(subjects(await list(admin, { finding: 'all' })), ['a1', 'b1']);
    await expectApiError(admin.api202.orgs.listChangeRequestsForOrganization(org.id, { orderBy: 'title' }), 400, OP);
    await expectApiError(admin.api202.orgs.listChangeRequestsForOrganization(org.id, { status: ['closed'] }), 400, OP);
});

test('limit=1 pages walk every change request once', async () => {
    const seen = [];
    let page;
    let pages = 0;
    do {
        const data = await list(admin, { limit: 1, page, status: ['open', 'draft'] });
        assert.equal(data.count, 3);
        assert.ok(data.items.length <= 1);
        seen.push(...data.items.map((c) => c.subject));
        page = data.next?.page;
        pages += 1;
    } while (page && pages < 10);
    assert.equal(pages, 3);
    assert.deepEqual(seen, ['a2', 'b1', 'a1']);
});

// Merging that must not happen: conflicting change requests (409, nothing changes) and
// locked spaces (403).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';
import {
    updateContent,
    getSpace,
    counters,
    createChangeRequest,
    getChangeRequest,
} from '../lib/content.js';

let server;
let admin;
let org;
before(async () => {
    server = await startServer();
    admin = await newUser(server, 'admin');
    org = await setupOrg(server, admin, 'Merge Org');
});
after(async () => {
    await server?.stop();
});

async function createSpace(title) {
    return check('createSpace', await admin.api.orgs.createSpace(org.id, { title }), { status: 201 });
}

/** A change request with `changes` applied, merged at once; returns the created page ids. */
async function mergeNow(space, subject, changes) {
    const cr = await createChangeRequest(admin, space.id, subject);
    const body = await updateContent(server, admin, space.id, cr.id, changes, { compat: false });
    const res = check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
    assert.equal(res.result, 'merge');
    return body.changes.map((c) => c.page.id);
}

async function markdownOf(spaceId, crId, pageId) {
    const res = crId
        ? await admin.api.spaces.getPageInChangeRequestById(spaceId, crId, pageId, { format: 'markdown' })
        : await admin.api.spaces.getPageById(spaceId, pageId, { format: 'markdown' });
    return check(crId ? 'getPageInChangeRequestById' : 'getPageById', res, { status: 200 }).markdown;
}

test('mergeChangeRequest: two change requests on the same line → the second one is a 409', async () => {
    const space = await createSpace('Conflicts');
    const [shared] = await mergeNow(space, 'Shared page', [
        { operation: 'insert_page', title: 'Shared', document: { markdown: 'Line one.\n\nLine two.\n' } },
    ]);

    const first = await createChangeRequest(admin, space.id, 'First edit');
    const second = await createChangeRequest(admin, space.id, 'Second edit');
    await updateContent(server, admin, space.id, first.id, [
        { operation: 'update_page', page: shared, document: { markdown: 'Line one, first.\n\nLine two.\n' } },
    ]);
    const secondCr = await updateContent(server, admin, space.id, second.id, [
        { operation: 'update_page', page: shared, document: { markdown: 'Line one, second.\n\nLine two.\n' } },
    ]);
    const merged = check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, first.id), {
        status: 200,
    });
    assert.equal(merged.result, 'merge');
    const before = await getSpace(admin, space.id);
    assert.equal(before.revision, merged.revision);
    assert.equal((await getChangeRequest(admin, space.id, second.id)).outdated, true);

    const body = await expectApiError(admin.api.spaces.mergeChangeRequest(space.id, second.id), 409, 'mergeChangeRequest');
    assert.deepEqual(Object.keys(body), ['error']);
    assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message']);
    assert.ok(body.error.message.length > 0);

    const after = await getSpace(admin, space.id);
    assert.equal(after.revision, before.revision, 'a conflicting merge leaves the space revision as it was');
    assert.equal(await markdownOf(space.id, null, shared), 'Line one, first.\n\nLine two.\n');
    const still = await getChangeRequest(admin, space.id, second.id);
    assert.equal(still.status, 'open');
    assert.equal(still.revision, secondCr.revision);
    assert.equal(still.revisionMerged, undefined);
    assert.deepEqual(await counters(admin, space.id), {
        changeRequests: 3,
        changeRequestsOpen: 1,
        changeRequestsDraft: 0,
    });

    // Bringing main into it conflicts the same way, and changes nothing either.
    await expectApiError(admin.api.spaces.updateChangeRequest(space.id, second.id), 409, 'updateChangeRequest');
    assert.equal((await getChangeRequest(admin, space.id, second.id)).revision, secondCr.revision);
    assert.equal(await markdownOf(space.id, second.id, shared), 'Line one, second.\n\nLine two.\n');
});

test('mergeChangeRequest: different pages merge cleanly', async () => {
    const space = await createSpace('No Conflicts');
    const [a, b, gamma] = await mergeNow(space, 'Three pages', [
        { operation: 'insert_page', title: 'Alpha', document: { markdown: 'Alpha.\n' } },
        { operation: 'insert_page', title: 'Beta', document: { markdown: 'Beta.\n' } },
        { operation: 'insert_page', title: 'Gamma', document: { markdown: 'Gamma.\n' } },
    ]);
    const one = await createChangeRequest(admin, space.id, 'Alpha edit');
    const two = await createChangeRequest(admin, space.id, 'Beta edit');
    await updateContent(server, admin, space.id, one.id, [
        { operation: 'update_page', page: a, document: { markdown: 'Alpha, edited.\n' } },
    ]);
    const body = await updateContent(
        server,
        admin,
        space.id,
        two.id,
        [
            { operation: 'update_page', page: b, document: { markdown: 'Beta, edited.\n' } },
            { operation: 'delete_page', page: gamma },
        ],
        { compat: false },
    );
    assert.deepEqual(body.changes, [
        {
            object: 'updated_page',
            page: {
                object: 'page',
                id: b,
                urls: { location: `${server.url}/v1/spaces/${space.id}/change-requests/${two.id}/content/page/${b}` },
            },
        },
        { object: 'deleted_page', page: gamma },
    ]);
    assert.deepEqual(body.insertedFiles ?? [], []);
    for (const cr of [one, two]) {
        const res = check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), {
            status: 200,
        });
        assert.equal(res.result, 'merge');
        assert.equal((await getSpace(admin, space.id)).revision, res.revision);
    }
    assert.equal(await markdownOf(space.id, null, a), 'Alpha, edited.\n');
    assert.equal(await markdownOf(space.id, null, b), 'Beta, edited.\n');
    await expectApiError(admin.api.spaces.getPageById(space.id, gamma), 404, 'getPageById');
});

test('mergeChangeRequest: a locked space refuses with 403', async () => {
    const space = await createSpace('Locked');
    const cr = await createChangeRequest(admin, space.id, 'Blocked');
    const body = await updateContent(
        server,
        admin,
        space.id,
        cr.id,
        [{ operation: 'insert_page', title: 'Waiting', document: { markdown: 'Waiting.\n' } }],
        { compat: false },
    );
    const waiting = body.changes[0].page.id;
    const locked = check('updateSpaceById', await admin.api.spaces.updateSpaceById(space.id, { editMode: 'locked' }), {
        status: 200,
    });
    assert.equal(locked.editMode, 'locked');

    await expectApiError(admin.api.spaces.mergeChangeRequest(space.id, cr.id), 403, 'mergeChangeRequest');
    const after = await getSpace(admin, space.id);
    assert.equal(after.revision, space.revision, 'nothing merged');
    const still = await getChangeRequest(admin, space.id, cr.id);
    assert.equal(still.status, 'open');
    assert.equal(still.revisionMerged, undefined);
    await expectApiError(admin.api.spaces.getPageById(space.id, waiting), 404, 'getPageById');

    // Unlocked again, the same change request merges.
    check('updateSpaceById', await admin.api.spaces.updateSpaceById(space.id, { editMode: 'live' }), { status: 200 });
    const res = check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
    assert.equal(res.result, 'merge');
    assert.equal(await markdownOf(space.id, null, waiting), 'Waiting.\n');
});

// getContentByUrl: the app URLs (`urls.app`) the API hands out, resolved through the
// official client, every answer checked against the spec.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';
import { createChangeRequest, updateContent } from '../lib/content.js';

let server;
let admin;
let outsider;
let org;
before(async () => {
    server = await startServer();
    [admin, outsider] = await Promise.all(['admin', 'outsider'].map((l) => newUser(server, l)));
    org = await setupOrg(server, admin, 'URLs Org');
});
after(async () => {
    await server?.stop();
});

test('getContentByUrl: a collection, a space, a change request', async () => {
    const coll = check('createCollection', await admin.api.orgs.createCollection(org.id, { title: 'Guides' }), {
        status: 201,
    });
    const space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Handbook' }), {
        status: 201,
    });
    const cr = await createChangeRequest(admin, space.id, 'Edit');

    const c = check('getContentByUrl', await admin.api.urls.getContentByUrl({ url: coll.urls.app }), { status: 200 });
    assert.equal(c.collection.id, coll.id);
    const s = check('getContentByUrl', await admin.api.urls.getContentByUrl({ url: space.urls.app }), { status: 200 });
    assert.equal(s.space.id, space.id);
    assert.equal(s.changeRequest, undefined);
    const r = check('getContentByUrl', await admin.api.urls.getContentByUrl({ url: cr.urls.app }), { status: 200 });
    assert.equal(r.space.id, space.id);
    assert.equal(r.changeRequest.id, cr.id);
    await expectApiError(outsider.api.urls.getContentByUrl({ url: space.urls.app }), 404, 'getContentByUrl');
    await expectApiError(admin.api.urls.getContentByUrl({ url: 'https://elsewhere.example/s/x' }), 404, 'getContentByUrl');
});

test('getContentByUrl: a page', async () => {
    const space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Pages' }), { status: 201 });
    const cr = await createChangeRequest(admin, space.id, 'Write');
    await updateContent(server, admin, space.id, cr.id, [
        { operation: 'insert_page', title: 'Setup', document: { markdown: 'Install it.' } },
    ]);
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
    const rev = check('getCurrentRevision', await admin.api.spaces.getCurrentRevision(space.id), { status: 200 });
    const [page] = rev.pages;
    const got = check('getContentByUrl', await admin.api.urls.getContentByUrl({ url: page.urls.app }), { status: 200 });
    assert.equal(got.space.id, space.id);
    assert.equal(got.page.id, page.id);
    assert.equal(got.page.document.object, 'document');
});

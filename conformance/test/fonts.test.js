// Uploads and custom fonts through the official client, every answer checked against the
// spec: an upload URL, the bytes sent to it, a font made of them, a site using the font, and
// the refusals the spec declares (412 without a regular weight or a finished upload).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';
import { createChangeRequest, updateContent } from '../lib/content.js';

let server;
let admin;
let reader;
let org;
let space;
before(async () => {
    server = await startServer();
    [admin, reader] = await Promise.all(['admin', 'reader'].map((label) => newUser(server, label)));
    org = await setupOrg(server, admin, 'Fonts Org', [{ user: reader, role: 'read' }]);
    space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Guide' }), { status: 201 });
    const cr = await createChangeRequest(admin, space.id, 'Write');
    await updateContent(server, admin, space.id, cr.id, [
        { operation: 'insert_page', title: 'Intro', document: { markdown: 'Welcome.' } },
    ]);
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
});
after(async () => {
    await server?.stop();
});

/** Bytes that pass for a WOFF2 file: its magic, then anything. */
function woff2(size) {
    const bytes = new Uint8Array(size).fill(7);
    bytes.set(new TextEncoder().encode('wOF2'));
    return bytes;
}

/** An upload URL for `bytes`, the bytes sent to it: the storage key. */
async function upload(bytes) {
    const made = check(
        'generateStorageUploadURL',
        await admin.api.orgs.generateStorageUploadUrl(org.id, {
            file: { name: 'Brand.woff2', type: 'font/woff2', size: bytes.length },
            kind: 'customization_font',
        }),
        { status: 201 },
    );
    assert.equal(made.object, 'storage-signed-url');
    const put = await fetch(made.url, { method: 'PUT', headers: { 'Content-Type': 'font/woff2' }, body: bytes });
    assert.equal(put.status, 200, await put.text());
    return made.key;
}

test('a font made of uploaded files is served and used by a published site', async () => {
    const bytes = woff2(2048);
    const key = await upload(bytes);
    const font = check(
        'createCustomFont',
        await admin.api.orgs.createCustomFont(org.id, {
            fontFamily: 'Brand Sans',
            fontFaces: [{ weight: 400, storageKey: key }],
        }),
        { status: 201 },
    );
    assert.equal(font.custom, true);
    assert.equal(font.permissions.edit, true);
    const source = font.fontFaces[0].sources[0];
    assert.equal(source.format, 'woff2');
    const file = await fetch(source.url);
    assert.equal(file.status, 200);
    assert.equal(file.headers.get('content-type'), 'font/woff2');
    assert.deepEqual(new Uint8Array(await file.arrayBuffer()), bytes);

    const listed = check('listCustomFonts', await reader.api.orgs.listCustomFonts(org.id), { status: 200 });
    assert.ok(listed.items.some((f) => f.id === font.id));
    const seen = check('getCustomFont', await reader.api.orgs.getCustomFont(org.id, font.id), { status: 200 });
    assert.equal(seen.permissions.edit, false);

    // A published site whose customization names the font declares it and serves its file.
    const site = check('createSite', await admin.api.orgs.createSite(org.id, { title: 'Docs', spaces: [space.id] }), {
        status: 201,
    });
    const { permissions: _, ...definition } = font;
    check(
        'updateSiteCustomizationById',
        await admin.api.orgs.updateSiteCustomizationById(org.id, site.id, { styling: { font: definition } }),
        { status: 200 },
    );
    check('publishSite', await admin.api.orgs.publishSite(org.id, site.id), { status: 200 });
    const page = await (await fetch(`${server.url}/sites/${site.id}/`)).text();
    const theme = [...page.matchAll(/<link rel="stylesheet" href="([^"]+)"/g)].map((m) => m[1])[1];
    const css = await (await fetch(`${server.url}${theme.replaceAll('&amp;', '&')}`)).text();
    assert.match(css, /@font-face/);
    const src = css.match(/url\("([^"]+)"\)/)[1];
    assert.ok(src.startsWith(`/sites/${site.id}/~fonts/`), src);
    const served = await fetch(`${server.url}${src}`);
    assert.equal(served.status, 200);
    assert.deepEqual(new Uint8Array(await served.arrayBuffer()), bytes);

    // Renamed, a weight added then removed; deleted, then gone.
    const bold = await upload(woff2(1024));
    const updated = check(
        'updateCustomFont',
        await admin.api.orgs.updateCustomFont(org.id, font.id, {
            fontFamily: 'Brand Serif',
            fontFaces: [{ weight: 700, storageKey: bold }],
        }),
        { status: 201 },
    );
    assert.deepEqual(
        updated.fontFaces.map((f) => f.weight),
        [400, 700],
    );
    const removed = check(
        'updateCustomFont',
        await admin.api.orgs.updateCustomFont(org.id, font.id, { fontFaces: [{ weight: 700, storageKey: null }] }),
        { status: 201 },
    );
    assert.deepEqual(
        removed.fontFaces.map((f) => f.weight),
        [400],
    );
    check('deleteCustomFont', await admin.api.orgs.deleteCustomFont(org.id, font.id), { status: 205 });
    check('deleteCustomFont', await admin.api.orgs.deleteCustomFont(org.id, font.id), { status: 204 });
    await expectApiError(admin.api.orgs.getCustomFont(org.id, font.id), 404, 'getCustomFont');
});

test('fonts need a regular weight and finished uploads; upload URLs take their bytes once', async () => {
    const bold = await upload(woff2(512));
    await expectApiError(
        admin.api.orgs.createCustomFont(org.id, { fontFamily: 'F', fontFaces: [{ weight: 700, storageKey: bold }] }),
        412,
        'createCustomFont',
    );
    await expectApiError(
        admin.api.orgs.createCustomFont(org.id, {
            fontFamily: 'F',
            fontFaces: [{ weight: 400, storageKey: `fonts/${org.id}/nothing` }],
        }),
        412,
        'createCustomFont',
    );
    await expectApiError(
        admin.api.orgs.generateStorageUploadUrl(org.id, {
            file: { name: 'a.ttf', type: 'font/ttf', size: 10 },
            kind: 'customization_font',
        }),
        400,
        'generateStorageUploadURL',
    );

    const made = check(
        'generateStorageUploadURL',
        await admin.api.orgs.generateStorageUploadUrl(org.id, {
            file: { name: 'a.woff2', type: 'font/woff2', size: 8 },
            kind: 'customization_font',
        }),
        { status: 201 },
    );
    const forged = made.url.replace(/signature=[^&]+/, 'signature=AAAAAAAAAAAAAAAAAAAAAA');
    assert.equal((await fetch(forged, { method: 'PUT', body: woff2(8) })).status, 403);
    assert.equal((await fetch(made.url, { method: 'PUT', body: woff2(9) })).status, 413);
    assert.equal((await fetch(made.url, { method: 'PUT', body: new Uint8Array(8) })).status, 400);
    assert.equal((await fetch(made.url, { method: 'PUT', body: woff2(8) })).status, 200);
    assert.equal((await fetch(made.url, { method: 'PUT', body: woff2(8) })).status, 409);
});

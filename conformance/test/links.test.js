// Links and backlinks, templates and PDF export through the official client, every response
// validated against the official schemas: the eight link operations (space and change
// request), applyTemplateToSpace (201, and 400 for an unknown template), and both PDF
// operations, whose URL serves a PDF without a token.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';
import { updateContent, createChangeRequest } from '../lib/content.js';

const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

let server;
let admin;
let reader;
let org;
let space;
let cr;
const page = {};
let file;

before(async () => {
    server = await startServer();
    [admin, reader] = await Promise.all(['admin', 'reader'].map((label) => newUser(server, label)));
    org = await setupOrg(server, admin, 'Links Org', [{ user: reader, role: 'read' }]);
    space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Linked docs' }), { status: 201 });
    const first = await createChangeRequest(admin, space.id, 'Content');
    const files = await updateContent(server, admin, space.id, first.id, [
        { operation: 'insert_files', files: [{ base64: PIXEL, name: 'pixel.png' }] },
    ], { compat: false });
    file = files.insertedFiles[0].id;
    const res = await updateContent(server, admin, space.id, first.id, [
        {
            operation: 'insert_page',
            ref: 'home',
            title: 'Home',
            document: {
                markdown: `## Start\n\nSee [the guide](/pages/guide), [gone](/pages/missing), [a section](/pages/guide#usage) and [the web](https://example.com).\n\n![pixel](/files/${file})\n`,
            },
        },
        { operation: 'insert_page', ref: 'guide', title: 'Guide', document: { markdown: '## Usage\n\nBack [home](/pages/home).\n' } },
    ], { compat: false });
    page.home = res.changes[0].page.id;
    page.guide = res.changes[1].page.id;
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, first.id), { status: 200 });
    cr = await createChangeRequest(admin, space.id, 'Remove the guide');
    await updateContent(server, admin, space.id, cr.id, [{ operation: 'delete_page', page: page.guide }], { compat: false });
});
after(async () => {
    await server?.stop();
});

test('listSpaceLinks: statuses, stats and the status filter', async () => {
    const all = check('listSpaceLinks', await reader.api.spaces.listSpaceLinks(space.id), { status: 200 });
    assert.equal(all.count, 6);
    assert.deepEqual(all.stats, { total: 6, broken: { total: 1 } });
    const broken = check('listSpaceLinks', await reader.api.spaces.listSpaceLinks(space.id, { status: 'broken' }), { status: 200 });
    assert.equal(broken.items.length, 1);
    assert.equal(broken.items[0].locationReferences[0].page.id, page.home);
    const file_ = all.items.find((i) => i.targetReference?.kind === 'file');
    assert.equal(file_.relation, 'dependsOn');
    await expectApiError(reader.api.spaces.listSpaceLinks(space.id, { status: 'nope' }), 400, 'listSpaceLinks');
});

test('listChangeRequestLinks: links the change request broke', async () => {
    const res = check('listChangeRequestLinks', await reader.api.spaces.listChangeRequestLinks(space.id, cr.id), { status: 200 });
    assert.deepEqual(res.stats, { total: 5, broken: { total: 3, changeRequest: 2 } });
    const introduced = check(
        'listChangeRequestLinks',
        await reader.api.spaces.listChangeRequestLinks(space.id, cr.id, { status: 'broken', brokenContext: 'change-request' }),
        { status: 200 },
    );
    assert.equal(introduced.items.length, 2);
});

test('listPageLinksInSpace and listPageLinksInChangeRequest', async () => {
    const res = check('listPageLinksInSpace', await reader.api.spaces.listPageLinksInSpace(space.id, page.guide), { status: 200 });
    assert.equal(res.items.length, 1);
    assert.equal(res.items[0].targetReference.page.id, page.home);
    const inCr = check(
        'listPageLinksInChangeRequest',
        await reader.api.spaces.listPageLinksInChangeRequest(space.id, cr.id, page.home),
        { status: 200 },
    );
    assert.equal(inCr.stats.broken.total, 3);
    await expectApiError(reader.api.spaces.listPageLinksInSpace(space.id, 'nope'), 404, 'listPageLinksInSpace');
});

test('listSpacePageBacklinks and listChangeRequestPageBacklinks', async () => {
    const res = check('listSpacePageBacklinks', await reader.api.spaces.listSpacePageBacklinks(space.id, page.home), { status: 200 });
    assert.deepEqual(res.items.map((l) => l.page.id), [page.guide]);
    assert.equal(res.items[0].kind, 'page');
    const inCr = check(
        'listChangeRequestPageBacklinks',
        await reader.api.spaces.listChangeRequestPageBacklinks(space.id, cr.id, page.home),
        { status: 200 },
    );
    assert.equal(inCr.items.length, 0);
});

test('listSpaceFileBacklinks and listChangeRequestFileBacklinks', async () => {
    const res = check('listSpaceFileBacklinks', await reader.api.spaces.listSpaceFileBacklinks(space.id, file), { status: 200 });
    assert.deepEqual(res.items.map((l) => l.page.id), [page.home]);
    const inCr = check(
        'listChangeRequestFileBacklinks',
        await reader.api.spaces.listChangeRequestFileBacklinks(space.id, cr.id, file),
        { status: 200 },
    );
    assert.equal(inCr.items.length, 1);
    await expectApiError(reader.api.spaces.listSpaceFileBacklinks(space.id, 'nope'), 404, 'listSpaceFileBacklinks');
});

test('applyTemplateToSpace: 201 and a new revision; unknown ids 400; readers 403', async () => {
    const fresh = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'From a template' }), { status: 201 });
    await expectApiError(admin.api.spaces.applyTemplateToSpace(fresh.id, { id: 'no-such-template' }), 400, 'applyTemplateToSpace');
    await expectApiError(reader.api.spaces.applyTemplateToSpace(fresh.id, { id: 'knowledge-base' }), 403, 'applyTemplateToSpace');
    check('applyTemplateToSpace', await admin.api.spaces.applyTemplateToSpace(fresh.id, { id: 'knowledge-base' }), { status: 201 });
    const pages = check('listPages', await admin.api.spaces.listPages(fresh.id), { status: 200 });
    assert.deepEqual(pages.pages.map((p) => p.title), ['Help center', 'Getting started', 'Troubleshooting']);
});

test('getSpacePdf and getChangeRequestPdf: a signed URL serving a PDF without a token', async () => {
    const res = check('getSpacePDF', await reader.api.spaces.getSpacePdf(space.id), { status: 200 });
    const got = await fetch(res.url);
    assert.equal(got.status, 200);
    assert.equal(got.headers.get('content-type'), 'application/pdf');
    const bytes = Buffer.from(await got.arrayBuffer());
    assert.equal(bytes.subarray(0, 5).toString(), '%PDF-');
    const one = check('getSpacePDF', await reader.api.spaces.getSpacePdf(space.id, { only: true, page: page.guide }), { status: 200 });
    assert.notEqual(one.url.split('?')[0], res.url.split('?')[0]);
    const inCr = check('getChangeRequestPDF', await reader.api.spaces.getChangeRequestPdf(space.id, cr.id), { status: 200 });
    assert.equal((await fetch(inCr.url)).status, 200);
    const tampered = res.url.replace('signature=', 'signature=A');
    assert.equal((await fetch(tampered)).status, 403);
});

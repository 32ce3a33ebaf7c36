// Content imports: the four operations through the official client, every answer validated
// against the official schemas (200 for the space and change-request forms, as the service
// description states; 201 for the page forms, as the spec does), from sources served on
// loopback: a markdown file, an HTML page and a Word document made by pandoc.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';
import { createChangeRequest, getChangeRequest } from '../lib/content.js';

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = join(here, '../../crates/quire-server/tests/fixtures/imports');

let sources;
let base;
let server;
let admin;
let reader;
let org;
let space;

function startSources(docx, png) {
    return new Promise((resolve) => {
        const srv = createServer((req, res) => {
            const send = (type, body) => {
                res.setHeader('content-type', type);
                res.end(body);
            };
            switch (req.url) {
                case '/intro.md':
                    return send('text/markdown', '# Introduction\n\nHello. ![logo](logo.png) [Next](next.md)\n');
                case '/logo.png':
                    return send('image/png', png);
                case '/page.html':
                    return send(
                        'text/html',
                        '<html><body><main><h1>From HTML</h1><p>A <b>bold</b> claim.</p><ul><li>a</li><li>b</li></ul></main></body></html>',
                    );
                case '/guide.docx':
                    return send('application/vnd.openxmlformats-officedocument.wordprocessingml.document', docx);
                default:
                    res.statusCode = 404;
                    return res.end('missing');
            }
        });
        srv.listen(0, '127.0.0.1', () => resolve(srv));
    });
}

before(async () => {
    const [docx, png] = await Promise.all([readFile(join(fixtures, 'guide.docx')), readFile(join(fixtures, 'red.png'))]);
    sources = await startSources(docx, png);
    base = `http://127.0.0.1:${sources.address().port}`;
    process.env.QUIRE_FETCH_ALLOW = '127.0.0.1/32';
    server = await startServer();
    delete process.env.QUIRE_FETCH_ALLOW;
    [admin, reader] = await Promise.all(['admin', 'reader'].map((l) => newUser(server, l)));
    org = await setupOrg(server, admin, 'Imports Org', [{ user: reader, role: 'read' }]);
    space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Imported' }), { status: 201 });
});

after(async () => {
    await server?.stop();
    sources?.close();
});

test('importContent: a markdown file lands as a new revision of the space, with its image as a file', async () => {
    const before = check('getCurrentRevision', await admin.api.spaces.getCurrentRevision(space.id), { status: 200 });
    const res = await admin.api.spaces.importContent(space.id, { url: `${base}/intro.md`, source: 'markdown' });
    const result = check('importContent', res, { status: 200 });
    assert.equal(result.importedResources, 2);
    assert.equal(result.totalResources, 2);
    assert.notEqual(result.revision, before.id);
    const now = check('getCurrentRevision', await admin.api.spaces.getCurrentRevision(space.id), { status: 200 });
    assert.equal(now.id, result.revision);
    assert.deepEqual(
        now.pages.map((p) => p.title),
        ['Introduction'],
    );
    assert.equal(now.files.length, 1);
    assert.equal(now.files[0].contentType, 'image/png');
});

test('importContentInChangeRequest: a Word document made by pandoc moves only the change request', async () => {
    const cr = await createChangeRequest(admin, space.id, 'Import a document');
    const spaceBefore = check('getCurrentRevision', await admin.api.spaces.getCurrentRevision(space.id), { status: 200 });
    const res = await admin.api.spaces.importContentInChangeRequest(space.id, cr.id, {
        url: `${base}/guide.docx`,
        source: 'docx',
    });
    const result = check('importContentInChangeRequest', res, { status: 200 });
    assert.equal(result.importedResources, 2);
    const after = await getChangeRequest(admin, space.id, cr.id);
    assert.equal(after.revision, result.revision);
    const spaceAfter = check('getCurrentRevision', await admin.api.spaces.getCurrentRevision(space.id), { status: 200 });
    assert.equal(spaceAfter.id, spaceBefore.id);
    const pages = check(
        'listPagesInChangeRequest',
        await admin.api.spaces.listPagesInChangeRequest(space.id, cr.id),
        { status: 200 },
    ).pages;
    const guide = pages.find((p) => p.title === 'Field Guide');
    assert.ok(guide, JSON.stringify(pages.map((p) => p.title)));
    const page = check(
        'getPageInChangeRequestById',
        await admin.api.spaces.getPageInChangeRequestById(space.id, cr.id, guide.id, { format: 'markdown' }),
        { status: 200 },
    );
    assert.match(page.markdown, /## Overview/);
    assert.match(page.markdown, /\| alpha/);
    assert.match(page.markdown, /def hello\(\):/);
});

test('importContentInPageById and importContentInChangeRequestPageById answer 201', async () => {
    const listed = check('listPages', await admin.api.spaces.listPages(space.id), { status: 200 }).pages;
    const target = listed[0];
    const res = await admin.api.spaces.importContentInPageById(space.id, target.id, {
        url: `${base}/page.html`,
        source: 'html',
    });
    const result = check('importContentInPageById', res, { status: 201 });
    assert.equal(result.importedResources, 1);
    const page = check(
        'getPageById',
        await admin.api.spaces.getPageById(space.id, target.id, { format: 'markdown' }),
        { status: 200 },
    );
    assert.match(page.markdown, /\*\*bold\*\*/);
    const cr = await createChangeRequest(admin, space.id, 'Into a page');
    const res2 = await admin.api.spaces.importContentInChangeRequestPageById(space.id, cr.id, target.id, {
        url: `${base}/intro.md`,
        source: 'markdown',
    });
    check('importContentInChangeRequestPageById', res2, { status: 201 });
});

test('bad sources are 400 with the official error body, and readers are refused', async () => {
    for (const [body, words] of [
        [{ url: `${base}/nothing.md`, source: 'markdown' }, /could not be fetched/],
        [{ url: `${base}/intro.md`, source: 'pdf' }, /`source` must be one of/],
        [{ url: 'file:///etc/passwd', source: 'markdown' }, /absolute http\(s\) URL/],
        [{ url: 'http://169.254.169.254/latest', source: 'html' }, /could not be fetched/],
    ]) {
        const err = await expectApiError(admin.api.spaces.importContent(space.id, body), 400, 'importContent');
        assert.match(err.error.message, words);
    }
    await expectApiError(
        reader.api.spaces.importContent(space.id, { url: `${base}/intro.md`, source: 'markdown' }),
        403,
        'importContent',
    );
});

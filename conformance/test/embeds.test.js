// Link previews: getEmbedByUrl and getEmbedByUrlInSpace of a page served on loopback
// (allowed by --fetch-allow), every answer checked against the spec.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';

let server;
let pages;
let base;
let admin;
let outsider;
let space;
before(async () => {
    pages = createServer((req, res) => {
        if (req.url === '/guide') {
            res.writeHead(200, { 'content-type': 'text/html' });
            res.end('<title>Walrus guide</title><meta property="og:site_name" content="Walrus Docs"><link rel="icon" href="/i.png">');
        } else {
            res.writeHead(404).end();
        }
    });
    await new Promise((ok) => pages.listen(0, '127.0.0.1', ok));
    base = `http://127.0.0.1:${pages.address().port}`;
    server = await startServer({ args: ['--fetch-allow', '127.0.0.1/32'] });
    [admin, outsider] = await Promise.all(['admin', 'outsider'].map((l) => newUser(server, l)));
    const org = await setupOrg(server, admin, 'Embeds Org');
    space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Guide' }), { status: 201 });
});
after(async () => {
    await server?.stop();
    pages?.close();
});

test('getEmbedByUrl and getEmbedByUrlInSpace preview a page as a link', async () => {
    const url = `${base}/guide`;
    const embed = check('getEmbedByUrl', await admin.api.urls.getEmbedByUrl({ url }), { status: 200 });
    assert.deepEqual(embed, { type: 'link', title: 'Walrus guide', site: 'Walrus Docs', icon: `${base}/i.png` });
    const inSpace = check('getEmbedByUrlInSpace', await admin.api.spaces.getEmbedByUrlInSpace(space.id, { url }), {
        status: 200,
    });
    assert.deepEqual(inSpace, embed);
    const missing = check('getEmbedByUrl', await admin.api.urls.getEmbedByUrl({ url: `${base}/gone` }), { status: 200 });
    assert.equal(missing.title, `${base}/gone`);
    await expectApiError(outsider.api.spaces.getEmbedByUrlInSpace(space.id, { url }), 404, 'getEmbedByUrlInSpace');
    await expectApiError(admin.api.urls.getEmbedByUrl({ url: 'ftp://example.com/' }), 400, 'getEmbedByUrl');
});

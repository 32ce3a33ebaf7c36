// The MCP server of published sites (`<site space URL>/~gitbook/mcp`), driven by the official
// MCP TypeScript SDK's client over streamable HTTP: the tools list, search, the page index
// and page reads, under the same audience rules as the sites' HTML (public, share link,
// visitor token), and a site space that is not published.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServer } from '../lib/server.js';
import { check, newUser, raw, setupOrg } from '../lib/client.js';
import { updateContent } from '../lib/content.js';

let server;
let admin;
let org;
const site = {}; // public, shared, authed: { id, url }
let shareUrl;
let visitorKey;

function sign(key, claims) {
    const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
    return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
}

/** The MCP endpoint under a site space's published URL (with its query, if any). */
function endpoint(siteUrl, query = '') {
    const base = siteUrl.endsWith('/') ? siteUrl : `${siteUrl}/`;
    return new URL(`~gitbook/mcp${query}`, base);
}

/** An MCP client connected to `url` through the official SDK. */
async function connect(url) {
    const client = new Client({ name: 'quire-conformance', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url));
    return client;
}

/** The text of a tool's answer. */
function text(result) {
    return result.content.map((c) => c.text).join('\n');
}

async function publishedSite(title, spaceId, visibility) {
    const s = check('createSite', await admin.api.orgs.createSite(org.id, { title, spaces: [spaceId], visibility }), {
        status: 201,
    });
    const published = check('publishSite', await admin.api.orgs.publishSite(org.id, s.id), { status: 200 });
    return { id: s.id, url: published.urls.published };
}

before(async () => {
    server = await startServer();
    admin = await newUser(server, 'admin');
    org = await setupOrg(server, admin, 'MCP Org');
    const space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Handbook' }), { status: 201 });
    const cr = check('createChangeRequest', await admin.api.spaces.createChangeRequest(space.id, { subject: 'Write' }), {
        status: 201,
    });
    await updateContent(
        server,
        admin,
        space.id,
        cr.id,
        [
            { operation: 'insert_page', ref: 'guide', title: 'Guide', description: 'Where to start', document: { markdown: 'Start with the guide.\n' } },
            {
                operation: 'insert_page',
                into: 'guide',
                title: 'Install',
                document: { markdown: 'Install Quire next to the walrus.\n\n## Requirements\n\nA computer.\n' },
            },
            { operation: 'insert_page', title: 'Secret', hidden: true, document: { markdown: 'The walrus hides here.\n' } },
        ],
        { compat: false },
    );
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });

    site.public = await publishedSite('Handbook', space.id, 'public');
    site.shared = await publishedSite('Partners', space.id, 'share-link');
    const link = await raw(server, 'POST', `/v1/orgs/${org.id}/sites/${site.shared.id}/share-links`, {
        token: admin.token,
        body: { name: 'Partners' },
    });
    assert.equal(link.status, 201, JSON.stringify(link.body));
    shareUrl = link.body.urls.published;
    site.authed = await publishedSite('Members', space.id, 'visitor-auth');
    visitorKey = check(
        'getSitePublishingAuthById',
        await admin.api.orgs.getSitePublishingAuthById(org.id, site.authed.id),
        { status: 200 },
    ).privateKey;
});

after(async () => {
    await server?.stop();
});

test('a public site lists its tools, searches and reads its pages', async () => {
    const client = await connect(endpoint(site.public.url));
    try {
        assert.match(client.getInstructions() ?? '', /Handbook/);
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name).sort(), ['list_pages', 'read_page', 'search']);
        for (const tool of tools) {
            assert.equal(tool.inputSchema.type, 'object', tool.name);
            assert.ok(tool.description, tool.name);
        }

        const found = await client.callTool({ name: 'search', arguments: { query: 'walrus' } });
        assert.notEqual(found.isError, true, text(found));
        assert.match(text(found), /## Install/);
        assert.ok(text(found).includes(`URL: ${new URL('guide/install', site.public.url).href}`), text(found));
        // The hidden page stays out of search, as on the site.
        assert.doesNotMatch(text(found), /Secret/);

        const index = await client.callTool({ name: 'list_pages', arguments: {} });
        assert.match(text(index), /\[Guide\]\(.*guide\.md\): Where to start/);
        assert.match(text(index), /\[Install\]/);
        assert.doesNotMatch(text(index), /Secret/);

        const page = await client.callTool({ name: 'read_page', arguments: { path: 'guide/install' } });
        assert.notEqual(page.isError, true, text(page));
        assert.match(text(page), /^# Install/);
        assert.match(text(page), /next to the walrus/);
        // A page's URL reads the same page.
        const byUrl = await client.callTool({
            name: 'read_page',
            arguments: { path: new URL('guide/install.md', site.public.url).href },
        });
        assert.equal(text(byUrl), text(page));

        const missing = await client.callTool({ name: 'read_page', arguments: { path: 'nowhere' } });
        assert.equal(missing.isError, true);
        assert.match(text(missing), /No readable page at `nowhere`/);
        const empty = await client.callTool({ name: 'search', arguments: { query: '  ' } });
        assert.equal(empty.isError, true);
        assert.match(text(empty), /`query` is empty/);
    } finally {
        await client.close();
    }
});

test('a share-link site answers agents only with an active key', async () => {
    await assert.rejects(connect(endpoint(site.shared.url)), /404|Not Found/i);
    const client = await connect(endpoint(shareUrl));
    try {
        const page = await client.callTool({ name: 'read_page', arguments: { path: 'guide' } });
        assert.match(text(page), /Start with the guide/);
    } finally {
        await client.close();
    }
});

test('a visitor-auth site answers agents with a valid visitor token only', async () => {
    await assert.rejects(connect(endpoint(site.authed.url)), /404|Not Found/i);
    const forged = sign('not the key', { exp: Math.floor(Date.now() / 1000) + 600 });
    await assert.rejects(connect(endpoint(site.authed.url, `?jwt_token=${forged}`)), /404|Not Found/i);
    const token = sign(visitorKey, { exp: Math.floor(Date.now() / 1000) + 600 });
    const client = await connect(endpoint(site.authed.url, `?jwt_token=${token}`));
    try {
        const found = await client.callTool({ name: 'search', arguments: { query: 'walrus' } });
        assert.match(text(found), /## Install/);
    } finally {
        await client.close();
    }
});

test('the endpoint takes POSTs, and nothing unpublished answers', async () => {
    const get = await fetch(endpoint(site.public.url));
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    check('unpublishSite', await admin.api.orgs.unpublishSite(org.id, site.public.id), { status: 200 });
    await assert.rejects(connect(endpoint(site.public.url)), /404|Not Found/i);
});

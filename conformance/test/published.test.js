// The renderer path: resolvePublishedContentByUrl turns a published URL into the content it
// shows and a short-lived token; with that token the official client reads the published
// site, the space, the revision (with metadata) and page documents, and nothing else.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, client, client202, expectApiError, newUser, setupOrg, spec202 } from '../lib/client.js';
import { updateContent, createChangeRequest } from '../lib/content.js';

let server;
let admin;
let org;
let space;
let other;
let site;
before(async () => {
    server = await startServer();
    admin = await newUser(server, 'admin');
    org = await setupOrg(server, admin, 'Published Org');
    const create = async (title) =>
        check('createSpace', await admin.api.orgs.createSpace(org.id, { title }), { status: 201 });
    space = await create('Handbook');
    other = await create('Private notes');
    const cr = await createChangeRequest(admin, space.id, 'Pages');
    await updateContent(server, admin, space.id, cr.id, [
        {
            operation: 'insert_page',
            title: 'Install',
            document: {
                markdown:
                    '# Install\n\n{% hint style="warning" %}\nBack up first.\n{% endhint %}\n\n```bash\nquire serve\n```\n',
            },
        },
    ]);
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
    site = check('createSite', await admin.api.orgs.createSite(org.id, { title: 'Handbook', spaces: [space.id] }), {
        status: 201,
    });
    check('publishSite', await admin.api.orgs.publishSite(org.id, site.id), { status: 200 });
});
after(async () => {
    await server?.stop();
});

test('a published URL resolves to its content and a scoped token', async () => {
    const url = `${server.url}/sites/${site.id}/install`;
    const found = check('resolvePublishedContentByUrl', await admin.api.urls.resolvePublishedContentByUrl({ url }), {
        status: 200,
    });
    assert.equal(found.site, site.id);
    assert.equal(found.space, space.id);
    assert.equal(found.organization, org.id);
    assert.equal(found.pathname, 'install');
    assert.equal(typeof found.apiToken, 'string');

    const renderer = client(server, found.apiToken);
    const published = check('getPublishedContentSite', await renderer.orgs.getPublishedContentSite(org.id, site.id), {
        status: 200,
    });
    assert.equal(published.site.id, site.id);
    const seen = check('getSpaceById', await renderer.spaces.getSpaceById(space.id), { status: 200 });
    assert.equal(seen.id, space.id);
    const revision = check(
        'getRevisionById',
        await renderer.spaces.getRevisionById(space.id, found.revision, { metadata: true }),
        { status: 200 },
    );
    const page = revision.pages.find((p) => p.title === 'Install');
    assert.ok(page, 'the merged page is in the published revision');
    const document = check(
        'getPageDocumentInRevisionById',
        await renderer.spaces.getPageDocumentInRevisionById(space.id, found.revision, page.id),
        { status: 200 },
    );
    assert.equal(document.object, 'document');
    const types = JSON.stringify(document);
    assert.ok(types.includes('"hint"') && types.includes('"code"'), types);

    // Nothing else answers to that token.
    await expectApiError(renderer.spaces.getSpaceById(other.id), 403, 'getSpaceById');
    await expectApiError(renderer.orgs.getOrganizationById(org.id), 403, 'getOrganizationById');
    await expectApiError(renderer.orgs.listSiteSpaces(org.id, site.id), 403, 'listSiteSpaces');
    await expectApiError(renderer.spaces.listPages(space.id), 403, 'listPages');
});

test('unpublished sites and unknown URLs resolve nothing', async () => {
    await expectApiError(
        admin.api.urls.resolvePublishedContentByUrl({ url: `${server.url}/sites/nosuchsite/` }),
        404,
        'resolvePublishedContentByUrl',
    );
    await expectApiError(
        admin.api.urls.resolvePublishedContentByUrl({ url: 'https://elsewhere.example.com/docs' }),
        404,
        'resolvePublishedContentByUrl',
    );
    const draft = check('createSite', await admin.api.orgs.createSite(org.id, { title: 'Draft', spaces: [space.id] }), {
        status: 201,
    });
    await expectApiError(
        admin.api.urls.resolvePublishedContentByUrl({ url: `${server.url}/sites/${draft.id}/` }),
        404,
        'resolvePublishedContentByUrl',
    );
});

test("the renderer's visitor (0.202.0 shape) gets a short token that reads only what it may see", async () => {
    const cr = await createChangeRequest(admin, space.id, 'Adaptive');
    await updateContent(server, admin, space.id, cr.id, [
        {
            operation: 'insert_page',
            title: 'Plans',
            document: { markdown: 'For all.\n\n{% if visitor.claims.unsigned.pro %}\nThe okapi plan.\n{% endif %}\n' },
        },
        {
            operation: 'insert_page',
            title: 'Pro corner',
            condition: 'visitor.claims.unsigned.pro === true',
            document: { markdown: 'Only for pros.' },
        },
    ], { compat: false });
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
    const url = `${server.url}/sites/${site.id}/plans`;
    const renderer202 = client202(server, admin.token);
    const read = async (visitor) => {
        const found = check(
            'resolvePublishedContentByUrl',
            await renderer202.urls.resolvePublishedContentByUrl({ url, visitor }),
            { spec: spec202, status: 200 },
        );
        // A JWT short enough for a file name (GitBook's renderer caches under it).
        assert.ok(found.apiToken.length < 150, found.apiToken);
        assert.equal(found.apiToken.split('.').length, 3);
        const exp = JSON.parse(Buffer.from(found.apiToken.split('.')[1], 'base64url').toString()).exp;
        assert.ok(exp * 1000 > Date.now(), `exp ${exp}`);
        const renderer = client(server, found.apiToken);
        const revision = check(
            'getRevisionById',
            await renderer.spaces.getRevisionById(space.id, found.revision, { metadata: true }),
            { status: 200 },
        );
        const plans = revision.pages.find((p) => p.title === 'Plans');
        const document = check(
            'getPageDocumentInRevisionById',
            await renderer.spaces.getPageDocumentInRevisionById(space.id, found.revision, plans.id),
            { status: 200 },
        );
        return { revision: JSON.stringify(revision), document: JSON.stringify(document) };
    };
    const agent = await read({ type: 'agent' });
    assert.ok(!agent.document.includes('okapi') && !agent.revision.includes('okapi'), agent.document);
    assert.ok(!agent.revision.includes('Pro corner'), agent.revision);
    const pro = await read({ type: 'human', unsignedClaims: { pro: true } });
    assert.ok(pro.document.includes('okapi') && pro.revision.includes('Pro corner'), pro.document);
    assert.ok(!pro.document.includes('"if"'), pro.document);
});

test('an admin previews the published site before it is published', async () => {
    const draft = check('createSite', await admin.api.orgs.createSite(org.id, { title: 'Preview', spaces: [space.id] }), {
        status: 201,
    });
    const preview = check('getPublishedContentSite', await admin.api.orgs.getPublishedContentSite(org.id, draft.id), {
        status: 200,
    });
    assert.equal(preview.site.id, draft.id);
});

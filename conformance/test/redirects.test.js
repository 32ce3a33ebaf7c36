// Site redirects (createSiteRedirect, listSiteRedirects, updateSiteRedirectById,
// deleteSiteRedirectById, getSiteRedirectBySource), a published site following one, and the
// people and changes of content (getContributorsByChangeRequestId, listCommentersInSpace,
// listCommentersInChangeRequest, getRevisionSemanticChanges), through the official client,
// every answer validated against the official schema.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, listAll, newUser, setupOrg } from '../lib/client.js';
import { createChangeRequest, updateContent } from '../lib/content.js';

let server;
let admin;
let editor;
let reader;
let org;

before(async () => {
    server = await startServer();
    [admin, editor, reader] = await Promise.all(['admin', 'editor', 'reader'].map((l) => newUser(server, l)));
    org = await setupOrg(server, admin, 'Redirects Org', [
        { user: editor, role: 'edit' },
        { user: reader, role: 'read' },
    ]);
});
after(async () => {
    await server?.stop();
});

/** A space whose merged content holds the pages Intro and Usage; returns it and the merge. */
async function guide() {
    const space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Guide' }), {
        status: 201,
    });
    const cr = await createChangeRequest(admin, space.id, 'Write');
    await updateContent(server, admin, space.id, cr.id, [
        { operation: 'insert_page', title: 'Intro', document: { markdown: 'Welcome.' } },
        { operation: 'insert_page', title: 'Usage', document: { markdown: 'Use it.' } },
    ]);
    const merged = check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), {
        status: 200,
    });
    return { space, cr, merged };
}

test('site redirects: created, listed, resolved, followed by the published site, changed, deleted', async () => {
    const { space } = await guide();
    const usage = check('getPageByPath', await admin.api.spaces.getPageByPath(space.id, 'usage'), { status: 200 });
    const site = check('createSite', await admin.api.orgs.createSite(org.id, { title: 'Docs', spaces: [space.id] }), {
        status: 201,
    });
    const [siteSpace] = check('listSiteSpaces', await admin.api.orgs.listSiteSpaces(org.id, site.id), {
        status: 200,
    }).items;
    const toUsage = { kind: 'site-page', siteSpaceId: siteSpace.id, pageId: usage.id };
    const o = (who) => who.api.orgs;

    const made = check(
        'createSiteRedirect',
        await o(admin).createSiteRedirect(org.id, site.id, { source: '/old/usage', destination: toUsage }),
        { status: 201 },
    );
    assert.equal(made.source, '/old/usage');
    assert.deepEqual(made.destination, toUsage);
    const dup = await expectApiError(
        o(admin).createSiteRedirect(org.id, site.id, { source: '/old/usage', destination: toUsage }),
        409,
        'createSiteRedirect',
    );
    assert.match(dup.error.message, /source/);
    const bad = await expectApiError(
        o(admin).createSiteRedirect(org.id, site.id, {
            source: '/elsewhere',
            destination: { kind: 'site-space', siteSpaceId: 'nosuchsitespace0' },
        }),
        400,
        'createSiteRedirect',
    );
    assert.match(bad.error.message, /destination\.siteSpaceId/);
    await expectApiError(
        o(reader).createSiteRedirect(org.id, site.id, { source: '/x', destination: toUsage }),
        403,
        'createSiteRedirect',
    );
    check(
        'createSiteRedirect',
        await o(admin).createSiteRedirect(org.id, site.id, {
            source: '/start',
            destination: { kind: 'site-space', siteSpaceId: siteSpace.id },
        }),
        { status: 201 },
    );

    const { items, pages } = await listAll('listSiteRedirects', (page) =>
        o(reader).listSiteRedirects(org.id, site.id, { page, limit: 1 }),
    );
    assert.deepEqual(
        items.map((r) => r.source),
        ['/old/usage', '/start'],
    );
    assert.equal(pages[0].count, 2);

    const found = check(
        'getSiteRedirectBySource',
        await o(reader).getSiteRedirectBySource(org.id, site.id, { source: '/old/usage' }),
        { status: 200 },
    );
    assert.equal(found.redirect.id, made.id);
    assert.ok(found.target.endsWith(`/sites/${site.id}/usage`), found.target);
    await expectApiError(
        o(reader).getSiteRedirectBySource(org.id, site.id, { source: '/nothing' }),
        404,
        'getSiteRedirectBySource',
    );

    // The published site answers the old address with a redirect to the page.
    check('publishSite', await o(admin).publishSite(org.id, site.id), { status: 200 });
    const visit = (path) => fetch(`${server.url}/sites/${site.id}${path}`, { redirect: 'manual' });
    const moved = await visit('/old/usage');
    assert.equal(moved.status, 301);
    assert.equal(moved.headers.get('location'), found.target);
    const page = await fetch(moved.headers.get('location'));
    assert.equal(page.status, 200);
    assert.equal((await visit('/old/other')).status, 404);

    const changed = check(
        'updateSiteRedirectById',
        await o(admin).updateSiteRedirectById(org.id, site.id, made.id, { source: '/older' }),
        { status: 200 },
    );
    assert.equal(changed.source, '/older');
    assert.deepEqual(changed.destination, toUsage);
    assert.equal((await visit('/older')).status, 301);
    assert.equal((await visit('/old/usage')).status, 404);
    await expectApiError(
        o(reader).updateSiteRedirectById(org.id, site.id, made.id, { source: '/x' }),
        403,
        'updateSiteRedirectById',
    );

    const gone = await o(admin).deleteSiteRedirectById(org.id, site.id, made.id);
    check('deleteSiteRedirectById', gone, { status: 205 });
    const again = await o(admin).deleteSiteRedirectById(org.id, site.id, made.id);
    check('deleteSiteRedirectById', again, { status: 204 });
    assert.equal((await visit('/older')).status, 404);
});

test('people of content: contributors of a change request, commenters of a space and of a change request', async () => {
    const space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'People' }), {
        status: 201,
    });
    const cr = await createChangeRequest(admin, space.id, 'Write');
    await updateContent(server, editor, space.id, cr.id, [{ operation: 'insert_page', title: 'One', document: { markdown: 'Text.' } }]);
    await updateContent(server, editor, space.id, cr.id, [{ operation: 'insert_page', title: 'Two', document: { markdown: 'Text.' } }]);
    await updateContent(server, admin, space.id, cr.id, [{ operation: 'insert_page', title: 'Three', document: { markdown: 'Text.' } }]);
    const s = (who) => who.api.spaces;

    const contributors = check(
        'getContributorsByChangeRequestId',
        await s(reader).getContributorsByChangeRequestId(space.id, cr.id),
        { status: 200 },
    );
    const counts = Object.fromEntries(contributors.items.map((c) => [c.user.id, c.count]));
    assert.deepEqual(counts, { [editor.id]: 2, [admin.id]: 1 });
    await expectApiError(
        s(reader).getContributorsByChangeRequestId(space.id, 'nosuchcr00000000'),
        404,
        'getContributorsByChangeRequestId',
    );

    check('postCommentInSpace', await s(editor).postCommentInSpace(space.id, { body: { markdown: 'Hi' } }), {
        status: 200,
    });
    check(
        'postCommentInChangeRequest',
        await s(admin).postCommentInChangeRequest(space.id, cr.id, { body: { markdown: 'On the change' } }),
        { status: 200 },
    );
    const inSpace = check('listCommentersInSpace', await s(reader).listCommentersInSpace(space.id), { status: 200 });
    assert.deepEqual(
        inSpace.items.map((m) => m.user.id),
        [editor.id],
    );
    const inCr = check(
        'listCommentersInChangeRequest',
        await s(reader).listCommentersInChangeRequest(space.id, cr.id),
        { status: 200 },
    );
    assert.deepEqual(
        inCr.items.map((m) => m.user.id),
        [admin.id],
    );
});

test('getRevisionSemanticChanges: a merge revision shows its pages added and its change request', async () => {
    const { space, cr, merged } = await guide();
    const changes = check(
        'getRevisionSemanticChanges',
        await reader.api.spaces.getRevisionSemanticChanges(space.id, merged.revision),
        { status: 200 },
    );
    assert.deepEqual(
        changes.changes.map((c) => c.type),
        ['page_created', 'page_created'],
    );
    assert.equal(changes.mergedFrom.id, cr.id);
    const limited = check(
        'getRevisionSemanticChanges',
        await reader.api.spaces.getRevisionSemanticChanges(space.id, merged.revision, { limit: 1 }),
        { status: 200 },
    );
    assert.equal(limited.changes.length, 1);
    assert.equal(limited.more, 1);
    await expectApiError(
        reader.api.spaces.getRevisionSemanticChanges(space.id, 'nosuchrevision00'),
        404,
        'getRevisionSemanticChanges',
    );
});

// Docs sites: sites, publishing, site spaces, sections, section groups, moves and the
// structure, share links, customization, the adaptive schema, the published site, and who
// may do what (organization admins change sites, every member reads them).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { client, check, expectApiError, newUser, setupOrg, listAll } from '../lib/client.js';
import { updateContent, createChangeRequest } from '../lib/content.js';

let server;
let admin; // admin of `org`
let creator; // `create` member of `org`
let reader; // `read` member of `org`
let guest; // guest of `org` (no grants)
let outsider;
let anonymous; // the client without a token
let org;
before(async () => {
    server = await startServer();
    [admin, creator, reader, guest, outsider] = await Promise.all(
        ['admin', 'creator', 'reader', 'guest', 'outsider'].map((label) => newUser(server, label)),
    );
    org = await setupOrg(server, admin, 'Sites Org', [
        { user: creator, role: 'create' },
        { user: reader, role: 'read' },
        { user: guest, role: null },
    ]);
    anonymous = { api: client(server) };
});
after(async () => {
    await server?.stop();
});

const NO_SUCH_SITE = 'nosuchsite000000';
/** A custom hostname of this run alone: a hostname belongs to one site on the whole server. */
const HOST = `docs-${Date.now().toString(36)}.example.com`;
const NO_SUCH_SPACE = 'nosuchspace00000';
const NO_SUCH_ITEM = 'nosuchitem000000';

/** A schema of described boolean claims, as the official `SiteAdaptiveJSONSchema` has them. */
const DESCRIBED_SCHEMA = {
    type: 'object',
    properties: {
        isBeta: { type: 'boolean', description: 'Beta tester' },
        unsigned: {
            type: 'object',
            description: 'Unsigned claims of the site visitor.',
            properties: { plan: { type: 'boolean', description: 'Paying plan' } },
            additionalProperties: false,
        },
    },
    additionalProperties: false,
};

async function createSpace(title) {
    return check('createSpace', await admin.api.orgs.createSpace(org.id, { title }), { status: 201 });
}

async function createSite(who, body) {
    const res = await who.api.orgs.createSite(org.id, body);
    const site = check('createSite', res, { status: 201 });
    assert.equal(res.headers.get('location'), site.urls.location, 'createSite 201 declares a Location header');
    return site;
}

async function getSite(who, siteId) {
    return check('getSiteById', await who.api.orgs.getSiteById(org.id, siteId), { status: 200 });
}

async function updateSite(siteId, body) {
    return check('updateSiteById', await admin.api.orgs.updateSiteById(org.id, siteId, body), { status: 200 });
}

async function structureOf(siteId, query, who = admin) {
    return check('getSiteStructure', await who.api.orgs.getSiteStructure(org.id, siteId, query), { status: 200 });
}

async function siteSpaces(siteId, query = {}, who = admin) {
    const { items, pages } = await listAll('listSiteSpaces', (page) =>
        who.api.orgs.listSiteSpaces(org.id, siteId, { ...query, page }),
    );
    for (const p of pages) assert.equal(p.count, items.length);
    return items;
}

async function sections(siteId, query = {}, who = admin) {
    const { items } = await listAll('listSiteSections', (page) =>
        who.api.orgs.listSiteSections(org.id, siteId, { ...query, page }),
    );
    return items;
}

async function groups(siteId, who = admin) {
    const { items } = await listAll('listSiteSectionGroups', (page) =>
        who.api.orgs.listSiteSectionGroups(org.id, siteId, { page }),
    );
    return items;
}

async function addSpace(siteId, body) {
    const res = await admin.api.orgs.addSpaceToSite(org.id, siteId, body);
    const ss = check('addSpaceToSite', res, { status: 201 });
    assert.equal(res.headers.get('location'), `${server.url}/v1/orgs/${org.id}/sites/${siteId}/site-spaces/${ss.id}`);
    return ss;
}

async function addSection(siteId, body) {
    const res = await admin.api.orgs.addSectionToSite(org.id, siteId, body);
    const section = check('addSectionToSite', res, { status: 201 });
    assert.equal(res.headers.get('location'), `${server.url}/v1/orgs/${org.id}/sites/${siteId}/sections/${section.id}`);
    return section;
}

async function addGroup(siteId, body) {
    const res = await admin.api.orgs.addSectionGroupToSite(org.id, siteId, body);
    const group = check('addSectionGroupToSite', res, { status: 201 });
    assert.equal(
        res.headers.get('location'),
        `${server.url}/v1/orgs/${org.id}/sites/${siteId}/section-groups/${group.id}`,
    );
    return group;
}

async function createShareLink(siteId, name) {
    const res = await admin.api.orgs.createSiteShareLink(org.id, siteId, { name });
    const link = check('createSiteShareLink', res, { status: 201 });
    assert.equal(
        res.headers.get('location'),
        `${server.url}/v1/orgs/${org.id}/sites/${siteId}/share-links/${link.id}`,
    );
    return link;
}

async function publish(siteId, who = admin) {
    return check('publishSite', await who.api.orgs.publishSite(org.id, siteId), { status: 200 });
}

/** The error message of a call that must fail with `status`. */
async function errorMessage(promise, status, operationId) {
    return (await expectApiError(promise, status, operationId)).error.message;
}

/** Ids of the top level of a structure (sections and groups, or site spaces). */
const topIds = (structure) => structure.structure.map((item) => item.id);
const ids = (items) => items.map((x) => x.id);
/** Every site space of a structure, in order. */
function allSiteSpaces(structure) {
    if (structure.type === 'siteSpaces') return structure.structure;
    return structure.structure.flatMap((item) =>
        item.object === 'site-section-group' ? item.sections.flatMap((x) => x.siteSpaces) : item.siteSpaces,
    );
}

/**
 * The secret key of a share link: the path segment of its published URL that the site's own
 * published URL does not have (the longest, should the URL add more than one).
 */
function shareKeyOf(link, site) {
    const own = new Set(new URL(site.urls.published).pathname.split('/').filter(Boolean));
    const extra = new URL(link.urls.published).pathname.split('/').filter((s) => s && !own.has(s));
    assert.ok(extra.length > 0, `the share link URL ${link.urls.published} adds a key to ${site.urls.published}`);
    return extra.sort((a, b) => b.length - a.length)[0];
}

test('createSite: 201 with defaults; `spaces` as ids, `empty` or `sample`', async () => {
    const bare = await createSite(admin, { title: 'Bare Site' });
    assert.equal(bare.object, 'site');
    assert.equal(bare.title, 'Bare Site');
    assert.equal(bare.type, 'basic', 'type defaults to basic');
    assert.equal(bare.published, false);
    assert.equal(bare.siteSpaces, 0);
    assert.equal(bare.urls.location, `${server.url}/v1/orgs/${org.id}/sites/${bare.id}`);
    assert.equal(bare.urls.published, undefined, 'no published URL before publishing');
    assert.deepEqual(await getSite(reader, bare.id), bare);
    assert.deepEqual(await structureOf(bare.id), { type: 'siteSpaces', structure: [] });

    const typed = await createSite(admin, { title: 'Typed Site', type: 'premium', visibility: 'unlisted' });
    assert.equal(typed.type, 'premium');
    assert.equal(typed.visibility, 'unlisted');

    const a = await createSpace('Create A');
    const b = await createSpace('Create B');
    const withSpaces = await createSite(admin, { title: 'Two Spaces', spaces: [a.id, b.id] });
    assert.equal(withSpaces.siteSpaces, 2);
    const structure = await structureOf(withSpaces.id);
    assert.equal(structure.type, 'siteSpaces');
    assert.deepEqual(
        structure.structure.map((ss) => ss.space.id),
        [a.id, b.id],
        'each space becomes a root site space, in order',
    );
    for (const ss of structure.structure) assert.equal(ss.section, undefined);

    const before = new Set(ids((await listAll('listSpacesInOrganizationById', (page) =>
        admin.api.orgs.listSpacesInOrganizationById(org.id, { page }))).items));
    for (const kind of ['empty', 'sample']) {
        const site = await createSite(admin, { title: `Site ${kind}`, spaces: kind });
        assert.equal(site.siteSpaces, 1, `${kind}: one site space`);
        const [ss] = await siteSpaces(site.id);
        assert.ok(!before.has(ss.space.id), `${kind}: a new space is made for the site`);
        assert.equal(ss.space.organization, org.id);
        const pages = check('listPages', await admin.api.spaces.listPages(ss.space.id), { status: 200 }).pages;
        if (kind === 'sample') assert.ok(pages.length >= 1, 'the sample space has a page');
    }
});

test('createSite: 400 for a bad title or unknown space; 403 below admin, 404 outside, 401 without token', async () => {
    for (const title of ['x', 't'.repeat(129)]) {
        assert.match(await errorMessage(admin.api.orgs.createSite(org.id, { title }), 400, 'createSite'), /title/);
    }
    await expectApiError(
        admin.api.orgs.createSite(org.id, { title: 'Ghost Spaces', spaces: [NO_SUCH_SPACE] }),
        400,
        'createSite',
    );
    for (const who of [creator, reader, guest]) {
        await expectApiError(who.api.orgs.createSite(org.id, { title: 'Not Mine' }), 403, 'createSite');
    }
    await expectApiError(outsider.api.orgs.createSite(org.id, { title: 'Not Mine' }), 404, 'createSite');
    await expectApiError(anonymous.api.orgs.createSite(org.id, { title: 'Not Mine' }), 401, 'createSite');
    const titles = (await listAll('listSites', (page) => admin.api.orgs.listSites(org.id, { page }))).items.map(
        (s) => s.title,
    );
    assert.ok(!titles.includes('Not Mine') && !titles.includes('Ghost Spaces'), 'refused creations leave no site');
});

test('listSites: members read (guests get 403), paginated, filtered by space and published', async () => {
    const space = await createSpace('Listed Space');
    const one = await createSite(admin, { title: 'Listed One', spaces: [space.id] });
    const two = await createSite(admin, { title: 'Listed Two' });
    const all = check('listSites', await admin.api.orgs.listSites(org.id), { status: 200 });
    assert.equal(all.count, all.items.length);
    assert.ok(ids(all.items).includes(one.id) && ids(all.items).includes(two.id));
    const { items, pages } = await listAll('listSites', (page) => admin.api.orgs.listSites(org.id, { limit: 1, page }));
    assert.deepEqual(ids(items), ids(all.items), 'walking pages yields the same sites');
    assert.ok(pages.length > 1);
    for (const who of [reader, creator]) {
        const seen = check('listSites', await who.api.orgs.listSites(org.id), { status: 200 });
        assert.deepEqual(ids(seen.items), ids(all.items));
    }
    // A site lists every space it holds: guests, who see only what they were granted, do
    // not read sites.
    await expectApiError(guest.api.orgs.listSites(org.id), 403, 'listSites');
    const bySpace = check('listSites', await admin.api.orgs.listSites(org.id, { space: space.id }), { status: 200 });
    assert.deepEqual(ids(bySpace.items), [one.id]);
    await publish(two.id);
    const published = check('listSites', await admin.api.orgs.listSites(org.id, { published: true }), { status: 200 });
    assert.ok(ids(published.items).includes(two.id) && !ids(published.items).includes(one.id));
    for (const s of published.items) assert.equal(s.published, true);
    await expectApiError(outsider.api.orgs.listSites(org.id), 404, 'listSites');
    await expectApiError(anonymous.api.orgs.listSites(org.id), 401, 'listSites');
});

test('getSiteById: members read; guests 403; 404 unknown or outside; 401 without token', async () => {
    const site = await createSite(admin, { title: 'Fetched Site' });
    for (const who of [admin, creator, reader]) assert.deepEqual(await getSite(who, site.id), site);
    await expectApiError(guest.api.orgs.getSiteById(org.id, site.id), 403, 'getSiteById');
    await expectApiError(admin.api.orgs.getSiteById(org.id, NO_SUCH_SITE), 404, 'getSiteById');
    await expectApiError(outsider.api.orgs.getSiteById(org.id, site.id), 404, 'getSiteById');
    await expectApiError(anonymous.api.orgs.getSiteById(org.id, site.id), 401, 'getSiteById');
});

test('updateSiteById: every field; each bad value 400 naming it; 403 / 404', async () => {
    const site = await createSite(admin, { title: 'Updatable' });
    const updated = await updateSite(site.id, {
        title: 'Updated Site',
        visibility: 'unlisted',
        basename: 'api',
        hostname: HOST,
        proxy: 'example.com/docs',
        adaptiveContent: { enabled: true },
        agentsContext: 'excluded',
    });
    assert.equal(updated.id, site.id);
    assert.equal(updated.title, 'Updated Site');
    assert.equal(updated.visibility, 'unlisted');
    assert.equal(updated.basename, 'api');
    assert.equal(updated.hostname, HOST);
    assert.equal(updated.proxy?.origin, 'example.com/docs');
    assert.deepEqual(updated.adaptiveContent, { enabled: true });
    assert.equal(updated.agentsContext, 'excluded');
    assert.deepEqual(await getSite(reader, site.id), updated);

    const unproxied = await updateSite(site.id, { proxy: null, agentsContext: 'included' });
    assert.equal(unproxied.proxy, undefined, 'proxy: null removes it');
    assert.equal(unproxied.agentsContext, 'included');
    assert.equal(unproxied.hostname, HOST, 'fields left out are unchanged');
    assert.equal((await updateSite(site.id, { adaptiveContent: { enabled: false } })).adaptiveContent.enabled, false);

    const bad = [
        ['title', { title: 'x' }],
        ['title', { title: 't'.repeat(129) }],
        ['basename', { basename: '' }],
        ['basename', { basename: 'b'.repeat(101) }],
        ['hostname', { hostname: 'example.com' }],
        ['hostname', { hostname: 'not a host.example.com' }],
        ['proxy', { proxy: 'example.com' }],
        ['proxy', { proxy: 'https://example.com/docs' }],
        ['proxy', { proxy: `${'a'.repeat(510)}.com/docs` }],
        ['adaptiveContent', { adaptiveContent: { enabled: 'yes' } }],
        ['agentsContext', { agentsContext: 'sometimes' }],
        ['defaultSiteSpace', { defaultSiteSpace: NO_SUCH_ITEM }],
        ['defaultSiteSection', { defaultSiteSection: NO_SUCH_ITEM }],
    ];
    for (const [field, body] of bad) {
        const message = await errorMessage(admin.api.orgs.updateSiteById(org.id, site.id, body), 400, 'updateSiteById');
        assert.ok(message.includes(field), `${JSON.stringify(body).slice(0, 80)}: 400 names \`${field}\`: ${message}`);
    }
    assert.deepEqual(
        await getSite(admin, site.id),
        { ...unproxied, adaptiveContent: { enabled: false } },
        'refused updates change nothing',
    );

    for (const who of [creator, reader, guest]) {
        await expectApiError(who.api.orgs.updateSiteById(org.id, site.id, { title: 'Mine' }), 403, 'updateSiteById');
    }
    await expectApiError(outsider.api.orgs.updateSiteById(org.id, site.id, { title: 'Mine' }), 404, 'updateSiteById');
    await expectApiError(anonymous.api.orgs.updateSiteById(org.id, site.id, { title: 'Mine' }), 401, 'updateSiteById');
    await expectApiError(
        admin.api.orgs.updateSiteById(org.id, NO_SUCH_SITE, { title: 'Ghost' }),
        404,
        'updateSiteById',
    );
});

test('updateSiteById: defaultSiteSpace at the root, defaultSiteSection with sections', async () => {
    const [a, b, c] = await Promise.all(['Default A', 'Default B', 'Default C'].map(createSpace));
    const site = await createSite(admin, { title: 'Defaults', spaces: [a.id, b.id] });
    const [ssA, ssB] = await siteSpaces(site.id);
    assert.equal(ssA.default, true, 'the first root site space is the default');
    assert.equal(ssB.default, false);
    await updateSite(site.id, { defaultSiteSpace: ssB.id });
    assert.deepEqual(ids(await siteSpaces(site.id, { default: true })), [ssB.id]);
    assert.deepEqual(ids(await siteSpaces(site.id, { default: false })), [ssA.id]);

    const second = await addSection(site.id, { spaceId: c.id, title: 'Second' });
    const [first] = await sections(site.id);
    assert.equal(first.default, true);
    assert.equal(second.default, false);
    await updateSite(site.id, { defaultSiteSection: second.id });
    const after = await sections(site.id);
    assert.deepEqual(after.map((x) => [x.id, x.default]), [[first.id, false], [second.id, true]]);
    const [ssC] = second.siteSpaces;
    assert.deepEqual(ids(await siteSpaces(site.id, { default: true })), [ssC.id], 'the default section’s default');
    // With sections, defaultSiteSpace must be in the default section.
    assert.match(
        await errorMessage(
            admin.api.orgs.updateSiteById(org.id, site.id, { defaultSiteSpace: ssA.id }),
            400,
            'updateSiteById',
        ),
        /defaultSiteSpace/,
    );
    await updateSite(site.id, { defaultSiteSection: first.id, defaultSiteSpace: ssA.id });
    assert.deepEqual(ids(await siteSpaces(site.id, { default: true })), [ssA.id]);
});

test('deleteSiteById: 204, also when absent; 403 below admin, 404 outside', async () => {
    const site = await createSite(admin, { title: 'Doomed Site' });
    await expectApiError(creator.api.orgs.deleteSiteById(org.id, site.id), 403, 'deleteSiteById');
    await expectApiError(reader.api.orgs.deleteSiteById(org.id, site.id), 403, 'deleteSiteById');
    await expectApiError(outsider.api.orgs.deleteSiteById(org.id, site.id), 404, 'deleteSiteById');
    await expectApiError(anonymous.api.orgs.deleteSiteById(org.id, site.id), 401, 'deleteSiteById');
    await getSite(admin, site.id);
    check('deleteSiteById', await admin.api.orgs.deleteSiteById(org.id, site.id), { status: 204 });
    await expectApiError(admin.api.orgs.getSiteById(org.id, site.id), 404, 'getSiteById');
    const { items } = await listAll('listSites', (page) => admin.api.orgs.listSites(org.id, { page }));
    assert.ok(!ids(items).includes(site.id));
    check('deleteSiteById', await admin.api.orgs.deleteSiteById(org.id, site.id), { status: 204 });
    check('deleteSiteById', await admin.api.orgs.deleteSiteById(org.id, NO_SUCH_SITE), { status: 204 });
});

test('publishSite / unpublishSite / getPublishedContentSite', async () => {
    const space = await createSpace('Published Space');
    const site = await createSite(admin, { title: 'Going Live', spaces: [space.id] });
    // Its admins preview it before it is published; other members see it once it is.
    check('getPublishedContentSite', await admin.api.orgs.getPublishedContentSite(org.id, site.id), { status: 200 });
    await expectApiError(reader.api.orgs.getPublishedContentSite(org.id, site.id), 404, 'getPublishedContentSite');
    await expectApiError(creator.api.orgs.publishSite(org.id, site.id), 403, 'publishSite');
    await expectApiError(outsider.api.orgs.publishSite(org.id, site.id), 404, 'publishSite');
    await expectApiError(admin.api.orgs.publishSite(org.id, NO_SUCH_SITE), 404, 'publishSite');

    const live = await publish(site.id);
    assert.equal(live.id, site.id);
    assert.equal(live.published, true);
    assert.equal(typeof live.urls.published, 'string', 'urls.published while published');
    assert.deepEqual(await getSite(reader, site.id), live);
    const [ss] = await siteSpaces(site.id);
    assert.equal(typeof ss.urls.published, 'string');

    for (const who of [admin, reader]) {
        const got = check('getPublishedContentSite', await who.api.orgs.getPublishedContentSite(org.id, site.id), {
            status: 200,
        });
        assert.equal(got.object, 'published-content-site');
        assert.deepEqual(got.site, live);
        assert.equal(got.structure.type, 'siteSpaces');
        assert.deepEqual(allSiteSpaces(got.structure).map((x) => x.id), [ss.id]);
        assert.equal(typeof got.customizations.site, 'object');
        assert.equal(typeof got.customizations.siteSpaces, 'object');
        assert.ok(Array.isArray(got.scripts));
    }
    await expectApiError(outsider.api.orgs.getPublishedContentSite(org.id, site.id), 404, 'getPublishedContentSite');

    await expectApiError(reader.api.orgs.unpublishSite(org.id, site.id), 403, 'unpublishSite');
    const down = check('unpublishSite', await admin.api.orgs.unpublishSite(org.id, site.id), { status: 200 });
    assert.equal(down.published, false);
    assert.equal(down.urls.published, undefined, 'no urls.published once unpublished');
    assert.equal((await siteSpaces(site.id))[0].urls.published, undefined);
    await expectApiError(reader.api.orgs.getPublishedContentSite(org.id, site.id), 404, 'getPublishedContentSite');
});

test('site spaces: add (root, paths unique), list with `default`, update, delete', async () => {
    const guide = await createSpace('Getting Started');
    const twin = await createSpace('Getting Started');
    const other = await createSpace('Reference');
    const site = await createSite(admin, { title: 'Site Spaces' });

    const first = await addSpace(site.id, { spaceId: guide.id });
    assert.equal(first.object, 'site-space');
    assert.equal(first.space.id, guide.id);
    assert.equal(first.title, 'Getting Started');
    assert.equal(first.section, undefined, 'a site without sections holds site spaces at its root');
    assert.equal(first.path, 'getting-started', 'the path is made of the space title');
    const second = await addSpace(site.id, { spaceId: twin.id });
    assert.notEqual(second.path, first.path, 'paths are unique among siblings');
    const third = await addSpace(site.id, { spaceId: other.id });
    assert.equal((await getSite(admin, site.id)).siteSpaces, 3);

    const listed = await siteSpaces(site.id, {}, reader);
    assert.deepEqual(ids(listed), [first.id, second.id, third.id]);
    assert.deepEqual(listed.map((x) => x.default), [true, false, false]);
    const { pages } = await listAll('listSiteSpaces', (page) =>
        admin.api.orgs.listSiteSpaces(org.id, site.id, { limit: 1, page }),
    );
    assert.equal(pages.length, 3);
    assert.deepEqual(ids(await siteSpaces(site.id, { default: true })), [first.id]);
    assert.deepEqual(ids(await siteSpaces(site.id, { default: false })), [second.id, third.id]);

    await expectApiError(
        admin.api.orgs.addSpaceToSite(org.id, site.id, { spaceId: NO_SUCH_SPACE }),
        400,
        'addSpaceToSite',
    );
    await expectApiError(
        admin.api.orgs.addSpaceToSite(org.id, site.id, { spaceId: other.id, sectionId: NO_SUCH_ITEM }),
        400,
        'addSpaceToSite',
    );
    for (const [who, status] of [
        [creator, 403],
        [outsider, 404],
    ]) {
        const call = who.api.orgs.addSpaceToSite(org.id, site.id, { spaceId: other.id });
        await expectApiError(call, status, 'addSpaceToSite');
    }

    const update = async (id, body) =>
        check('updateSiteSpaceById', await admin.api.orgs.updateSiteSpaceById(org.id, site.id, id, body), {
            status: 200,
        });
    const condition = 'visitor.claims.unsigned.beta === true && !visitor.claims.isInternal';
    const changed = await update(third.id, { path: 'api', condition });
    assert.equal(changed.id, third.id);
    assert.equal(changed.path, 'api');
    assert.equal(changed.condition, condition);
    assert.equal((await update(third.id, { condition: null })).condition, undefined, 'condition: null removes it');
    const repointed = await update(second.id, { spaceId: other.id });
    assert.equal(repointed.space.id, other.id);
    assert.equal((await siteSpaces(site.id)).find((x) => x.id === second.id).space.id, other.id);

    await expectApiError(
        admin.api.orgs.updateSiteSpaceById(org.id, site.id, second.id, { path: 'api' }),
        409,
        'updateSiteSpaceById',
    );
    for (const path of ['', 'p'.repeat(101), 'two/segments']) {
        assert.match(
            await errorMessage(
                admin.api.orgs.updateSiteSpaceById(org.id, site.id, second.id, { path }),
                400,
                'updateSiteSpaceById',
            ),
            /path/,
        );
    }
    for (const bad of ['visitor.claims.(', '"abc"', '', 'c'.repeat(1025)]) {
        const message = await errorMessage(
            admin.api.orgs.updateSiteSpaceById(org.id, site.id, second.id, { condition: bad }),
            400,
            'updateSiteSpaceById',
        );
        assert.match(message, /condition/, `the 400 for ${JSON.stringify(bad.slice(0, 20))} names condition`);
        if (bad === 'visitor.claims.(' || bad === '"abc"') {
            assert.match(message, /position \d+/, `the 400 for ${bad} names a position: ${message}`);
        }
    }
    await expectApiError(
        admin.api.orgs.updateSiteSpaceById(org.id, site.id, second.id, { spaceId: NO_SUCH_SPACE }),
        400,
        'updateSiteSpaceById',
    );
    await expectApiError(
        admin.api.orgs.updateSiteSpaceById(org.id, site.id, NO_SUCH_ITEM, { path: 'ghost' }),
        404,
        'updateSiteSpaceById',
    );
    await expectApiError(
        reader.api.orgs.updateSiteSpaceById(org.id, site.id, second.id, { path: 'mine' }),
        403,
        'updateSiteSpaceById',
    );

    await expectApiError(creator.api.orgs.deleteSiteSpaceById(org.id, site.id, second.id), 403, 'deleteSiteSpaceById');
    check('deleteSiteSpaceById', await admin.api.orgs.deleteSiteSpaceById(org.id, site.id, second.id), { status: 204 });
    assert.deepEqual(ids(await siteSpaces(site.id)), [first.id, third.id]);
    assert.equal((await getSite(admin, site.id)).siteSpaces, 2);
    check('deleteSiteSpaceById', await admin.api.orgs.deleteSiteSpaceById(org.id, site.id, second.id), { status: 204 });
    check('deleteSiteSpaceById', await admin.api.orgs.deleteSiteSpaceById(org.id, NO_SUCH_SITE, second.id), {
        status: 204,
    });
});

test('sections: the first moves root site spaces in; add, list, update, delete', async () => {
    const [a, b, c, d] = await Promise.all(['Section A', 'Section B', 'Section C', 'Section D'].map(createSpace));
    const site = await createSite(admin, { title: 'Sectioned', spaces: [a.id, b.id] });
    const [ssA, ssB] = await siteSpaces(site.id);

    const added = await addSection(site.id, { spaceId: c.id, title: 'Guides', icon: 'book' });
    assert.equal(added.object, 'site-section');
    assert.equal(added.title, 'Guides');
    assert.equal(added.icon, 'book');
    assert.equal(added.default, false);
    assert.deepEqual(added.siteSpaces.map((x) => x.space.id), [c.id]);
    assert.equal(added.siteSpaces[0].section, added.id);

    const structure = await structureOf(site.id);
    assert.equal(structure.type, 'sections');
    assert.equal(structure.structure.length, 2);
    const [moved] = structure.structure;
    assert.equal(moved.object, 'site-section');
    assert.equal(moved.default, true, 'the section made of the root site spaces is the default');
    assert.deepEqual(ids(moved.siteSpaces), [ssA.id, ssB.id], 'root site spaces moved into the first section');
    for (const ss of allSiteSpaces(structure)) assert.ok(ss.section, 'every site space is in a section');
    assert.equal((await getSite(admin, site.id)).siteSpaces, 3);

    const listed = await sections(site.id, {}, reader);
    assert.deepEqual(ids(listed), [moved.id, added.id]);
    assert.deepEqual(listed.map((x) => x.default), [true, false]);

    // A space goes to the section named, else to the default section.
    const intoDefault = await addSpace(site.id, { spaceId: d.id });
    assert.equal(intoDefault.section, moved.id);
    const intoNamed = await addSpace(site.id, { spaceId: d.id, sectionId: added.id });
    assert.equal(intoNamed.section, added.id);
    assert.equal((await getSite(admin, site.id)).siteSpaces, 5);

    const update = async (body) =>
        check('updateSiteSectionById', await admin.api.orgs.updateSiteSectionById(org.id, site.id, added.id, body), {
            status: 200,
        });
    const condition = 'visitor.claims.unsigned.beta === true';
    const changed = await update({
        title: 'Handbooks',
        path: 'handbooks',
        condition,
        icon: 'gear',
        description: 'All the handbooks',
        defaultSiteSpace: intoNamed.id,
    });
    assert.equal(changed.title, 'Handbooks');
    assert.equal(changed.path, 'handbooks');
    assert.equal(changed.condition, condition);
    assert.equal(changed.icon, 'gear');
    assert.equal(changed.description, 'All the handbooks');
    assert.deepEqual(
        changed.siteSpaces.map((x) => [x.id, x.default]),
        [[added.siteSpaces[0].id, false], [intoNamed.id, true]],
    );
    const cleared = await update({ condition: null, icon: null, description: null });
    assert.equal(cleared.condition, undefined);
    assert.equal(cleared.icon, undefined);
    assert.equal(cleared.description, undefined);
    assert.equal(cleared.title, 'Handbooks');

    const bad = [
        ['title', { title: 'x' }],
        ['title', { title: 't'.repeat(129) }],
        ['description', { description: 'd'.repeat(257) }],
        ['path', { path: '' }],
        ['condition', { condition: 'visitor.claims.(' }],
        ['defaultSiteSpace', { defaultSiteSpace: ssA.id }],
    ];
    for (const [field, body] of bad) {
        const message = await errorMessage(
            admin.api.orgs.updateSiteSectionById(org.id, site.id, added.id, body),
            400,
            'updateSiteSectionById',
        );
        assert.ok(message.includes(field), `${JSON.stringify(body).slice(0, 60)}: 400 names \`${field}\`: ${message}`);
    }
    await expectApiError(
        admin.api.orgs.updateSiteSectionById(org.id, site.id, added.id, { path: moved.path }),
        409,
        'updateSiteSectionById',
    );
    await expectApiError(
        admin.api.orgs.updateSiteSectionById(org.id, site.id, NO_SUCH_ITEM, { title: 'Ghost' }),
        404,
        'updateSiteSectionById',
    );
    await expectApiError(
        creator.api.orgs.updateSiteSectionById(org.id, site.id, added.id, { title: 'Mine' }),
        403,
        'updateSiteSectionById',
    );

    // Deleting a section removes its site spaces.
    await expectApiError(
        reader.api.orgs.deleteSiteSectionById(org.id, site.id, added.id),
        403,
        'deleteSiteSectionById',
    );
    check('deleteSiteSectionById', await admin.api.orgs.deleteSiteSectionById(org.id, site.id, added.id), {
        status: 204,
    });
    assert.deepEqual(ids(await sections(site.id)), [moved.id]);
    assert.deepEqual(ids(await siteSpaces(site.id)), [ssA.id, ssB.id, intoDefault.id]);
    assert.equal((await getSite(admin, site.id)).siteSpaces, 3, 'the section’s two site spaces went with it');
    check('deleteSiteSectionById', await admin.api.orgs.deleteSiteSectionById(org.id, site.id, added.id), {
        status: 204,
    });
    for (const [who, spaceId, status] of [
        [admin, NO_SUCH_SPACE, 400],
        [creator, a.id, 403],
        [outsider, a.id, 404],
    ]) {
        await expectApiError(who.api.orgs.addSectionToSite(org.id, site.id, { spaceId }), status, 'addSectionToSite');
    }
});

test('section groups: add with sections, add / remove a section, update, delete', async () => {
    const [a, b, c] = await Promise.all(['Group A', 'Group B', 'Group C'].map(createSpace));
    const site = await createSite(admin, { title: 'Grouped' });
    const s1 = await addSection(site.id, { spaceId: a.id, title: 'One' });
    const s2 = await addSection(site.id, { spaceId: b.id, title: 'Two' });
    const s3 = await addSection(site.id, { spaceId: c.id, title: 'Three' });
    assert.equal(s1.default, true, 'the first section is the default');

    const group = await addGroup(site.id, { title: 'Products', icon: 'box', sections: [s2.id] });
    assert.equal(group.object, 'site-section-group');
    assert.equal(group.title, 'Products');
    assert.equal(group.icon, 'box');
    assert.deepEqual(ids(group.sections), [s2.id]);
    assert.equal(group.sections[0].sectionGroup, group.id);
    assert.deepEqual(ids(await groups(site.id, reader)), [group.id]);
    assert.deepEqual(topIds(await structureOf(site.id)), [s1.id, s3.id, group.id]);

    const joined = check(
        'addSectionToGroup',
        await admin.api.orgs.addSectionToGroup(org.id, site.id, group.id, { sectionId: s3.id }),
        { status: 201 },
    );
    assert.equal(joined.id, group.id);
    assert.deepEqual(ids(joined.sections), [s2.id, s3.id]);
    assert.deepEqual(topIds(await structureOf(site.id)), [s1.id, group.id]);
    await expectApiError(
        admin.api.orgs.addSectionToGroup(org.id, site.id, group.id, { sectionId: NO_SUCH_ITEM }),
        400,
        'addSectionToGroup',
    );
    await expectApiError(
        creator.api.orgs.addSectionToGroup(org.id, site.id, group.id, { sectionId: s1.id }),
        403,
        'addSectionToGroup',
    );

    await expectApiError(
        reader.api.orgs.removeSectionFromGroup(org.id, site.id, group.id, s2.id),
        403,
        'removeSectionFromGroup',
    );
    check('removeSectionFromGroup', await admin.api.orgs.removeSectionFromGroup(org.id, site.id, group.id, s2.id), {
        status: 204,
    });
    const [g] = await groups(site.id);
    assert.deepEqual(ids(g.sections), [s3.id]);
    const afterRemove = await sections(site.id);
    assert.deepEqual(ids(afterRemove).sort(), [s1.id, s2.id, s3.id].sort(), 'the section stays in the site');
    assert.equal(afterRemove.find((x) => x.id === s2.id).sectionGroup, undefined);

    const renamed = check(
        'updateSiteSectionGroupById',
        await admin.api.orgs.updateSiteSectionGroupById(org.id, site.id, group.id, { title: 'Catalog', icon: null }),
        { status: 200 },
    );
    assert.equal(renamed.title, 'Catalog');
    assert.equal(renamed.icon, undefined);
    for (const title of ['', 't'.repeat(101)]) {
        assert.match(
            await errorMessage(
                admin.api.orgs.updateSiteSectionGroupById(org.id, site.id, group.id, { title }),
                400,
                'updateSiteSectionGroupById',
            ),
            /title/,
        );
        await expectApiError(
            admin.api.orgs.addSectionGroupToSite(org.id, site.id, { title }),
            400,
            'addSectionGroupToSite',
        );
    }
    await expectApiError(
        admin.api.orgs.updateSiteSectionGroupById(org.id, site.id, NO_SUCH_ITEM, { title: 'Ghost' }),
        404,
        'updateSiteSectionGroupById',
    );
    await expectApiError(
        creator.api.orgs.updateSiteSectionGroupById(org.id, site.id, group.id, { title: 'Mine' }),
        403,
        'updateSiteSectionGroupById',
    );
    await expectApiError(creator.api.orgs.addSectionGroupToSite(org.id, site.id, { title: 'Mine' }), 403);

    check('deleteSiteSectionGroupById', await admin.api.orgs.deleteSiteSectionGroupById(org.id, site.id, group.id), {
        status: 204,
    });
    assert.deepEqual(await groups(site.id), []);
    const afterDelete = await sections(site.id);
    assert.equal(afterDelete.length, 3, 'the group’s sections stay');
    for (const x of afterDelete) assert.equal(x.sectionGroup, undefined);
    assert.equal((await getSite(admin, site.id)).siteSpaces, 3);
    check('deleteSiteSectionGroupById', await admin.api.orgs.deleteSiteSectionGroupById(org.id, site.id, group.id), {
        status: 204,
    });
});

test('moves: moveSiteSpace, moveSiteSection, moveSiteSectionGroup, sortSiteStructure', async () => {
    const [a, b, c] = await Promise.all(['Move A', 'Move B', 'Move C'].map(createSpace));
    const flat = await createSite(admin, { title: 'Flat Moves', spaces: [a.id, b.id, c.id] });
    const [ssA, ssB, ssC] = ids(await siteSpaces(flat.id));
    const order = async (siteId) => topIds(await structureOf(siteId));

    const moveSpace = async (id, position) =>
        check('moveSiteSpace', await admin.api.orgs.moveSiteSpace(org.id, flat.id, id, { position }), { status: 200 });
    assert.equal((await moveSpace(ssC, { before: { type: 'site-space', siteSpace: ssA } })).id, ssC);
    assert.deepEqual(await order(flat.id), [ssC, ssA, ssB]);
    assert.equal((await moveSpace(ssC, { after: { type: 'site-space', siteSpace: ssB } })).id, ssC);
    assert.deepEqual(await order(flat.id), [ssA, ssB, ssC]);
    await expectApiError(
        admin.api.orgs.moveSiteSpace(org.id, flat.id, ssA, {
            position: { before: { type: 'site-space', siteSpace: ssB }, after: { type: 'site-space', siteSpace: ssC } },
        }),
        400,
        'moveSiteSpace',
    );
    const sorted = check(
        'sortSiteStructure',
        await admin.api.orgs.sortSiteStructure(org.id, flat.id, {
            item: { type: 'site-space', id: ssB },
            position: { before: { type: 'site-space', id: ssA } },
        }),
        { status: 200 },
    );
    assert.equal(sorted.object, 'site-space');
    assert.equal(sorted.id, ssB);
    assert.deepEqual(await order(flat.id), [ssB, ssA, ssC]);

    const site = await createSite(admin, { title: 'Section Moves' });
    const x1 = (await addSection(site.id, { spaceId: a.id, title: 'First' })).id;
    const x2 = (await addSection(site.id, { spaceId: b.id, title: 'Second' })).id;
    const x3 = (await addSection(site.id, { spaceId: c.id, title: 'Third' })).id;
    const moveSection = async (id, position) =>
        check('moveSiteSection', await admin.api.orgs.moveSiteSection(org.id, site.id, id, { position }), {
            status: 200,
        });
    assert.equal((await moveSection(x3, { before: { type: 'site-section', siteSection: x1 } })).id, x3);
    assert.deepEqual(await order(site.id), [x3, x1, x2]);
    assert.equal((await moveSection(x3, { after: { type: 'site-section', siteSection: x2 } })).id, x3);
    assert.deepEqual(await order(site.id), [x1, x2, x3]);
    await expectApiError(
        admin.api.orgs.moveSiteSection(org.id, site.id, x1, {
            position: {
                before: { type: 'site-section', siteSection: x2 },
                after: { type: 'site-section', siteSection: x3 },
            },
        }),
        400,
        'moveSiteSection',
    );

    const g = (await addGroup(site.id, { title: 'Bundle', sections: [x2] })).id;
    assert.deepEqual(await order(site.id), [x1, x3, g]);
    const moveGroup = async (position) =>
        check('moveSiteSectionGroup', await admin.api.orgs.moveSiteSectionGroup(org.id, site.id, g, { position }), {
            status: 200,
        });
    const movedGroup = await moveGroup({ before: { type: 'site-section', id: x1 } });
    assert.equal(movedGroup.object, 'site-section-group');
    assert.equal(movedGroup.id, g);
    assert.deepEqual(await order(site.id), [g, x1, x3]);
    await moveGroup({ after: { type: 'site-section', id: x3 } });
    assert.deepEqual(await order(site.id), [x1, x3, g]);
    await expectApiError(
        admin.api.orgs.moveSiteSectionGroup(org.id, site.id, g, {
            position: { before: { type: 'site-section', id: x1 }, after: { type: 'site-section', id: x3 } },
        }),
        400,
        'moveSiteSectionGroup',
    );

    const sort = async (item, position) =>
        check('sortSiteStructure', await admin.api.orgs.sortSiteStructure(org.id, site.id, { item, position }), {
            status: 200,
        });
    const sortedGroup = await sort({ type: 'site-section-group', id: g }, { before: { type: 'site-section', id: x3 } });
    assert.equal(sortedGroup.object, 'site-section-group');
    assert.equal(sortedGroup.id, g);
    assert.deepEqual(await order(site.id), [x1, g, x3]);
    const sortedSection = await sort({ type: 'site-section', id: x3 }, { before: { type: 'site-section', id: x1 } });
    assert.equal(sortedSection.object, 'site-section');
    assert.equal(sortedSection.id, x3);
    assert.deepEqual(await order(site.id), [x3, x1, g]);
    await sort({ type: 'site-section-group', id: g }, { after: { type: 'site-section', id: x3 } });
    assert.deepEqual(await order(site.id), [x3, g, x1]);

    await expectApiError(
        admin.api.orgs.sortSiteStructure(org.id, site.id, {
            item: { type: 'site-section', id: x1 },
            position: { before: { type: 'site-section', id: x3 }, after: { type: 'site-section-group', id: g } },
        }),
        400,
        'sortSiteStructure',
    );
    await expectApiError(
        admin.api.orgs.sortSiteStructure(org.id, site.id, {
            item: { type: 'site-section', id: NO_SUCH_ITEM },
            position: { before: { type: 'site-section', id: x3 } },
        }),
        404,
        'sortSiteStructure',
    );
    await expectApiError(
        creator.api.orgs.sortSiteStructure(org.id, site.id, {
            item: { type: 'site-section', id: x1 },
            position: { before: { type: 'site-section', id: x3 } },
        }),
        403,
        'sortSiteStructure',
    );
    assert.deepEqual(await order(site.id), [x3, g, x1], 'refused moves change nothing');
});

test('share links: create, list (admins only), update, delete; shareKey resolves published URLs', async () => {
    const [a, b] = await Promise.all(['Shared A', 'Shared B'].map(createSpace));
    const site = await createSite(admin, { title: 'Shared Site', visibility: 'share-link', spaces: [a.id, b.id] });
    const live = await publish(site.id);
    await addSection(site.id, { spaceId: b.id, title: 'Extra' });

    const link = await createShareLink(site.id, 'Partners');
    assert.equal(link.object, 'share-link');
    assert.equal(link.name, 'Partners');
    assert.equal(link.active, true);
    const key = shareKeyOf(link, live);
    const other = await createShareLink(site.id, 'Other');
    assert.notEqual(shareKeyOf(other, live), key, 'every link has its own key');
    assert.match(
        await errorMessage(
            admin.api.orgs.createSiteShareLink(org.id, site.id, { name: 'n'.repeat(51) }),
            400,
            'createSiteShareLink',
        ),
        /name/,
    );

    const listed = check('listSiteShareLinks', await admin.api.orgs.listSiteShareLinks(org.id, site.id), {
        status: 200,
    });
    assert.deepEqual(ids(listed.items), [link.id, other.id]);
    assert.equal(listed.count, 2);
    const { pages } = await listAll('listSiteShareLinks', (page) =>
        admin.api.orgs.listSiteShareLinks(org.id, site.id, { limit: 1, page }),
    );
    assert.equal(pages.length, 2);
    for (const who of [creator, reader, guest]) {
        await expectApiError(who.api.orgs.listSiteShareLinks(org.id, site.id), 403, 'listSiteShareLinks');
    }
    await expectApiError(outsider.api.orgs.listSiteShareLinks(org.id, site.id), 404, 'listSiteShareLinks');

    // An active key resolves the published URLs under it; an unknown one resolves nothing.
    const withKey = async (shareKey) => {
        const spaces = await siteSpaces(site.id, { shareKey }, reader);
        const secs = await sections(site.id, { shareKey }, reader);
        const structure = await structureOf(site.id, { shareKey }, reader);
        const published = check(
            'getPublishedContentSite',
            await reader.api.orgs.getPublishedContentSite(org.id, site.id, { shareKey }),
            { status: 200 },
        );
        return [
            ...spaces.map((x) => x.urls.published),
            ...secs.map((x) => x.urls.published),
            ...allSiteSpaces(structure).map((x) => x.urls.published),
            ...allSiteSpaces(published.structure).map((x) => x.urls.published),
        ];
    };
    const resolved = await withKey(key);
    assert.equal(resolved.length, 3 + 2 + 3 + 3);
    for (const url of resolved) assert.ok(url?.includes(key), `${url} holds the share key`);
    for (const url of await withKey('nosuchsharekey0000000000000000000')) {
        assert.equal(typeof url, 'string');
        assert.ok(!url.includes(key), `an unknown key resolves nothing: ${url}`);
    }

    const updated = check(
        'updateSiteShareLinkById',
        await admin.api.orgs.updateSiteShareLinkById(org.id, site.id, link.id, { active: false, name: 'Paused' }),
        { status: 200 },
    );
    assert.equal(updated.id, link.id);
    assert.equal(updated.active, false);
    assert.equal(updated.name, 'Paused');
    for (const url of await withKey(key)) assert.ok(!url.includes(key), `an inactive key resolves nothing: ${url}`);
    await expectApiError(
        admin.api.orgs.updateSiteShareLinkById(org.id, site.id, link.id, { name: 'n'.repeat(51) }),
        400,
        'updateSiteShareLinkById',
    );
    await expectApiError(
        admin.api.orgs.updateSiteShareLinkById(org.id, site.id, NO_SUCH_ITEM, { active: true }),
        404,
        'updateSiteShareLinkById',
    );
    await expectApiError(
        reader.api.orgs.updateSiteShareLinkById(org.id, site.id, link.id, { active: true }),
        403,
        'updateSiteShareLinkById',
    );
    const reactivated = check(
        'updateSiteShareLinkById',
        await admin.api.orgs.updateSiteShareLinkById(org.id, site.id, link.id, { active: true }),
        { status: 200 },
    );
    assert.equal(reactivated.active, true);
    assert.equal(reactivated.name, 'Paused');
    for (const url of await withKey(key)) assert.ok(url.includes(key), `reactivated: ${url}`);

    await expectApiError(
        reader.api.orgs.deleteSiteShareLinkById(org.id, site.id, link.id),
        403,
        'deleteSiteShareLinkById',
    );
    check('deleteSiteShareLinkById', await admin.api.orgs.deleteSiteShareLinkById(org.id, site.id, link.id), {
        status: 204,
    });
    const left = check('listSiteShareLinks', await admin.api.orgs.listSiteShareLinks(org.id, site.id), { status: 200 });
    assert.deepEqual(ids(left.items), [other.id]);
    for (const url of await withKey(key)) assert.ok(!url.includes(key), `a deleted key resolves nothing: ${url}`);
    check('deleteSiteShareLinkById', await admin.api.orgs.deleteSiteShareLinkById(org.id, site.id, link.id), {
        status: 204,
    });
});

test('customization: GET a full object; PUT merges a partial one onto the defaults; 400 / 403', async () => {
    const site = await createSite(admin, { title: 'Customized' });
    const get = async (who = admin) =>
        check('getSiteCustomizationById', await who.api.orgs.getSiteCustomizationById(org.id, site.id), {
            status: 200,
        });
    const defaults = await get(reader);
    assert.equal(typeof defaults.styling, 'object');

    const put = async (body) =>
        check('updateSiteCustomizationById', await admin.api.orgs.updateSiteCustomizationById(org.id, site.id, body), {
            status: 200,
        });
    const partial = {
        title: 'Custom Title',
        themes: { default: 'dark', toggeable: false },
        styling: { primaryColor: { light: '#112233', dark: '#445566' } },
    };
    const saved = await put(partial);
    const got = await get(reader);
    for (const c of [saved, got]) {
        assert.equal(c.title, 'Custom Title');
        assert.deepEqual(c.themes, { default: 'dark', toggeable: false });
        assert.deepEqual(c.styling.primaryColor, { light: '#112233', dark: '#445566' });
        assert.equal(c.styling.font, defaults.styling.font, 'what the PUT leaves out keeps the default');
        assert.deepEqual(c.header, defaults.header);
        assert.deepEqual(c.pdf, defaults.pdf);
    }

    for (const body of [{ themes: { default: 'purple', toggeable: true } }, { title: 'x' }]) {
        await expectApiError(
            admin.api.orgs.updateSiteCustomizationById(org.id, site.id, body),
            400,
            'updateSiteCustomizationById',
        );
    }
    await expectApiError(
        reader.api.orgs.updateSiteCustomizationById(org.id, site.id, { title: 'Reader Title' }),
        403,
        'updateSiteCustomizationById',
    );
    await expectApiError(outsider.api.orgs.getSiteCustomizationById(org.id, site.id), 404, 'getSiteCustomizationById');
    assert.equal((await get()).title, 'Custom Title', 'refused updates change nothing');

    // The published site carries the customization.
    await publish(site.id);
    const published = check('getPublishedContentSite', await admin.api.orgs.getPublishedContentSite(org.id, site.id), {
        status: 200,
    });
    assert.equal(published.customizations.site.title, 'Custom Title');
    assert.deepEqual(published.customizations.site.themes, { default: 'dark', toggeable: false });
});

test('adaptive schema: claims sent without descriptions; the answer is an official SiteAdaptiveSchema', async () => {
    // SiteAdaptiveJSONSchema requires `description` on every claim; the body below (no
    // descriptions, no `additionalProperties`) is accepted, so what Quire stores and answers
    // must still validate as a SiteAdaptiveSchema.
    const site = await createSite(admin, { title: 'Adaptive Plain' });
    await expectApiError(admin.api.orgs.getSiteAdaptiveSchema(org.id, site.id), 404, 'getSiteAdaptiveSchema');
    const jsonSchema = {
        type: 'object',
        properties: {
            isBeta: { type: 'boolean' },
            unsigned: { type: 'object', properties: { plan: { type: 'boolean' } } },
        },
    };
    const saved = check(
        'updateSiteAdaptiveSchema',
        await admin.api.orgs.updateSiteAdaptiveSchema(org.id, site.id, { jsonSchema }),
        { status: 200 },
    );
    assert.equal(saved.object, 'site-adaptive-schema');
    assert.equal(saved.jsonSchema.additionalProperties, false, 'the stored schema gains additionalProperties: false');
    assert.equal(saved.jsonSchema.properties.isBeta.type, 'boolean');
    assert.equal(saved.jsonSchema.properties.unsigned.properties.plan.type, 'boolean');
    const got = check('getSiteAdaptiveSchema', await admin.api.orgs.getSiteAdaptiveSchema(org.id, site.id), {
        status: 200,
    });
    assert.deepEqual(got, saved);
    const conditions = check(
        'listSiteAdaptiveTemplateConditions',
        await admin.api.orgs.listSiteAdaptiveTemplateConditions(org.id, site.id),
        { status: 200 },
    );
    assert.deepEqual(conditions.items.map((c) => c.condition).sort(), [
        'visitor.claims.isBeta === true',
        'visitor.claims.unsigned.plan === true',
    ]);
});

test('adaptive schema: GET 404 until set, PUT, template conditions, 400 / 403', async () => {
    const site = await createSite(admin, { title: 'Adaptive' });
    await expectApiError(reader.api.orgs.getSiteAdaptiveSchema(org.id, site.id), 404, 'getSiteAdaptiveSchema');
    const noConditions = check(
        'listSiteAdaptiveTemplateConditions',
        await admin.api.orgs.listSiteAdaptiveTemplateConditions(org.id, site.id),
        { status: 200 },
    );
    assert.deepEqual(noConditions.items, []);

    const { additionalProperties: _, ...withoutClosure } = DESCRIBED_SCHEMA;
    const saved = check(
        'updateSiteAdaptiveSchema',
        await admin.api.orgs.updateSiteAdaptiveSchema(org.id, site.id, { jsonSchema: withoutClosure }),
        { status: 200 },
    );
    assert.equal(saved.object, 'site-adaptive-schema');
    assert.deepEqual(saved.jsonSchema, DESCRIBED_SCHEMA, 'the stored schema gains additionalProperties: false');
    const got = check('getSiteAdaptiveSchema', await reader.api.orgs.getSiteAdaptiveSchema(org.id, site.id), {
        status: 200,
    });
    assert.deepEqual(got, saved);

    const conditions = check(
        'listSiteAdaptiveTemplateConditions',
        await reader.api.orgs.listSiteAdaptiveTemplateConditions(org.id, site.id),
        { status: 200 },
    );
    assert.deepEqual(conditions.items.map((c) => c.condition).sort(), [
        'visitor.claims.isBeta === true',
        'visitor.claims.unsigned.plan === true',
    ]);
    for (const c of conditions.items) assert.ok(c.description.length > 0);

    // A suggested condition is one a site space accepts.
    const space = await createSpace('Adaptive Space');
    const target = await createSite(admin, { title: 'Adaptive Target', spaces: [space.id] });
    const [ss] = await siteSpaces(target.id);
    for (const { condition } of conditions.items) {
        const updated = check(
            'updateSiteSpaceById',
            await admin.api.orgs.updateSiteSpaceById(org.id, target.id, ss.id, { condition }),
            { status: 200 },
        );
        assert.equal(updated.condition, condition);
    }

    const badSchemas = [
        { type: 'object', properties: { plan: { type: 'string', description: 'Plan' } } },
        { type: 'object', properties: { isBeta: { type: 'nonsense' } } },
        { type: 'object', properties: 5 },
        { type: 'array' },
    ];
    for (const jsonSchema of badSchemas) {
        await expectApiError(
            admin.api.orgs.updateSiteAdaptiveSchema(org.id, site.id, { jsonSchema }),
            400,
            'updateSiteAdaptiveSchema',
        );
    }
    await expectApiError(
        reader.api.orgs.updateSiteAdaptiveSchema(org.id, site.id, { jsonSchema: DESCRIBED_SCHEMA }),
        403,
        'updateSiteAdaptiveSchema',
    );
    assert.deepEqual(
        check('getSiteAdaptiveSchema', await admin.api.orgs.getSiteAdaptiveSchema(org.id, site.id), { status: 200 }),
        saved,
        'refused updates change nothing',
    );
});

test('deleting a space removes its site spaces from every site', async () => {
    const [doomed, kept] = await Promise.all(['Doomed Space', 'Kept Space'].map(createSpace));
    const one = await createSite(admin, { title: 'Holds Doomed', spaces: [doomed.id, kept.id] });
    const two = await createSite(admin, { title: 'Also Doomed' });
    await addSection(two.id, { spaceId: kept.id, title: 'Kept' });
    await addSection(two.id, { spaceId: doomed.id, title: 'Doomed' });
    assert.equal((await getSite(admin, two.id)).siteSpaces, 2);

    check('deleteSpaceById', await admin.api.spaces.deleteSpaceById(doomed.id), { status: 204 });
    for (const site of [one, two]) {
        const left = await siteSpaces(site.id);
        assert.deepEqual(left.map((x) => x.space.id), [kept.id], `${site.title} keeps only the other space`);
        assert.deepEqual(allSiteSpaces(await structureOf(site.id)).map((x) => x.space.id), [kept.id]);
        assert.equal((await getSite(admin, site.id)).siteSpaces, 1);
    }
});

test('access: members read every site operation; writes need an org admin; outsiders 404; no token 401', async () => {
    const [a, b] = await Promise.all(['Access A', 'Access B'].map(createSpace));
    const site = await createSite(admin, { title: 'Guarded Site', spaces: [a.id] });
    const section = await addSection(site.id, { spaceId: b.id, title: 'Guarded' });
    const ss = section.siteSpaces[0];
    const group = await addGroup(site.id, { title: 'Guarded Group', sections: [section.id] });
    const link = await createShareLink(site.id, 'Guarded Link');
    check(
        'updateSiteAdaptiveSchema',
        await admin.api.orgs.updateSiteAdaptiveSchema(org.id, site.id, { jsonSchema: DESCRIBED_SCHEMA }),
        { status: 200 },
    );
    await publish(site.id);
    const o = org.id;
    const s = site.id;

    const reads = [
        ['listSites', (w) => w.api.orgs.listSites(o)],
        ['getSiteById', (w) => w.api.orgs.getSiteById(o, s)],
        ['getSiteStructure', (w) => w.api.orgs.getSiteStructure(o, s)],
        ['getSiteCustomizationById', (w) => w.api.orgs.getSiteCustomizationById(o, s)],
        ['getPublishedContentSite', (w) => w.api.orgs.getPublishedContentSite(o, s)],
        ['getSiteAdaptiveSchema', (w) => w.api.orgs.getSiteAdaptiveSchema(o, s)],
        ['listSiteAdaptiveTemplateConditions', (w) => w.api.orgs.listSiteAdaptiveTemplateConditions(o, s)],
        ['listSiteSpaces', (w) => w.api.orgs.listSiteSpaces(o, s)],
        ['listSiteSections', (w) => w.api.orgs.listSiteSections(o, s)],
        ['listSiteSectionGroups', (w) => w.api.orgs.listSiteSectionGroups(o, s)],
    ];
    for (const [op, call] of reads) {
        const mine = check(op, await call(admin), { status: 200 });
        for (const who of [creator, reader]) {
            const theirs = check(op, await call(who), { status: 200 });
            if (op === 'getSiteById' || op === 'getSiteAdaptiveSchema') assert.deepEqual(theirs, mine, op);
        }
        await expectApiError(call(guest), 403, op);
        await expectApiError(call(outsider), 404, op);
        await expectApiError(call(anonymous), 401, op);
    }

    const [topSection] = await sections(s);
    assert.notEqual(topSection.id, section.id);
    const position = { before: { type: 'site-section', id: topSection.id } };
    const writes = [
        ['createSite', (w) => w.api.orgs.createSite(o, { title: 'Intruder' })],
        ['updateSiteById', (w) => w.api.orgs.updateSiteById(o, s, { title: 'Intruder' })],
        ['deleteSiteById', (w) => w.api.orgs.deleteSiteById(o, s)],
        ['publishSite', (w) => w.api.orgs.publishSite(o, s)],
        ['unpublishSite', (w) => w.api.orgs.unpublishSite(o, s)],
        [
            'sortSiteStructure',
            (w) => w.api.orgs.sortSiteStructure(o, s, { item: { type: 'site-section-group', id: group.id }, position }),
        ],
        ['updateSiteCustomizationById', (w) => w.api.orgs.updateSiteCustomizationById(o, s, { title: 'Intruder' })],
        [
            'updateSiteAdaptiveSchema',
            (w) => w.api.orgs.updateSiteAdaptiveSchema(o, s, { jsonSchema: { type: 'object', properties: {} } }),
        ],
        ['addSpaceToSite', (w) => w.api.orgs.addSpaceToSite(o, s, { spaceId: a.id })],
        ['updateSiteSpaceById', (w) => w.api.orgs.updateSiteSpaceById(o, s, ss.id, { path: 'intruder' })],
        ['deleteSiteSpaceById', (w) => w.api.orgs.deleteSiteSpaceById(o, s, ss.id)],
        ['moveSiteSpace', (w) => w.api.orgs.moveSiteSpace(o, s, ss.id, {})],
        ['addSectionToSite', (w) => w.api.orgs.addSectionToSite(o, s, { spaceId: a.id })],
        ['updateSiteSectionById', (w) => w.api.orgs.updateSiteSectionById(o, s, section.id, { title: 'Intruder' })],
        ['deleteSiteSectionById', (w) => w.api.orgs.deleteSiteSectionById(o, s, section.id)],
        ['moveSiteSection', (w) => w.api.orgs.moveSiteSection(o, s, section.id, {})],
        ['addSectionGroupToSite', (w) => w.api.orgs.addSectionGroupToSite(o, s, { title: 'Intruder' })],
        [
            'updateSiteSectionGroupById',
            (w) => w.api.orgs.updateSiteSectionGroupById(o, s, group.id, { title: 'Intruder' }),
        ],
        ['deleteSiteSectionGroupById', (w) => w.api.orgs.deleteSiteSectionGroupById(o, s, group.id)],
        ['addSectionToGroup', (w) => w.api.orgs.addSectionToGroup(o, s, group.id, { sectionId: section.id })],
        ['removeSectionFromGroup', (w) => w.api.orgs.removeSectionFromGroup(o, s, group.id, section.id)],
        ['moveSiteSectionGroup', (w) => w.api.orgs.moveSiteSectionGroup(o, s, group.id, {})],
        ['listSiteShareLinks', (w) => w.api.orgs.listSiteShareLinks(o, s)],
        ['createSiteShareLink', (w) => w.api.orgs.createSiteShareLink(o, s, { name: 'Intruder' })],
        ['updateSiteShareLinkById', (w) => w.api.orgs.updateSiteShareLinkById(o, s, link.id, { active: false })],
        ['deleteSiteShareLinkById', (w) => w.api.orgs.deleteSiteShareLinkById(o, s, link.id)],
    ];
    const snapshot = async () => ({
        site: await getSite(admin, s),
        structure: await structureOf(s),
        groups: await groups(s),
        links: check('listSiteShareLinks', await admin.api.orgs.listSiteShareLinks(o, s), { status: 200 }),
        customization: check('getSiteCustomizationById', await admin.api.orgs.getSiteCustomizationById(o, s), {
            status: 200,
        }),
        sites: check('listSites', await admin.api.orgs.listSites(o), { status: 200 }).count,
    });
    const before = await snapshot();
    for (const [op, call] of writes) {
        for (const who of [creator, reader, guest]) await expectApiError(call(who), 403, op);
        await expectApiError(call(outsider), 404, op);
        await expectApiError(call(anonymous), 401, op);
    }
    assert.deepEqual(await snapshot(), before, 'refused writes change nothing');
});

test('site space customization: an override over the site; PATCH merges, null resets, DELETE 205 then 204', async () => {
    const space = await createSpace('Variant Guide');
    const site = await createSite(admin, { title: 'Variants', spaces: [space.id] });
    const [ss] = await siteSpaces(site.id);
    const ssId = ss.id;
    const get = async (who = admin) =>
        check(
            'getSiteSpaceCustomizationById',
            await who.api.orgs.getSiteSpaceCustomizationById(org.id, site.id, ssId),
            { status: 200 },
        );
    const patch = async (body) =>
        check(
            'overrideSiteSpaceCustomizationById',
            await admin.api.orgs.overrideSiteSpaceCustomizationById(org.id, site.id, ssId, body),
            { status: 200 },
        );
    const siteCustom = check(
        'getSiteCustomizationById',
        await admin.api.orgs.getSiteCustomizationById(org.id, site.id),
        { status: 200 },
    );
    assert.deepEqual(await get(reader), siteCustom, 'no override: the site space shows the site');

    let c = await patch({ title: 'Variant Title', styling: { theme: 'muted' } });
    assert.equal(c.title, 'Variant Title');
    assert.equal(c.styling.theme, 'muted');
    assert.deepEqual(c.styling.primaryColor, siteCustom.styling.primaryColor);
    c = await patch({ styling: { theme: null, primaryColor: { light: '#112233', dark: '#445566' } } });
    assert.equal(c.styling.theme, siteCustom.styling.theme, 'null resets to the site');
    assert.deepEqual(c.styling.primaryColor, { light: '#112233', dark: '#445566' });
    assert.equal(c.title, 'Variant Title', 'fields left out stay');
    assert.deepEqual(await get(reader), c);

    for (const body of [{ title: 'x' }, { styling: { theme: 'neon' } }, { nope: true }]) {
        await expectApiError(
            admin.api.orgs.overrideSiteSpaceCustomizationById(org.id, site.id, ssId, body),
            400,
            'overrideSiteSpaceCustomizationById',
        );
    }
    await expectApiError(
        reader.api.orgs.overrideSiteSpaceCustomizationById(org.id, site.id, ssId, { title: 'Mine' }),
        403,
        'overrideSiteSpaceCustomizationById',
    );
    await expectApiError(
        admin.api.orgs.getSiteSpaceCustomizationById(org.id, site.id, NO_SUCH_ITEM),
        404,
        'getSiteSpaceCustomizationById',
    );

    check(
        'deleteSiteSpaceCustomizationById',
        await admin.api.orgs.deleteSiteSpaceCustomizationById(org.id, site.id, ssId),
        { status: 205 },
    );
    check(
        'deleteSiteSpaceCustomizationById',
        await admin.api.orgs.deleteSiteSpaceCustomizationById(org.id, site.id, ssId),
        { status: 204 },
    );
    assert.equal((await get()).title, siteCustom.title);
});

test('site MCP servers: create 201, get, list, update, delete 205 then 204; admins only', async () => {
    const site = await createSite(admin, { title: 'With MCP' });
    const res = await admin.api.orgs.createSiteMcpServer(org.id, site.id, {
        name: 'Tickets',
        url: 'https://mcp.example.com/',
        headers: { Authorization: 'Bearer s3cret' },
    });
    const server = check('createSiteMcpServer', res, { status: 201 });
    assert.equal(res.headers.get('location'), server.urls.location);
    assert.deepEqual(server.headers, { Authorization: 'Bearer s3cret' });
    const got = check('getSiteMcpServerById', await admin.api.orgs.getSiteMcpServerById(org.id, site.id, server.id), {
        status: 200,
    });
    assert.deepEqual(got, server);
    const { items } = await listAll('listSiteMcpServers', (page) =>
        admin.api.orgs.listSiteMcpServers(org.id, site.id, { page }),
    );
    assert.deepEqual(items, [server]);
    const updated = check(
        'updateSiteMcpServerById',
        await admin.api.orgs.updateSiteMcpServerById(org.id, site.id, server.id, { name: 'Support' }),
        { status: 200 },
    );
    assert.equal(updated.name, 'Support');
    assert.deepEqual(updated.headers, server.headers, 'what the PATCH leaves out stays');

    await expectApiError(
        admin.api.orgs.createSiteMcpServer(org.id, site.id, { name: 'Bad', url: 'ftp://x.example/', headers: {} }),
        400,
        'createSiteMcpServer',
    );
    await expectApiError(reader.api.orgs.listSiteMcpServers(org.id, site.id), 403, 'listSiteMcpServers');
    await expectApiError(
        reader.api.orgs.getSiteMcpServerById(org.id, site.id, server.id),
        403,
        'getSiteMcpServerById',
    );
    await expectApiError(
        admin.api.orgs.getSiteMcpServerById(org.id, site.id, NO_SUCH_ITEM),
        404,
        'getSiteMcpServerById',
    );

    check('deleteSiteMcpServerById', await admin.api.orgs.deleteSiteMcpServerById(org.id, site.id, server.id), {
        status: 205,
    });
    check('deleteSiteMcpServerById', await admin.api.orgs.deleteSiteMcpServerById(org.id, site.id, server.id), {
        status: 204,
    });
});

test('searchSiteContent: the site search, grouped by space, as an anonymous visitor sees it', async () => {
    const space = await createSpace('Searchable Guide');
    const cr = await createChangeRequest(admin, space.id, 'Pages');
    await updateContent(server, admin, space.id, cr.id, [
        { operation: 'insert_page', title: 'Open', document: { markdown: 'Narwhal for all.' } },
        { operation: 'insert_page', title: 'Hidden', hidden: true, document: { markdown: 'Narwhal hidden.' } },
    ]);
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
    const site = await createSite(admin, { title: 'Searchable', spaces: [space.id] });
    await publish(site.id);
    const [ss] = await siteSpaces(site.id);
    for (const body of [
        { query: 'narwhal' },
        { query: 'narwhal', scope: { mode: 'all' } },
        { query: 'narwhal', scope: { mode: 'specific', siteSpaceIds: [ss.id] } },
        { query: 'narwhal', scope: { mode: 'default' } },
    ]) {
        const res = check('searchSiteContent', await reader.api.orgs.searchSiteContent(org.id, site.id, body), {
            status: 200,
        });
        assert.equal(res.items.length, 1, JSON.stringify(res));
        assert.equal(res.items[0].id, space.id);
        assert.deepEqual(
            res.items[0].pages.map((p) => p.title),
            ['Open'],
            'a hidden page is not searched',
        );
    }
    await expectApiError(
        admin.api.orgs.searchSiteContent(org.id, site.id, { query: 'narwhal', scope: { mode: 'specific', siteSpaceIds: [NO_SUCH_ITEM] } }),
        400,
        'searchSiteContent',
    );
    await expectApiError(outsider.api.orgs.searchSiteContent(org.id, site.id, { query: 'narwhal' }), 404, 'searchSiteContent');
});

test('listPermissionsAggregateInSite: every member with their organization role; no guests', async () => {
    const site = await createSite(admin, { title: 'Who reads' });
    const { items } = await listAll('listPermissionsAggregateInSite', (page) =>
        reader.api.orgs.listPermissionsAggregateInSite(org.id, site.id, { page }),
    );
    const byUser = Object.fromEntries(items.map((p) => [p.user.id, p.permission]));
    assert.equal(byUser[admin.id], 'admin');
    assert.equal(byUser[creator.id], 'create');
    assert.equal(byUser[reader.id], 'read');
    assert.equal(byUser[guest.id], undefined, 'a guest does not open sites');
    for (const p of items) assert.deepEqual(p.origin, { type: 'organization', organization: org.id });
    await expectApiError(guest.api.orgs.listPermissionsAggregateInSite(org.id, site.id), 403, 'listPermissionsAggregateInSite');
});

test('getSitePublishingPreviewById: a URL with a visitor token for the claims asked; admins only', async () => {
    const space = await createSpace('Preview Guide');
    const site = await createSite(admin, { title: 'Previewed', spaces: [space.id] });
    await publish(site.id);
    const res = check(
        'getSitePublishingPreviewById',
        await admin.api.orgs.getSitePublishingPreviewById(org.id, site.id, { claims: '(beta:!t)' }),
        { status: 200 },
    );
    assert.match(res.url, /\/sites\/[^/]+\/\?jwt_token=[\w-]+\.[\w-]+\.[\w-]+$/);
    await expectApiError(
        admin.api.orgs.getSitePublishingPreviewById(org.id, site.id, { claims: '(beta:' }),
        400,
        'getSitePublishingPreviewById',
    );
    await expectApiError(
        reader.api.orgs.getSitePublishingPreviewById(org.id, site.id),
        403,
        'getSitePublishingPreviewById',
    );
});

// Collections: create, list (nested or not, pagination), get, update, delete, their spaces,
// move and transfer.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg, listAll } from '../lib/client.js';

let server;
let admin; // admin of `org` and of `dest`
let creator; // `create` member of `org`
let reader; // `read` member of `org`
let guest; // guest of `org` (no grants)
let outsider;
let stranger; // owns `foreign` (admin is a `create` member there) and `hidden`
let org;
let dest;
let foreign;
let hidden;
before(async () => {
    server = await startServer();
    [admin, creator, reader, guest, outsider, stranger] = await Promise.all(
        ['admin', 'creator', 'reader', 'guest', 'outsider', 'stranger'].map((label) => newUser(server, label)),
    );
    org = await setupOrg(server, admin, 'Collections Org', [
        { user: creator, role: 'create' },
        { user: reader, role: 'read' },
        { user: guest, role: null },
    ]);
    dest = await setupOrg(server, admin, 'Collections Destination');
    foreign = await setupOrg(server, stranger, 'Collections Foreign', [{ user: admin, role: 'create' }]);
    hidden = await setupOrg(server, stranger, 'Collections Hidden');
});
after(async () => {
    await server?.stop();
});

const NO_SUCH_COLLECTION = 'nosuchcollection';

async function createCollection(who, body, orgId = org.id) {
    const res = await who.api.orgs.createCollection(orgId, body);
    const collection = check('createCollection', res, { status: 201 });
    assert.equal(res.headers.get('location'), collection.urls.location, 'createCollection 201 declares a Location header');
    return collection;
}

async function createSpace(who, body, orgId = org.id) {
    return check('createSpace', await who.api.orgs.createSpace(orgId, body), { status: 201 });
}

async function getCollection(who, id) {
    return check('getCollectionById', await who.api.collections.getCollectionById(id), { status: 200 });
}

/** Ids of the collections `who` sees, in list order (every page). */
async function collectionIds(who, { nested, orgId = org.id } = {}) {
    const { items } = await listAll('listCollectionsInOrganizationById', (page) =>
        who.api.orgs.listCollectionsInOrganizationById(orgId, { nested, page }),
    );
    return items.map((c) => c.id);
}

async function spacesIn(who, collectionId) {
    const { items } = await listAll('listSpacesInCollectionById', (page) =>
        who.api.collections.listSpacesInCollectionById(collectionId, { page }),
    );
    return items.map((s) => s.id);
}

test('createCollection: 201 with the collection, nested under a parent', async () => {
    const top = await createCollection(admin, { title: 'Product' });
    assert.equal(top.object, 'collection');
    assert.equal(top.title, 'Product');
    assert.equal(top.organization, org.id);
    assert.equal(top.parent, undefined);
    assert.equal(top.defaultLevel, 'inherit');
    assert.equal(top.urls.location, `${server.url}/v1/collections/${top.id}`);
    assert.equal(top.permissions.admin, true);
    assert.equal(top.permissions.create, true);
    assert.equal(top.permissions.view, true);

    const child = await createCollection(creator, { title: 'APIs', parent: top.id });
    assert.equal(child.parent, top.id);
    assert.equal(child.permissions.create, true);

    const untitled = await createCollection(admin, {});
    assert.equal(untitled.title, '');
    assert.deepEqual(await getCollection(creator, child.id), child);
});

test('createCollection: 400 for bad fields, 403 below `create`, 404 for outsiders', async () => {
    await expectApiError(admin.api.orgs.createCollection(org.id, { title: 'x'.repeat(51) }), 400, 'createCollection');
    await expectApiError(admin.api.orgs.createCollection(org.id, { title: 'Orphan', parent: NO_SUCH_COLLECTION }), 400);
    await expectApiError(reader.api.orgs.createCollection(org.id, { title: 'Nope' }), 403, 'createCollection');
    await expectApiError(guest.api.orgs.createCollection(org.id, { title: 'Nope' }), 403, 'createCollection');
    await expectApiError(outsider.api.orgs.createCollection(org.id, { title: 'Nope' }), 404, 'createCollection');
});

test('listCollectionsInOrganizationById: nested by default, nested=false for the top level', async () => {
    const top = await createCollection(admin, { title: 'List Top' });
    const mid = await createCollection(admin, { title: 'List Mid', parent: top.id });
    const leaf = await createCollection(admin, { title: 'List Leaf', parent: mid.id });

    const nested = check(
        'listCollectionsInOrganizationById',
        await admin.api.orgs.listCollectionsInOrganizationById(org.id),
        { status: 200 },
    );
    const ids = nested.items.map((c) => c.id);
    for (const id of [top.id, mid.id, leaf.id]) assert.ok(ids.includes(id), 'nested lists every level');
    assert.equal(nested.count, nested.items.length);
    assert.deepEqual(await collectionIds(admin, { nested: true }), ids);

    const flat = check(
        'listCollectionsInOrganizationById',
        await admin.api.orgs.listCollectionsInOrganizationById(org.id, { nested: false }),
        { status: 200 },
    );
    assert.ok(flat.items.some((c) => c.id === top.id));
    for (const c of flat.items) assert.equal(c.parent, undefined, 'nested=false keeps the top level only');
    assert.deepEqual(
        flat.items.map((c) => c.id),
        nested.items.filter((c) => c.parent === undefined).map((c) => c.id),
    );

    const { items, pages } = await listAll('listCollectionsInOrganizationById', (page) =>
        admin.api.orgs.listCollectionsInOrganizationById(org.id, { limit: 1, page }),
    );
    assert.deepEqual(items.map((c) => c.id), ids, 'walking pages yields the same collections');
    assert.ok(pages.length > 1);
    for (const p of pages) assert.equal(p.count, ids.length);

    // A `read` member sees them read-only; a guest without grants sees none.
    const asReader = check(
        'listCollectionsInOrganizationById',
        await reader.api.orgs.listCollectionsInOrganizationById(org.id),
        { status: 200 },
    );
    assert.deepEqual(asReader.items.map((c) => c.id), ids);
    for (const c of asReader.items) {
        assert.equal(c.permissions.admin, false);
        assert.equal(c.permissions.create, false);
    }
    const asGuest = check(
        'listCollectionsInOrganizationById',
        await guest.api.orgs.listCollectionsInOrganizationById(org.id),
        { status: 200 },
    );
    assert.deepEqual(asGuest.items, []);
    await expectApiError(
        outsider.api.orgs.listCollectionsInOrganizationById(org.id),
        404,
        'listCollectionsInOrganizationById',
    );
});

test('getCollectionById: 200; 404 when unknown or invisible', async () => {
    const collection = await createCollection(admin, { title: 'Fetched' });
    const got = await getCollection(admin, collection.id);
    assert.deepEqual(got, collection);
    const asReader = await getCollection(reader, collection.id);
    assert.equal(asReader.permissions.admin, false);
    assert.equal(asReader.permissions.view, true);
    await expectApiError(admin.api.collections.getCollectionById(NO_SUCH_COLLECTION), 404, 'getCollectionById');
    await expectApiError(outsider.api.collections.getCollectionById(collection.id), 404, 'getCollectionById');
    await expectApiError(guest.api.collections.getCollectionById(collection.id), 404, 'getCollectionById');
});

test('updateCollectionById: title, description, defaultLevel; 400 / 403 / 404', async () => {
    const collection = await createCollection(admin, { title: 'Draft' });
    const update = async (body) =>
        check('updateCollectionById', await admin.api.collections.updateCollectionById(collection.id, body), {
            status: 200,
        });
    const updated = await update({ title: 'APIs', description: 'All of them', defaultLevel: 'comment' });
    assert.equal(updated.id, collection.id);
    assert.equal(updated.title, 'APIs');
    assert.equal(updated.description, 'All of them');
    assert.equal(updated.defaultLevel, 'comment');
    assert.equal((await update({ defaultLevel: null })).defaultLevel, null);
    assert.equal((await update({ defaultLevel: 'inherit' })).defaultLevel, 'inherit');
    const got = await getCollection(admin, collection.id);
    assert.equal(got.title, 'APIs');
    assert.equal(got.description, 'All of them');
    assert.equal(got.defaultLevel, 'inherit');

    for (const body of [{ title: 't'.repeat(51) }, { description: 'd'.repeat(101) }, { defaultLevel: 'owner' }]) {
        await expectApiError(admin.api.collections.updateCollectionById(collection.id, body), 400, 'updateCollectionById');
    }
    await expectApiError(
        reader.api.collections.updateCollectionById(collection.id, { title: 'Reader' }),
        403,
        'updateCollectionById',
    );
    await expectApiError(
        outsider.api.collections.updateCollectionById(collection.id, { title: 'Outsider' }),
        404,
        'updateCollectionById',
    );
    await expectApiError(
        admin.api.collections.updateCollectionById(NO_SUCH_COLLECTION, { title: 'Ghost' }),
        404,
        'updateCollectionById',
    );
    assert.equal((await getCollection(admin, collection.id)).title, 'APIs', 'nothing changed');
});

test('listSpacesInCollectionById: the spaces directly inside, paginated', async () => {
    const collection = await createCollection(admin, { title: 'Shelf' });
    const sub = await createCollection(admin, { title: 'Sub Shelf', parent: collection.id });
    const a = await createSpace(admin, { title: 'Shelf A', parent: collection.id });
    const b = await createSpace(admin, { title: 'Shelf B', parent: collection.id });
    const c = await createSpace(admin, { title: 'Shelf C', parent: collection.id });
    const deep = await createSpace(admin, { title: 'Deep', parent: sub.id });
    await createSpace(admin, { title: 'Not Shelved' });

    const first = check(
        'listSpacesInCollectionById',
        await admin.api.collections.listSpacesInCollectionById(collection.id),
        { status: 200 },
    );
    assert.deepEqual(first.items.map((s) => s.id), [a.id, b.id, c.id]);
    for (const s of first.items) assert.equal(s.parent, collection.id);
    const { items, pages } = await listAll('listSpacesInCollectionById', (page) =>
        admin.api.collections.listSpacesInCollectionById(collection.id, { limit: 1, page }),
    );
    assert.deepEqual(items.map((s) => s.id), [a.id, b.id, c.id]);
    assert.equal(pages.length, 3);
    for (const p of pages) assert.equal(p.count, 3);
    assert.deepEqual(await spacesIn(admin, sub.id), [deep.id]);

    // Deleted spaces leave it.
    check('deleteSpaceById', await admin.api.spaces.deleteSpaceById(b.id), { status: 204 });
    assert.deepEqual(await spacesIn(reader, collection.id), [a.id, c.id]);
    await expectApiError(
        outsider.api.collections.listSpacesInCollectionById(collection.id),
        404,
        'listSpacesInCollectionById',
    );
    await expectApiError(
        admin.api.collections.listSpacesInCollectionById(NO_SUCH_COLLECTION),
        404,
        'listSpacesInCollectionById',
    );
});

test('deleteCollectionById: 204; its spaces and collections move up to its parent', async () => {
    const parent = await createCollection(admin, { title: 'Parent' });
    const doomed = await createCollection(admin, { title: 'Doomed', parent: parent.id });
    const child = await createCollection(admin, { title: 'Survivor', parent: doomed.id });
    const space = await createSpace(admin, { title: 'Rescued', parent: doomed.id });

    await expectApiError(reader.api.collections.deleteCollectionById(doomed.id), 403, 'deleteCollectionById');
    check('deleteCollectionById', await admin.api.collections.deleteCollectionById(doomed.id), { status: 204 });
    await expectApiError(admin.api.collections.getCollectionById(doomed.id), 404, 'getCollectionById');
    assert.ok(!(await collectionIds(admin)).includes(doomed.id));

    const rescued = check('getSpaceById', await admin.api.spaces.getSpaceById(space.id), { status: 200 });
    assert.equal(rescued.parent, parent.id);
    assert.equal(rescued.deletedAt, undefined);
    assert.deepEqual(await spacesIn(admin, parent.id), [space.id]);
    assert.equal((await getCollection(admin, child.id)).parent, parent.id);

    // A top-level collection: its spaces land at the root.
    const top = await createCollection(admin, { title: 'Top Doomed' });
    const rooted = await createSpace(admin, { title: 'Rooted', parent: top.id });
    check('deleteCollectionById', await admin.api.collections.deleteCollectionById(top.id), { status: 204 });
    const atRoot = check('getSpaceById', await admin.api.spaces.getSpaceById(rooted.id), { status: 200 });
    assert.equal(atRoot.parent, undefined);

    check('deleteCollectionById', await admin.api.collections.deleteCollectionById(doomed.id), { status: 204 });
    check('deleteCollectionById', await admin.api.collections.deleteCollectionById(NO_SUCH_COLLECTION), { status: 204 });
});

test('deleteCollectionById: an `in-collection` space moved to the root stops being `in-collection`', async () => {
    // ContentVisibility: "`in-collection`: … Only available for spaces in a collection."
    const top = await createCollection(admin, { title: 'Visibility Doomed' });
    const space = await createSpace(admin, { title: 'Scoped', parent: top.id, visibility: 'in-collection' });
    assert.equal(space.visibility, 'in-collection');
    check('deleteCollectionById', await admin.api.collections.deleteCollectionById(top.id), { status: 204 });
    const after = check('getSpaceById', await admin.api.spaces.getSpaceById(space.id), { status: 200 });
    assert.equal(after.parent, undefined);
    assert.notEqual(after.visibility, 'in-collection', 'a space at the root cannot be in-collection');
});

test('moveCollection: among siblings, to the root, never under itself or its descendants', async () => {
    const a = await createCollection(admin, { title: 'Move A' });
    const b = await createCollection(admin, { title: 'Move B', parent: a.id });
    const c = await createCollection(admin, { title: 'Move C', parent: b.id });

    await expectApiError(admin.api.collections.moveCollection(a.id, { parent: c.id }), 400, 'moveCollection');
    await expectApiError(admin.api.collections.moveCollection(a.id, { parent: b.id }), 400, 'moveCollection');
    await expectApiError(admin.api.collections.moveCollection(a.id, { parent: a.id }), 400, 'moveCollection');
    await expectApiError(admin.api.collections.moveCollection(a.id, {}), 400, 'moveCollection');
    await expectApiError(admin.api.collections.moveCollection(a.id, { parent: NO_SUCH_COLLECTION }), 400);
    assert.equal((await getCollection(admin, a.id)).parent, undefined, 'refused moves change nothing');

    const rooted = check('moveCollection', await admin.api.collections.moveCollection(c.id, { parent: null }), {
        status: 200,
    });
    assert.equal(rooted.id, c.id);
    assert.equal(rooted.parent, undefined);
    const top = (await collectionIds(admin, { nested: false })).filter((id) => [a.id, c.id].includes(id));
    assert.deepEqual(top, [a.id, c.id]);

    const before = check(
        'moveCollection',
        await admin.api.collections.moveCollection(c.id, {
            position: { before: { type: 'collection', collection: a.id } },
        }),
        { status: 200 },
    );
    assert.equal(before.parent, undefined);
    const reordered = (await collectionIds(admin, { nested: false })).filter((id) => [a.id, c.id].includes(id));
    assert.deepEqual(reordered, [c.id, a.id]);

    // Under another collection, at a position among the spaces already there.
    const resident = await createSpace(admin, { title: 'Resident', parent: a.id });
    const under = check(
        'moveCollection',
        await admin.api.collections.moveCollection(c.id, {
            parent: a.id,
            position: { before: { type: 'space', space: resident.id } },
        }),
        { status: 200 },
    );
    assert.equal(under.parent, a.id);
    assert.equal((await getCollection(admin, c.id)).parent, a.id);
    await expectApiError(
        admin.api.collections.moveCollection(b.id, { position: { after: { type: 'collection', collection: a.id } } }),
        400,
        'moveCollection',
    );
    await expectApiError(reader.api.collections.moveCollection(c.id, { parent: null }), 403, 'moveCollection');
    await expectApiError(outsider.api.collections.moveCollection(c.id, { parent: null }), 404, 'moveCollection');
});

test('transferCollection: the collection, its sub-collections and spaces change organization', async () => {
    const top = await createCollection(admin, { title: 'Emigrants' });
    const sub = await createCollection(admin, { title: 'Emigrant Kids', parent: top.id });
    const s1 = await createSpace(admin, { title: 'Emigrant Space', parent: top.id });
    const s2 = await createSpace(admin, { title: 'Emigrant Kid Space', parent: sub.id });

    const moved = check(
        'transferCollection',
        await admin.api.collections.transferCollection(top.id, { organization: dest.id }),
        { status: 200 },
    );
    assert.equal(moved.id, top.id);
    assert.equal(moved.organization, dest.id);
    assert.equal(moved.parent, undefined);
    const subAfter = await getCollection(admin, sub.id);
    assert.equal(subAfter.organization, dest.id);
    assert.equal(subAfter.parent, top.id);
    for (const id of [s1.id, s2.id]) {
        const s = check('getSpaceById', await admin.api.spaces.getSpaceById(id), { status: 200 });
        assert.equal(s.organization, dest.id);
    }
    assert.deepEqual(await spacesIn(admin, top.id), [s1.id]);
    assert.deepEqual(await spacesIn(admin, sub.id), [s2.id]);
    const destIds = await collectionIds(admin, { orgId: dest.id });
    assert.ok(destIds.includes(top.id) && destIds.includes(sub.id));
    const srcIds = await collectionIds(admin);
    assert.ok(!srcIds.includes(top.id) && !srcIds.includes(sub.id), 'left the source organization');
    await expectApiError(reader.api.collections.getCollectionById(top.id), 404, 'getCollectionById');

    // Into a collection of the target organization.
    const second = await createCollection(admin, { title: 'Second Wave' });
    const placed = check(
        'transferCollection',
        await admin.api.collections.transferCollection(second.id, { organization: dest.id, parent: top.id }),
        { status: 200 },
    );
    assert.equal(placed.organization, dest.id);
    assert.equal(placed.parent, top.id);
});

test('transferCollection: 403 without admin on the target, 404 for unknown or invisible orgs', async () => {
    const collection = await createCollection(admin, { title: 'Stays Home' });
    await expectApiError(
        admin.api.collections.transferCollection(collection.id, { organization: foreign.id }),
        403,
        'transferCollection',
    );
    await expectApiError(
        admin.api.collections.transferCollection(collection.id, { organization: hidden.id }),
        404,
        'transferCollection',
    );
    await expectApiError(
        admin.api.collections.transferCollection(collection.id, { organization: 'nosuchorg0000000' }),
        404,
        'transferCollection',
    );
    await expectApiError(
        creator.api.collections.transferCollection(collection.id, { organization: dest.id }),
        403,
        'transferCollection',
    );
    await expectApiError(
        outsider.api.collections.transferCollection(collection.id, { organization: dest.id }),
        404,
        'transferCollection',
    );
    assert.equal((await getCollection(admin, collection.id)).organization, org.id, 'refused transfers change nothing');
});

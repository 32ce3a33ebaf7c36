// Spaces: create, list, get, update, delete / restore, duplicate, move, transfer.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg, listAll } from '../lib/client.js';

let server;
let admin; // admin of `org` and of `dest`
let editor; // `edit` member of `org`
let reader; // `read` member of `org`
let guest; // guest of `org` (no grants)
let outsider;
let stranger; // owns `foreign` (admin is an `edit` member there) and `hidden`
let org;
let dest;
let foreign;
let hidden;
before(async () => {
    server = await startServer();
    [admin, editor, reader, guest, outsider, stranger] = await Promise.all(
        ['admin', 'editor', 'reader', 'guest', 'outsider', 'stranger'].map((label) => newUser(server, label)),
    );
    org = await setupOrg(server, admin, 'Spaces Org', [
        { user: editor, role: 'edit' },
        { user: reader, role: 'read' },
        { user: guest, role: null },
    ]);
    dest = await setupOrg(server, admin, 'Spaces Destination');
    foreign = await setupOrg(server, stranger, 'Spaces Foreign', [{ user: admin, role: 'edit' }]);
    hidden = await setupOrg(server, stranger, 'Spaces Hidden');
});
after(async () => {
    await server?.stop();
});

const NO_SUCH_SPACE = 'nosuchspace00000';

async function createSpace(who, body, orgId = org.id) {
    const res = await who.api.orgs.createSpace(orgId, body);
    const space = check('createSpace', res, { status: 201 });
    assert.equal(res.headers.get('location'), space.urls.location, 'createSpace 201 declares a Location header');
    return space;
}

async function createCollection(who, body, orgId = org.id) {
    return check('createCollection', await who.api.orgs.createCollection(orgId, body), { status: 201 });
}

async function getSpace(who, id) {
    return check('getSpaceById', await who.api.spaces.getSpaceById(id), { status: 200 });
}

/** Ids of every space `who` sees in the organization, in list order. */
async function spaceIds(who, orgId = org.id) {
    const { items } = await listAll('listSpacesInOrganizationById', (page) =>
        who.api.orgs.listSpacesInOrganizationById(orgId, { page }),
    );
    return items.map((s) => s.id);
}

/** `ids` in the order the organization lists them. */
async function listedOrder(ids, orgId = org.id) {
    return (await spaceIds(admin, orgId)).filter((id) => ids.includes(id));
}

test('createSpace: 201 with the space and its settings', async () => {
    const space = await createSpace(admin, { title: 'Handbook', emoji: '📘', language: 'fr' });
    assert.equal(space.object, 'space');
    assert.equal(space.title, 'Handbook');
    assert.equal(space.emoji, '📘');
    assert.equal(space.language, 'fr');
    assert.equal(space.organization, org.id);
    assert.equal(space.visibility, 'private');
    assert.equal(space.editMode, 'live');
    assert.equal(space.defaultLevel, 'inherit');
    assert.equal(space.parent, undefined);
    assert.equal(space.deletedAt, undefined);
    assert.equal(space.urls.location, `${server.url}/v1/spaces/${space.id}`);
    assert.equal(typeof space.revision, 'string');
    assert.equal(space.permissions.admin, true);
    assert.equal(space.permissions.edit, true);
    assert.equal(space.permissions.comment, true);

    const locked = await createSpace(admin, { title: 'Locked', editMode: 'locked', visibility: 'unlisted' });
    assert.equal(locked.editMode, 'locked');
    assert.equal(locked.visibility, 'unlisted');
    assert.equal(locked.permissions.edit, false, 'a locked space refuses edits');
    assert.equal(locked.permissions.admin, true);

    const untitled = await createSpace(admin, {});
    assert.equal(untitled.title, '');

    const collection = await createCollection(admin, { title: 'Home of Spaces' });
    const inside = await createSpace(admin, { title: 'Inside', parent: collection.id });
    assert.equal(inside.parent, collection.id);
    const inColl = check(
        'listSpacesInCollectionById',
        await admin.api.collections.listSpacesInCollectionById(collection.id),
        { status: 200 },
    );
    assert.deepEqual(inColl.items.map((s) => s.id), [inside.id]);
});

test('createSpace: 400 for bad fields, 403 below `create`, 404 for outsiders', async () => {
    await expectApiError(admin.api.orgs.createSpace(org.id, { title: 'x'.repeat(51) }), 400, 'createSpace');
    await expectApiError(admin.api.orgs.createSpace(org.id, { title: 'Bad', editMode: 'frozen' }), 400, 'createSpace');
    await expectApiError(admin.api.orgs.createSpace(org.id, { title: 'Bad', language: 'xx' }), 400, 'createSpace');
    await expectApiError(admin.api.orgs.createSpace(org.id, { title: 'Bad', parent: 'nosuchcollection' }), 400);
    await expectApiError(admin.api.orgs.createSpace(org.id, { title: 'Bad', visibility: 'secret' }), 400);
    await expectApiError(editor.api.orgs.createSpace(org.id, { title: 'Nope' }), 403, 'createSpace');
    await expectApiError(reader.api.orgs.createSpace(org.id, { title: 'Nope' }), 403, 'createSpace');
    await expectApiError(guest.api.orgs.createSpace(org.id, { title: 'Nope' }), 403, 'createSpace');
    await expectApiError(outsider.api.orgs.createSpace(org.id, { title: 'Nope' }), 404, 'createSpace');
});

test('listSpacesInOrganizationById: the spaces each caller can see, paginated', async () => {
    const a = await createSpace(admin, { title: 'Listed A' });
    const b = await createSpace(admin, { title: 'Listed B' });
    const all = check('listSpacesInOrganizationById', await admin.api.orgs.listSpacesInOrganizationById(org.id), {
        status: 200,
    });
    const ids = all.items.map((s) => s.id);
    assert.ok(ids.includes(a.id) && ids.includes(b.id));
    assert.ok(ids.indexOf(a.id) < ids.indexOf(b.id), 'creation order');
    assert.equal(all.count, all.items.length);
    for (const s of all.items) assert.equal(s.organization, org.id);

    const { items, pages } = await listAll('listSpacesInOrganizationById', (page) =>
        admin.api.orgs.listSpacesInOrganizationById(org.id, { limit: 1, page }),
    );
    assert.deepEqual(items.map((s) => s.id), ids, 'walking pages yields the same spaces');
    assert.ok(pages.length > 1);
    for (const p of pages) assert.equal(p.count, ids.length);

    // A `read` member sees every space (read-only); a guest without grants sees none.
    const asReader = check('listSpacesInOrganizationById', await reader.api.orgs.listSpacesInOrganizationById(org.id), {
        status: 200,
    });
    assert.deepEqual(asReader.items.map((s) => s.id), ids);
    for (const s of asReader.items) {
        assert.equal(s.permissions.admin, false);
        assert.equal(s.permissions.edit, false);
        assert.equal(s.permissions.view, true);
    }
    const asGuest = check('listSpacesInOrganizationById', await guest.api.orgs.listSpacesInOrganizationById(org.id), {
        status: 200,
    });
    assert.deepEqual(asGuest.items, []);
    await expectApiError(outsider.api.orgs.listSpacesInOrganizationById(org.id), 404, 'listSpacesInOrganizationById');
});

test('getSpaceById: 200 with the same space; 404 when unknown or invisible', async () => {
    const space = await createSpace(admin, { title: 'Fetched', emoji: '🔎' });
    const got = await getSpace(admin, space.id);
    assert.deepEqual(got, space);
    const asReader = await getSpace(reader, space.id);
    assert.equal(asReader.id, space.id);
    assert.equal(asReader.permissions.admin, false);
    assert.equal(asReader.permissions.comment, false);
    await expectApiError(admin.api.spaces.getSpaceById(NO_SUCH_SPACE), 404, 'getSpaceById');
    await expectApiError(outsider.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');
    await expectApiError(guest.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');
});

test('updateSpaceById: title, emoji, editMode, defaultLevel, language, visibility', async () => {
    const space = await createSpace(admin, { title: 'Draft' });
    const update = async (who, body) =>
        check('updateSpaceById', await who.api.spaces.updateSpaceById(space.id, body), { status: 200 });

    const renamed = await update(admin, { title: 'Guide', emoji: '🧭', language: 'de' });
    assert.equal(renamed.id, space.id);
    assert.equal(renamed.title, 'Guide');
    assert.equal(renamed.emoji, '🧭');
    assert.equal(renamed.language, 'de');

    const locked = await update(admin, { editMode: 'locked' });
    assert.equal(locked.editMode, 'locked');
    assert.equal(locked.permissions.edit, false);
    const live = await update(admin, { editMode: 'live' });
    assert.equal(live.editMode, 'live');
    assert.equal(live.permissions.edit, true);

    assert.equal((await update(admin, { defaultLevel: 'read' })).defaultLevel, 'read');
    assert.equal((await update(admin, { defaultLevel: null })).defaultLevel, null);
    assert.equal((await update(admin, { defaultLevel: 'inherit' })).defaultLevel, 'inherit');
    assert.equal((await update(admin, { visibility: 'unlisted' })).visibility, 'unlisted');
    const plain = await update(admin, { emoji: null });
    assert.equal(plain.emoji, '', 'emoji: null removes the emoji');
    assert.equal((await update(admin, { emoji: '🧭' })).emoji, '🧭');

    // An `edit` member may change the title, not the settings reserved to admins.
    assert.equal((await update(editor, { title: 'Edited' })).title, 'Edited');
    await expectApiError(editor.api.spaces.updateSpaceById(space.id, { editMode: 'locked' }), 403, 'updateSpaceById');
    await expectApiError(editor.api.spaces.updateSpaceById(space.id, { defaultLevel: 'edit' }), 403, 'updateSpaceById');

    const got = await getSpace(admin, space.id);
    assert.equal(got.title, 'Edited');
    assert.equal(got.emoji, '🧭');
    assert.equal(got.language, 'de');
    assert.equal(got.editMode, 'live');
    assert.equal(got.defaultLevel, 'inherit');
    assert.equal(got.visibility, 'unlisted');
});

test('updateSpaceById: 400 for bad values, 403 for readers, 404 when invisible', async () => {
    const space = await createSpace(admin, { title: 'Strict' });
    for (const body of [
        { title: 't'.repeat(51) },
        { editMode: 'frozen' },
        { language: 'xx' },
        { defaultLevel: 'owner' },
        { visibility: 'secret' },
        { visibility: 'in-collection' }, // only inside a collection
    ]) {
        await expectApiError(admin.api.spaces.updateSpaceById(space.id, body), 400, 'updateSpaceById');
    }
    await expectApiError(reader.api.spaces.updateSpaceById(space.id, { title: 'Reader' }), 403, 'updateSpaceById');
    await expectApiError(outsider.api.spaces.updateSpaceById(space.id, { title: 'Outsider' }), 404, 'updateSpaceById');
    await expectApiError(admin.api.spaces.updateSpaceById(NO_SUCH_SPACE, { title: 'Ghost' }), 404, 'updateSpaceById');
    assert.equal((await getSpace(admin, space.id)).title, 'Strict', 'nothing changed');
});

test('updateSpaceById: a language outside the official TranslationLanguage enum is refused', async () => {
    // The 0.137.0 TranslationLanguage enum has no "zh-tw": accepting it makes every later
    // answer about the space fail the official Space schema.
    // Its own organization, so that an accepted value cannot spoil the other tests' lists.
    const lingua = await setupOrg(server, admin, 'Spaces Lingua');
    const space = await createSpace(admin, { title: 'Lingua' }, lingua.id);
    await expectApiError(admin.api.spaces.updateSpaceById(space.id, { language: 'zh-tw' }), 400, 'updateSpaceById');
    await expectApiError(
        admin.api.orgs.createSpace(lingua.id, { title: 'Lingua', language: 'zh-tw' }),
        400,
        'createSpace',
    );
});

test('deleteSpaceById / restoreSpace: soft delete, 409 on edits, restore', async () => {
    const space = await createSpace(admin, { title: 'Doomed' });
    await expectApiError(admin.api.spaces.restoreSpace(space.id), 400, 'restoreSpace');
    await expectApiError(reader.api.spaces.deleteSpaceById(space.id), 403, 'deleteSpaceById');

    check('deleteSpaceById', await admin.api.spaces.deleteSpaceById(space.id), { status: 204 });
    const gone = await getSpace(admin, space.id);
    assert.equal(typeof gone.deletedAt, 'string', 'a deleted space answers with deletedAt');
    assert.equal(gone.permissions.edit, false);
    assert.ok(!(await spaceIds(admin)).includes(space.id), 'a deleted space leaves the list');
    await expectApiError(admin.api.spaces.updateSpaceById(space.id, { title: 'Zombie' }), 409, 'updateSpaceById');
    await expectApiError(admin.api.spaces.duplicateSpace(space.id), 409, 'duplicateSpace');
    await expectApiError(admin.api.spaces.transferSpace(space.id, { organization: dest.id }), 409, 'transferSpace');
    check('deleteSpaceById', await admin.api.spaces.deleteSpaceById(space.id), { status: 204 });
    check('deleteSpaceById', await admin.api.spaces.deleteSpaceById(NO_SUCH_SPACE), { status: 204 });

    await expectApiError(reader.api.spaces.restoreSpace(space.id), 403, 'restoreSpace');
    const restored = check('restoreSpace', await admin.api.spaces.restoreSpace(space.id), { status: 200 });
    assert.equal(restored.id, space.id);
    assert.equal(restored.deletedAt, undefined);
    assert.equal(restored.title, 'Doomed');
    assert.equal(restored.permissions.edit, true);
    assert.ok((await spaceIds(admin)).includes(space.id), 'a restored space is listed again');
    await expectApiError(admin.api.spaces.restoreSpace(space.id), 400, 'restoreSpace');
    await expectApiError(admin.api.spaces.restoreSpace(NO_SUCH_SPACE), 404, 'restoreSpace');
    const renamed = check('updateSpaceById', await admin.api.spaces.updateSpaceById(space.id, { title: 'Saved' }), {
        status: 200,
    });
    assert.equal(renamed.title, 'Saved');
});

test('duplicateSpace: 201 with a copy beside the original', async () => {
    const collection = await createCollection(admin, { title: 'Copies' });
    const space = await createSpace(admin, { title: 'Original', emoji: '🧬', language: 'es', parent: collection.id });
    const res = await admin.api.spaces.duplicateSpace(space.id);
    const copy = check('duplicateSpace', res, { status: 201 });
    assert.equal(res.headers.get('location'), copy.urls.location);
    assert.notEqual(copy.id, space.id);
    assert.notEqual(copy.revision, space.revision);
    assert.equal(copy.title, 'Original (copy)');
    assert.equal(copy.emoji, '🧬');
    assert.equal(copy.language, 'es');
    assert.equal(copy.parent, collection.id);
    assert.equal(copy.organization, org.id);
    assert.deepEqual(await getSpace(admin, copy.id), copy);
    const inColl = check(
        'listSpacesInCollectionById',
        await admin.api.collections.listSpacesInCollectionById(collection.id),
        { status: 200 },
    );
    assert.deepEqual(inColl.items.map((s) => s.id), [space.id, copy.id]);

    await expectApiError(reader.api.spaces.duplicateSpace(space.id), 403, 'duplicateSpace');
    await expectApiError(outsider.api.spaces.duplicateSpace(space.id), 404, 'duplicateSpace');
});

test('moveSpace: among siblings (before / after) and between collections', async () => {
    const a = await createSpace(admin, { title: 'Move A' });
    const b = await createSpace(admin, { title: 'Move B' });
    const c = await createSpace(admin, { title: 'Move C' });
    const ids = [a.id, b.id, c.id];
    assert.deepEqual(await listedOrder(ids), [a.id, b.id, c.id]);

    const movedBefore = check(
        'moveSpace',
        await admin.api.spaces.moveSpace(c.id, { position: { before: { type: 'space', space: a.id } } }),
        { status: 200 },
    );
    assert.equal(movedBefore.id, c.id);
    assert.deepEqual(await listedOrder(ids), [c.id, a.id, b.id]);

    check('moveSpace', await admin.api.spaces.moveSpace(c.id, { position: { after: { type: 'space', space: a.id } } }), {
        status: 200,
    });
    assert.deepEqual(await listedOrder(ids), [a.id, c.id, b.id]);

    // Into a collection, then back to the root.
    const collection = await createCollection(admin, { title: 'Move Target' });
    const inside = check('moveSpace', await admin.api.spaces.moveSpace(b.id, { parent: collection.id }), { status: 200 });
    assert.equal(inside.parent, collection.id);
    const inColl = check(
        'listSpacesInCollectionById',
        await admin.api.collections.listSpacesInCollectionById(collection.id),
        { status: 200 },
    );
    assert.deepEqual(inColl.items.map((s) => s.id), [b.id]);
    assert.equal((await getSpace(admin, b.id)).parent, collection.id);

    // A position must name a sibling under the destination.
    await expectApiError(
        admin.api.spaces.moveSpace(a.id, { position: { before: { type: 'space', space: b.id } } }),
        400,
        'moveSpace',
    );
    const back = check(
        'moveSpace',
        await admin.api.spaces.moveSpace(b.id, { parent: null, position: { before: { type: 'space', space: a.id } } }),
        { status: 200 },
    );
    assert.equal(back.parent, undefined);
    assert.deepEqual(await listedOrder(ids), [b.id, a.id, c.id]);
    const emptied = check(
        'listSpacesInCollectionById',
        await admin.api.collections.listSpacesInCollectionById(collection.id),
        { status: 200 },
    );
    assert.deepEqual(emptied.items, []);
});

test('moveSpace: 400 for empty bodies and unknown parents, 403 / 404 / 409', async () => {
    const space = await createSpace(admin, { title: 'Unmovable' });
    await expectApiError(admin.api.spaces.moveSpace(space.id, {}), 400, 'moveSpace');
    await expectApiError(admin.api.spaces.moveSpace(space.id, { parent: 'nosuchcollection' }), 400, 'moveSpace');
    await expectApiError(editor.api.spaces.moveSpace(space.id, { parent: null }), 403, 'moveSpace');
    await expectApiError(outsider.api.spaces.moveSpace(space.id, { parent: null }), 404, 'moveSpace');
    await expectApiError(admin.api.spaces.moveSpace(NO_SUCH_SPACE, { parent: null }), 404, 'moveSpace');
    check('deleteSpaceById', await admin.api.spaces.deleteSpaceById(space.id), { status: 204 });
    await expectApiError(admin.api.spaces.moveSpace(space.id, { parent: null }), 409, 'moveSpace');
});

test('transferSpace: to another organization the caller administers', async () => {
    const space = await createSpace(admin, { title: 'Emigrant' });
    const moved = check('transferSpace', await admin.api.spaces.transferSpace(space.id, { organization: dest.id }), {
        status: 200,
    });
    assert.equal(moved.id, space.id);
    assert.equal(moved.organization, dest.id);
    assert.equal(moved.title, 'Emigrant');
    assert.ok(!(await spaceIds(admin)).includes(space.id), 'left the source organization');
    assert.ok((await spaceIds(admin, dest.id)).includes(space.id), 'listed in the target organization');
    assert.equal((await getSpace(admin, space.id)).organization, dest.id);
    // Members of the source organization lose access with it.
    await expectApiError(reader.api.spaces.getSpaceById(space.id), 404, 'getSpaceById');

    // Into a collection of the target organization.
    const home = await createCollection(admin, { title: 'Arrivals' }, dest.id);
    const other = await createSpace(admin, { title: 'Emigrant Two' });
    const placed = check(
        'transferSpace',
        await admin.api.spaces.transferSpace(other.id, { organization: dest.id, parent: home.id }),
        { status: 200 },
    );
    assert.equal(placed.organization, dest.id);
    assert.equal(placed.parent, home.id);
    const inColl = check('listSpacesInCollectionById', await admin.api.collections.listSpacesInCollectionById(home.id), {
        status: 200,
    });
    assert.deepEqual(inColl.items.map((s) => s.id), [other.id]);
});

test('transferSpace: 403 without admin on the target, 404 for unknown or invisible orgs', async () => {
    const space = await createSpace(admin, { title: 'Stays Home' });
    await expectApiError(admin.api.spaces.transferSpace(space.id, { organization: foreign.id }), 403, 'transferSpace');
    await expectApiError(admin.api.spaces.transferSpace(space.id, { organization: hidden.id }), 404, 'transferSpace');
    await expectApiError(
        admin.api.spaces.transferSpace(space.id, { organization: 'nosuchorg0000000' }),
        404,
        'transferSpace',
    );
    await expectApiError(editor.api.spaces.transferSpace(space.id, { organization: dest.id }), 403, 'transferSpace');
    await expectApiError(outsider.api.spaces.transferSpace(space.id, { organization: dest.id }), 404, 'transferSpace');
    const got = await getSpace(admin, space.id);
    assert.equal(got.organization, org.id, 'refused transfers change nothing');
});

// Content through change requests, one full cycle on one space: create a change request,
// author pages and files in it, read them (markdown and document formats), list and filter
// change requests, change their subject and status, merge another change request so that
// the first one falls behind, update it from main, merge it, and read the merged content
// in the space and in the merge revision. The tests run in order and share their state.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg, listAll, raw } from '../lib/client.js';
import {
    updateContent,
    updateContentError,
    getSpace,
    counters,
    createChangeRequest,
    getChangeRequest,
    blockTexts,
    tree,
    assertDownload,
} from '../lib/content.js';

let server;
let admin; // admin of `org`
let editor; // `edit` member of `org`
let reader; // `read` member of `org`
let org;
let space; // the space of the cycle
let cr1; // the change request of the cycle (admin)
let cr2; // created by admin, authored by editor, merged first
let cr3; // subject and status changes
const page = {}; // page ids: guide, scratch, details, news
const file = {}; // file objects: notes, pixel
let mergeRevision; // the revision merging cr1 produced

const GUIDE_V1 = 'Hello world.\n\nThe first line stays.\n';
const GUIDE_V2 = 'Hello again.\n\nThe first line stays.\n';
const DETAILS = 'All the details.\n\nMore of them.\n';
const NEWS = 'Fresh news.\n';
const NOTES = Buffer.from('Notes for the guide.\n', 'utf8');
// A 1×1 PNG.
const PIXEL = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
    'base64',
);

before(async () => {
    server = await startServer();
    [admin, editor, reader] = await Promise.all(['admin', 'editor', 'reader'].map((label) => newUser(server, label)));
    org = await setupOrg(server, admin, 'Content Org', [
        { user: editor, role: 'edit' },
        { user: reader, role: 'read' },
    ]);
    space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Content Cycle' }), { status: 201 });
});
after(async () => {
    await server?.stop();
});

const ids = (items) => items.map((x) => x.id).sort();

function crPageLocation(crId, pageId) {
    return `${server.url}/v1/spaces/${space.id}/change-requests/${crId}/content/page/${pageId}`;
}

test('createChangeRequest: 201, open, branched from the space revision', async () => {
    cr1 = await createChangeRequest(admin, space.id, 'Write the guide');
    assert.equal(cr1.object, 'change-request');
    assert.equal(cr1.number, 1);
    assert.equal(cr1.status, 'open');
    assert.equal(cr1.subject, 'Write the guide');
    assert.equal(cr1.createdBy.id, admin.id);
    assert.equal(cr1.revision, space.revision);
    assert.equal(cr1.revisionInitial, space.revision);
    assert.equal(cr1.outdated, false);
    assert.equal(cr1.revisionMerged, undefined);
    assert.equal(cr1.urls.location, `${server.url}/v1/spaces/${space.id}/change-requests/${cr1.id}`);
    assert.deepEqual(await counters(admin, space.id), {
        changeRequests: 1,
        changeRequestsOpen: 1,
        changeRequestsDraft: 0,
    });
    await expectApiError(reader.api.spaces.createChangeRequest(space.id, { subject: 'No' }), 403, 'createChangeRequest');
});

test('updateChangeRequestContent (compat=false): pages and files in one batch', async () => {
    const body = await updateContent(
        server,
        admin,
        space.id,
        cr1.id,
        [
            { operation: 'insert_page', title: 'Guide', ref: 'guide', document: { markdown: GUIDE_V1 } },
            { operation: 'insert_page', title: 'Scratch', document: { markdown: 'Temporary notes.\n' } },
            {
                operation: 'insert_files',
                files: [
                    { base64: NOTES.toString('base64'), name: 'notes.txt' },
                    { base64: PIXEL.toString('base64'), name: 'pixel.png', contentType: 'image/png' },
                ],
            },
        ],
        { compat: false },
    );
    assert.equal(body.changeRequest.id, cr1.id);
    assert.notEqual(body.changeRequest.revision, cr1.revision, 'a batch makes a new revision');
    assert.equal(body.changeRequest.revisionInitial, space.revision);
    assert.deepEqual(
        body.changes.map((c) => [c.object, c.ref ?? null]),
        [
            ['created_page', 'guide'],
            ['created_page', null],
        ],
    );
    for (const c of body.changes) assert.equal(c.page.urls.location, crPageLocation(cr1.id, c.page.id));
    page.guide = body.changes[0].page.id;
    page.scratch = body.changes[1].page.id;

    assert.deepEqual(
        body.insertedFiles.map((f) => [f.name, f.contentType, f.size]),
        [
            ['notes.txt', 'text/plain', NOTES.length],
            ['pixel.png', 'image/png', PIXEL.length],
        ],
    );
    [file.notes, file.pixel] = body.insertedFiles;
    assert.deepEqual(file.pixel.dimensions, { width: 1, height: 1 });
    assert.equal(file.notes.dimensions, undefined);
    cr1 = body.changeRequest;
    assert.deepEqual(await getChangeRequest(admin, space.id, cr1.id), cr1);
});

test('updateChangeRequestContent (default compat): insert into a parent, update, delete', async () => {
    const before = cr1.revision;
    const body = await updateContent(server, admin, space.id, cr1.id, [
        { operation: 'insert_page', title: 'Details', into: page.guide, document: { markdown: DETAILS } },
        { operation: 'update_page', page: page.guide, document: { markdown: GUIDE_V2 } },
        { operation: 'delete_page', page: page.scratch },
    ]);
    assert.equal(body.object, 'change-request', 'compat=true answers with the change request');
    assert.equal(body.id, cr1.id);
    assert.notEqual(body.revision, before);
    cr1 = body;

    const details = check(
        'getPageInChangeRequestByPath',
        await admin.api.spaces.getPageInChangeRequestByPath(space.id, cr1.id, 'guide/details', { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(details.title, 'Details');
    assert.equal(details.path, 'guide/details');
    assert.equal(details.slug, 'details');
    assert.equal(details.markdown, DETAILS);
    page.details = details.id;
});

test('updateChangeRequestContent: an invalid change rejects the whole batch', async () => {
    const before = (await getChangeRequest(admin, space.id, cr1.id)).revision;
    await updateContentError(server, admin, space.id, cr1.id, { changes: [] }, 400);
    await updateContentError(
        server,
        admin,
        space.id,
        cr1.id,
        {
            changes: [
                { operation: 'insert_page', title: 'Orphan', document: { markdown: 'Never.\n' } },
                { operation: 'delete_page', page: 'nosuchpage0000000000' },
            ],
        },
        400,
    );
    await updateContentError(
        server,
        admin,
        space.id,
        cr1.id,
        { changes: [{ operation: 'update_page', page: page.scratch, document: { markdown: 'Deleted.\n' } }] },
        400,
    );
    await updateContentError(
        server,
        reader,
        space.id,
        cr1.id,
        { changes: [{ operation: 'insert_page', title: 'Reader', document: { markdown: 'No.\n' } }] },
        403,
    );
    await updateContentError(
        server,
        admin,
        space.id,
        'nosuchchangerequest0',
        { changes: [{ operation: 'insert_page', title: 'Ghost', document: { markdown: 'No.\n' } }] },
        404,
    );
    assert.equal((await getChangeRequest(admin, space.id, cr1.id)).revision, before, 'refused batches change nothing');
});

test('getPageInChangeRequestById: markdown and document formats', async () => {
    const md = check(
        'getPageInChangeRequestById',
        await admin.api.spaces.getPageInChangeRequestById(space.id, cr1.id, page.details, { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(md.id, page.details);
    assert.equal(md.title, 'Details');
    assert.equal(md.type, 'document');
    assert.equal(md.path, 'guide/details');
    assert.equal(md.markdown, DETAILS);
    assert.equal(md.document, undefined);

    const doc = check(
        'getPageInChangeRequestById',
        await admin.api.spaces.getPageInChangeRequestById(space.id, cr1.id, page.details, { format: 'document' }),
        { status: 200 },
    );
    assert.equal(doc.id, page.details);
    assert.equal(doc.markdown, undefined);
    assert.deepEqual(blockTexts(doc.document), ['All the details.', 'More of them.']);

    // Deleted in the change request; not in the space before the merge.
    await expectApiError(
        admin.api.spaces.getPageInChangeRequestById(space.id, cr1.id, page.scratch, { format: 'markdown' }),
        404,
        'getPageInChangeRequestById',
    );
    await expectApiError(admin.api.spaces.getPageById(space.id, page.details), 404, 'getPageById');
    await expectApiError(
        admin.api.spaces.getPageInChangeRequestByPath(space.id, cr1.id, 'scratch'),
        404,
        'getPageInChangeRequestByPath',
    );
});

test('getPageInChangeRequestById / ByPath: a page with sub-pages', async () => {
    const md = check(
        'getPageInChangeRequestById',
        await admin.api.spaces.getPageInChangeRequestById(space.id, cr1.id, page.guide, { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(md.markdown, GUIDE_V2);
    assert.deepEqual(tree(md.pages), [{ id: page.details, path: 'guide/details', pages: [] }]);
    const doc = check(
        'getPageInChangeRequestByPath',
        await admin.api.spaces.getPageInChangeRequestByPath(space.id, cr1.id, 'guide', { format: 'document' }),
        { status: 200 },
    );
    assert.equal(doc.id, page.guide);
    assert.deepEqual(blockTexts(doc.document), ['Hello again.', 'The first line stays.']);
});

test('listPagesInChangeRequest / getRevisionOfChangeRequestById: the page tree', async () => {
    const expected = [{ id: page.guide, path: 'guide', pages: [{ id: page.details, path: 'guide/details', pages: [] }] }];
    const listed = check('listPagesInChangeRequest', await admin.api.spaces.listPagesInChangeRequest(space.id, cr1.id), {
        status: 200,
    });
    assert.deepEqual(tree(listed.pages), expected);
    const rev = check(
        'getRevisionOfChangeRequestById',
        await admin.api.spaces.getRevisionOfChangeRequestById(space.id, cr1.id),
        { status: 200 },
    );
    assert.equal(rev.object, 'revision');
    assert.equal(rev.id, cr1.revision);
    assert.equal(rev.type, 'edits');
    assert.deepEqual(tree(rev.pages), expected);
    assert.deepEqual(ids(rev.files), ids([file.notes, file.pixel]));
});

test('listFilesInChangeRequestById / getFileInChangeRequestById; downloadURL serves the bytes', async () => {
    const { items, pages } = await listAll('listFilesInChangeRequestById', (p) =>
        admin.api.spaces.listFilesInChangeRequestById(space.id, cr1.id, { limit: 1, page: p }),
    );
    assert.equal(pages.length, 2);
    assert.deepEqual(ids(items), ids([file.notes, file.pixel]));
    for (const [f, bytes] of [
        [file.notes, NOTES],
        [file.pixel, PIXEL],
    ]) {
        const got = check(
            'getFileInChangeRequestById',
            await admin.api.spaces.getFileInChangeRequestById(space.id, cr1.id, f.id),
            { status: 200 },
        );
        const { downloadURL: _, ...rest } = got;
        const { downloadURL: __, ...want } = f;
        assert.deepEqual(rest, want);
        await assertDownload(got, bytes);
    }
    await expectApiError(
        admin.api.spaces.getFileInChangeRequestById(space.id, cr1.id, 'nosuchfile0000000000'),
        404,
        'getFileInChangeRequestById',
    );
});

test('getChangeRequestChanges: what the change request adds to its base', async () => {
    const all = check('getChangeRequestChanges', await admin.api.spaces.getChangeRequestChanges(space.id, cr1.id), {
        status: 200,
    });
    const summary = (c) => `${c.type}:${(c.page ?? c.file)?.id}`;
    assert.deepEqual(
        all.changes.map(summary).sort(),
        [
            `file_created:${file.notes.id}`,
            `file_created:${file.pixel.id}`,
            `page_created:${page.details}`,
            `page_created:${page.guide}`,
        ].sort(),
        'the deleted page never existed at the base: it is not a change',
    );
    assert.equal(all.more, undefined);
    const one = check(
        'getChangeRequestChanges',
        await admin.api.spaces.getChangeRequestChanges(space.id, cr1.id, { limit: 1 }),
        { status: 200 },
    );
    assert.equal(one.changes.length, 1);
    assert.equal(one.more, 3);
    await expectApiError(
        admin.api.spaces.getChangeRequestChanges(space.id, 'nosuchchangerequest0'),
        404,
        'getChangeRequestChanges',
    );
});

test('listChangeRequestsForSpace: open by default; status and contributor filters', async () => {
    cr2 = await createChangeRequest(admin, space.id, 'News');
    const body = await updateContent(
        server,
        editor,
        space.id,
        cr2.id,
        [{ operation: 'insert_page', title: 'News', document: { markdown: NEWS } }],
        { compat: false },
    );
    page.news = body.changes[0].page.id;
    cr2 = body.changeRequest;
    cr3 = await createChangeRequest(admin, space.id, 'Someday');
    assert.equal(cr3.number, 3);
    check('updateChangeRequestById', await admin.api.spaces.updateChangeRequestById(space.id, cr3.id, { status: 'draft' }), {
        status: 200,
    });

    const list = async (query) =>
        (
            await listAll('listChangeRequestsForSpace', (p) =>
                admin.api.spaces.listChangeRequestsForSpace(space.id, { ...query, page: p }),
            )
        ).items;
    assert.deepEqual(ids(await list({})), ids([cr1, cr2]), 'status defaults to open');
    assert.deepEqual(ids(await list({ status: 'open' })), ids([cr1, cr2]));
    assert.deepEqual(ids(await list({ status: 'open', limit: 1 })), ids([cr1, cr2]), 'walking pages');
    assert.deepEqual(ids(await list({ status: 'draft' })), [cr3.id]);
    assert.deepEqual(await list({ status: 'merged' }), []);
    assert.deepEqual(await list({ status: 'archived' }), []);
    assert.deepEqual(ids(await list({ contributor: editor.id })), [cr2.id], 'the editor authored only cr2');
    assert.ok(ids(await list({ contributor: admin.id })).includes(cr1.id));
    assert.deepEqual(await list({ contributor: reader.id }), []);
    const listed = (await list({})).find((c) => c.id === cr2.id);
    assert.equal(listed.revision, cr2.revision);
    assert.equal(listed.subject, 'News');

    assert.deepEqual(await counters(admin, space.id), {
        changeRequests: 3,
        changeRequestsOpen: 2,
        changeRequestsDraft: 1,
    });
});

test('getChangeRequestById: by id and by number; 404 when unknown', async () => {
    const byId = await getChangeRequest(admin, space.id, cr2.id);
    assert.equal(byId.number, 2);
    assert.equal(byId.createdBy.id, admin.id);
    const byNumber = await getChangeRequest(admin, space.id, String(byId.number));
    assert.deepEqual(byNumber, byId);
    await expectApiError(admin.api.spaces.getChangeRequestById(space.id, 'nosuchchangerequest0'), 404, 'getChangeRequestById');
    await expectApiError(admin.api.spaces.getChangeRequestById(space.id, '999'), 404, 'getChangeRequestById');
});

test('updateChangeRequestById: subject and status, with exact space counters', async () => {
    const update = async (body) =>
        check('updateChangeRequestById', await admin.api.spaces.updateChangeRequestById(space.id, cr3.id, body), {
            status: 200,
        });
    const renamed = await update({ subject: 'Someday, maybe' });
    assert.equal(renamed.subject, 'Someday, maybe');
    assert.equal(renamed.status, 'draft');

    assert.equal((await update({ status: 'open' })).status, 'open');
    assert.deepEqual(await counters(admin, space.id), {
        changeRequests: 3,
        changeRequestsOpen: 3,
        changeRequestsDraft: 0,
    });
    assert.equal((await update({ status: 'draft' })).status, 'draft');
    assert.deepEqual(await counters(admin, space.id), {
        changeRequests: 3,
        changeRequestsOpen: 2,
        changeRequestsDraft: 1,
    });
    const archived = await update({ status: 'archived' });
    assert.equal(archived.status, 'archived');
    assert.equal(archived.subject, 'Someday, maybe');
    assert.deepEqual(await counters(admin, space.id), {
        changeRequests: 3,
        changeRequestsOpen: 2,
        changeRequestsDraft: 0,
    });
    assert.deepEqual(await getChangeRequest(admin, space.id, cr3.id), archived);
    const listed = check(
        'listChangeRequestsForSpace',
        await admin.api.spaces.listChangeRequestsForSpace(space.id, { status: 'archived' }),
        { status: 200 },
    );
    assert.deepEqual(ids(listed.items), [cr3.id]);

    await expectApiError(
        admin.api.spaces.updateChangeRequestById(space.id, cr3.id, { status: 'merged' }),
        400,
        'updateChangeRequestById',
    );
    await expectApiError(
        reader.api.spaces.updateChangeRequestById(space.id, cr3.id, { subject: 'Reader' }),
        403,
        'updateChangeRequestById',
    );
});

test('mergeChangeRequest: main moves forward; the other change request is outdated', async () => {
    const before = await getSpace(admin, space.id);
    await expectApiError(reader.api.spaces.mergeChangeRequest(space.id, cr2.id), 403, 'mergeChangeRequest');
    const merged = check('mergeChangeRequest', await editor.api.spaces.mergeChangeRequest(space.id, cr2.id), {
        status: 200,
    });
    assert.equal(merged.result, 'merge');
    assert.notEqual(merged.revision, before.revision);
    assert.equal((await getSpace(admin, space.id)).revision, merged.revision);

    const done = await getChangeRequest(admin, space.id, cr2.id);
    assert.equal(done.status, 'merged');
    assert.equal(done.revisionMerged, merged.revision);
    assert.equal(done.outdated, false);
    assert.equal((await getChangeRequest(admin, space.id, cr1.id)).outdated, true, 'main moved under cr1');
    assert.deepEqual(await counters(admin, space.id), {
        changeRequests: 3,
        changeRequestsOpen: 1,
        changeRequestsDraft: 0,
    });
    const news = check(
        'getPageByPath',
        await admin.api.spaces.getPageByPath(space.id, 'news', { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(news.id, page.news);
    assert.equal(news.markdown, NEWS);
});

test('updateChangeRequest: brings main into the change request', async () => {
    const main = (await getSpace(admin, space.id)).revision;
    const res = check('updateChangeRequest', await admin.api.spaces.updateChangeRequest(space.id, cr1.id), {
        status: 200,
    });
    assert.equal(res.result, 'update');
    assert.notEqual(res.revision, cr1.revision);
    cr1 = await getChangeRequest(admin, space.id, cr1.id);
    assert.equal(cr1.outdated, false);
    assert.equal(cr1.revision, res.revision);
    assert.equal(cr1.revisionMergedAncestor, main);
    assert.equal(cr1.status, 'open');

    // Main's page is in the change request now, beside its own pages.
    const news = check(
        'getPageInChangeRequestByPath',
        await admin.api.spaces.getPageInChangeRequestByPath(space.id, cr1.id, 'news', { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(news.id, page.news);
    assert.equal(news.markdown, NEWS);
    const details = check(
        'getPageInChangeRequestById',
        await admin.api.spaces.getPageInChangeRequestById(space.id, cr1.id, page.details, { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(details.markdown, DETAILS);

    // The changes are now measured against the new base: main's page is not one of them.
    const changes = check('getChangeRequestChanges', await admin.api.spaces.getChangeRequestChanges(space.id, cr1.id), {
        status: 200,
    });
    const touched = changes.changes.map((c) => (c.page ?? c.file)?.id);
    assert.ok(!touched.includes(page.news), 'a page brought in from main is not a change of the change request');
    assert.ok(touched.includes(page.guide) && touched.includes(page.details));

    // Up to date: nothing to bring in.
    const again = check('updateChangeRequest', await admin.api.spaces.updateChangeRequest(space.id, cr1.id), {
        status: 200,
    });
    assert.equal(again.result, 'update');
    assert.equal(again.revision, cr1.revision);
    assert.equal((await getChangeRequest(admin, space.id, cr1.id)).revision, cr1.revision);
});

test('mergeChangeRequest: the change request lands in the space', async () => {
    const res = check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr1.id), {
        status: 200,
    });
    assert.equal(res.result, 'merge');
    mergeRevision = res.revision;
    const after = await getSpace(admin, space.id);
    assert.equal(after.revision, mergeRevision);
    assert.deepEqual(
        {
            changeRequests: after.changeRequests,
            changeRequestsOpen: after.changeRequestsOpen,
            changeRequestsDraft: after.changeRequestsDraft,
        },
        { changeRequests: 3, changeRequestsOpen: 0, changeRequestsDraft: 0 },
    );
    const merged = await getChangeRequest(admin, space.id, cr1.id);
    assert.equal(merged.status, 'merged');
    assert.equal(merged.revisionMerged, mergeRevision);
    assert.equal(merged.outdated, false);

    const list = check(
        'listChangeRequestsForSpace',
        await admin.api.spaces.listChangeRequestsForSpace(space.id, { status: 'merged' }),
        { status: 200 },
    );
    assert.deepEqual(ids(list.items), ids([cr1, cr2]));
    const open = check('listChangeRequestsForSpace', await admin.api.spaces.listChangeRequestsForSpace(space.id), {
        status: 200,
    });
    assert.deepEqual(open.items, []);

    await expectApiError(admin.api.spaces.mergeChangeRequest(space.id, cr1.id), 409, 'mergeChangeRequest');
    await expectApiError(
        admin.api.spaces.updateChangeRequestById(space.id, cr1.id, { status: 'open' }),
        409,
        'updateChangeRequestById',
    );
    assert.equal((await getSpace(admin, space.id)).revision, mergeRevision, 'merging twice changes nothing');
});

test('merged content in the space: getPageById (both formats), getPageByPath', async () => {
    const md = check(
        'getPageById',
        await admin.api.spaces.getPageById(space.id, page.details, { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(md.title, 'Details');
    assert.equal(md.path, 'guide/details');
    assert.equal(md.markdown, DETAILS);
    const doc = check(
        'getPageById',
        await admin.api.spaces.getPageById(space.id, page.details, { format: 'document' }),
        { status: 200 },
    );
    assert.deepEqual(blockTexts(doc.document), ['All the details.', 'More of them.']);
    const byPath = check(
        'getPageByPath',
        await admin.api.spaces.getPageByPath(space.id, 'guide/details', { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(byPath.id, page.details);
    const news = check('getPageByPath', await reader.api.spaces.getPageByPath(space.id, 'news', { format: 'markdown' }), {
        status: 200,
    });
    assert.equal(news.markdown, NEWS, 'readers read the content');
    await expectApiError(admin.api.spaces.getPageById(space.id, page.scratch), 404, 'getPageById');
    await expectApiError(admin.api.spaces.getPageByPath(space.id, 'scratch'), 404, 'getPageByPath');
});

test('merged content in the space: a page with sub-pages', async () => {
    const guide = check(
        'getPageById',
        await admin.api.spaces.getPageById(space.id, page.guide, { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(guide.markdown, GUIDE_V2);
    assert.deepEqual(tree(guide.pages), [{ id: page.details, path: 'guide/details', pages: [] }]);
    const byPath = check(
        'getPageByPath',
        await admin.api.spaces.getPageByPath(space.id, 'guide', { format: 'document' }),
        { status: 200 },
    );
    assert.deepEqual(blockTexts(byPath.document), ['Hello again.', 'The first line stays.']);
});

const mergedTree = () =>
    [
        { id: page.guide, path: 'guide', pages: [{ id: page.details, path: 'guide/details', pages: [] }] },
        { id: page.news, path: 'news', pages: [] },
    ].sort((a, b) => a.id.localeCompare(b.id));
const sortedTree = (pages) => tree(pages).sort((a, b) => a.id.localeCompare(b.id));

test('getCurrentRevision / listPages: a merge revision naming its change request', async () => {
    const rev = check('getCurrentRevision', await admin.api.spaces.getCurrentRevision(space.id), { status: 200 });
    assert.equal(rev.object, 'revision');
    assert.equal(rev.id, mergeRevision);
    assert.equal(rev.type, 'merge');
    assert.equal(rev.mergedFrom?.id, cr1.id);
    assert.equal(rev.mergedFrom?.status, 'merged');
    assert.deepEqual(sortedTree(rev.pages), mergedTree());
    assert.deepEqual(ids(rev.files), ids([file.notes, file.pixel]));
    const listed = check('listPages', await admin.api.spaces.listPages(space.id), { status: 200 });
    assert.deepEqual(sortedTree(listed.pages), mergedTree());
});

test('listFiles / getFileById in the space; downloadURL serves the bytes', async () => {
    const { items } = await listAll('listFiles', (p) => admin.api.spaces.listFiles(space.id, { limit: 1, page: p }));
    assert.deepEqual(ids(items), ids([file.notes, file.pixel]));
    for (const [f, bytes] of [
        [file.notes, NOTES],
        [file.pixel, PIXEL],
    ]) {
        const got = check('getFileById', await reader.api.spaces.getFileById(space.id, f.id), { status: 200 });
        assert.equal(got.name, f.name);
        assert.equal(got.size, f.size);
        assert.equal(got.contentType, f.contentType);
        await assertDownload(got, bytes);
    }
    await expectApiError(admin.api.spaces.getFileById(space.id, 'nosuchfile0000000000'), 404, 'getFileById');
});

test('the merge revision by id: files and pages', async () => {
    const { items } = await listAll('listFilesInRevisionById', (p) =>
        admin.api.spaces.listFilesInRevisionById(space.id, mergeRevision, { limit: 1, page: p }),
    );
    assert.deepEqual(ids(items), ids([file.notes, file.pixel]));
    const f = check(
        'getFileInRevisionById',
        await admin.api.spaces.getFileInRevisionById(space.id, mergeRevision, file.pixel.id),
        { status: 200 },
    );
    assert.deepEqual(f.dimensions, { width: 1, height: 1 });
    await assertDownload(f, PIXEL);

    const md = check(
        'getPageInRevisionById',
        await admin.api.spaces.getPageInRevisionById(space.id, mergeRevision, page.details, { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(md.markdown, DETAILS);
    const doc = check(
        'getPageInRevisionById',
        await admin.api.spaces.getPageInRevisionById(space.id, mergeRevision, page.details, { format: 'document' }),
        { status: 200 },
    );
    assert.deepEqual(blockTexts(doc.document), ['All the details.', 'More of them.']);
    const byPath = check(
        'getPageInRevisionByPath',
        await admin.api.spaces.getPageInRevisionByPath(space.id, mergeRevision, 'news', { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(byPath.id, page.news);
    assert.equal(byPath.markdown, NEWS);

    // An older revision still holds what it held: cr2's merge had no guide.
    const older = cr2.revisionMerged ?? (await getChangeRequest(admin, space.id, cr2.id)).revisionMerged;
    await expectApiError(
        admin.api.spaces.getPageInRevisionById(space.id, older, page.guide),
        404,
        'getPageInRevisionById',
    );
    await expectApiError(
        admin.api.spaces.getFileInRevisionById(space.id, older, file.notes.id),
        404,
        'getFileInRevisionById',
    );
    await expectApiError(
        admin.api.spaces.getRevisionById(space.id, 'nosuchrevision000000'),
        404,
        'getRevisionById',
    );
});

test('a page of the merge revision: listRevisionPageMetaLinks (0.202.0)', async () => {
    // No translation links the space: no meta links. Validated against 0.202.0 by `raw`.
    const at = `/v1/spaces/${space.id}/revisions/${mergeRevision}/page`;
    const links = await raw(server, 'GET', `${at}/${page.details}/meta-links`, { token: reader.token });
    assert.equal(links.status, 200);
    assert.deepEqual(links.body, {});
    const missing = await raw(server, 'GET', `${at}/nosuchpage0000000000/meta-links`, { token: admin.token });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 404);
});

test('the merge revision by id: getRevisionById / listPagesInRevisionById', async () => {
    const rev = check('getRevisionById', await admin.api.spaces.getRevisionById(space.id, mergeRevision), {
        status: 200,
    });
    assert.equal(rev.id, mergeRevision);
    assert.equal(rev.type, 'merge');
    assert.equal(rev.mergedFrom?.id, cr1.id);
    assert.deepEqual(sortedTree(rev.pages), mergedTree());
    const listed = check(
        'listPagesInRevisionById',
        await admin.api.spaces.listPagesInRevisionById(space.id, mergeRevision),
        { status: 200 },
    );
    assert.deepEqual(sortedTree(listed.pages), mergedTree());
});

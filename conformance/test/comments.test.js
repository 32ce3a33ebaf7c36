// Comments and replies, on a space (`/v1/spaces/{space}/comments`) and on a change request
// (`…/change-requests/{cr}/comments`): the same battery runs in both scopes, through the
// official client, each test on a fresh space whose pages were merged through a change
// request. Posting (targets, rights), reading in both formats, listing with every filter,
// resolving and reopening, author-only edits, reactions, replies, deletes, the
// `permissions` booleans against what the server then allows, the open-comment counters
// (exact after every step, also under concurrent calls), the replies counter, and
// `target.page.outdated` once the page changes.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg, listAll } from '../lib/client.js';
import { updateContent, getSpace, createChangeRequest, getChangeRequest, blockTexts } from '../lib/content.js';

let server;
let admin; // admin of `org`
let author; // `comment` member: posts the comments under test
let other; // `comment` member: the other commenter
let reader; // `read` member
let org;

const GUIDE = 'The guide.\n\nSecond paragraph.\n';
const NOTES = 'Some notes.\n';
const DRAFT = 'Only in the change request.\n';
const NO_SUCH_COMMENT = 'nosuchcomment0000000';
const NO_SUCH_REPLY = 'nosuchreply000000000';

before(async () => {
    server = await startServer();
    [admin, author, other, reader] = await Promise.all(
        ['admin', 'author', 'other', 'reader'].map((label) => newUser(server, label)),
    );
    org = await setupOrg(server, admin, 'Comments Org', [
        { user: author, role: 'comment' },
        { user: other, role: 'comment' },
        { user: reader, role: 'read' },
    ]);
});
after(async () => {
    await server?.stop();
});

const KINDS = ['Space', 'ChangeRequest'];

/**
 * The comment operations of one scope: a space, or one change request of it. `call(verb,
 * who, …)` returns the client's promise; `ok` checks the answer (operation, status, schema);
 * `fails` expects an API error.
 */
class Scope {
    constructor(kind, env) {
        this.kind = kind;
        this.env = env;
        this.spaceId = env.space.id;
        this.crId = kind === 'ChangeRequest' ? env.cr.id : undefined;
    }

    opId(verb) {
        const names = {
            list: 'listCommentsIn',
            post: 'postCommentIn',
            get: 'getCommentIn',
            update: 'updateCommentIn',
            delete: 'deleteCommentIn',
            listReplies: 'listCommentRepliesIn',
            postReply: 'postCommentReplyIn',
            getReply: 'getCommentReplyIn',
            updateReply: 'updateCommentReplyIn',
            deleteReply: 'deleteCommentReplyIn',
        };
        return names[verb] + this.kind;
    }

    /** The client promise for `verb`; `args` are what follows the space (and cr) ids. */
    call(verb, who, ...args) {
        const s = who.api.spaces;
        const op = this.opId(verb);
        if (this.kind === 'Space') {
            // postCommentReplyInSpace takes no query in 0.137.0.
            if (verb === 'postReply') args = args.slice(0, 2);
            return s[op](this.spaceId, ...args);
        }
        return s[op](this.spaceId, this.crId, ...args);
    }

    async ok(verb, who, status, ...args) {
        return check(this.opId(verb), await this.call(verb, who, ...args), { status });
    }

    async fails(verb, who, status, ...args) {
        return expectApiError(this.call(verb, who, ...args), status, this.opId(verb));
    }

    // Shorthands.
    post(who, body) {
        return this.ok('post', who, 200, body);
    }
    get(who, id, query) {
        return this.ok('get', who, 200, id, query);
    }
    update(who, id, body) {
        return this.ok('update', who, 200, id, body);
    }
    postReply(who, id, body, query) {
        return this.ok('postReply', who, 200, id, body, query);
    }

    /** Every comment of a listing (walking the pages). */
    async list(who, query = {}) {
        const op = this.opId('list');
        return listAll(op, (page) => this.call('list', who, { ...query, page }));
    }

    location(commentId) {
        const cr = this.crId ? `/change-requests/${this.crId}` : '';
        return `${server.url}/v1/spaces/${this.spaceId}${cr}/comments/${commentId}`;
    }

    /** The open-comment counter of the space or of the change request. */
    async counter(who = admin) {
        return this.crId
            ? (await getChangeRequest(who, this.spaceId, this.crId)).comments
            : (await getSpace(who, this.spaceId)).comments;
    }

    /** The revision the scope's comments are about now. */
    async revision() {
        return this.crId
            ? (await getChangeRequest(admin, this.spaceId, this.crId)).revision
            : (await getSpace(admin, this.spaceId)).revision;
    }
}

/**
 * A fresh space with the pages Guide and Notes (merged through a change request) and an
 * open change request on it that adds the page Draft. Returns both scopes.
 */
async function freshEnv(title) {
    const space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title }), { status: 201 });
    const pagesCr = await createChangeRequest(admin, space.id, 'Pages');
    const body = await updateContent(
        server,
        admin,
        space.id,
        pagesCr.id,
        [
            { operation: 'insert_page', title: 'Guide', document: { markdown: GUIDE } },
            { operation: 'insert_page', title: 'Notes', document: { markdown: NOTES } },
        ],
        { compat: false },
    );
    const [guide, notes] = body.changes.map((c) => c.page.id);
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, pagesCr.id), { status: 200 });
    const cr = await createChangeRequest(admin, space.id, 'Review');
    const crBody = await updateContent(
        server,
        admin,
        space.id,
        cr.id,
        [{ operation: 'insert_page', title: 'Draft', document: { markdown: DRAFT } }],
        { compat: false },
    );
    const draft = crBody.changes[0].page.id;
    const env = { space: await getSpace(admin, space.id), cr: crBody.changeRequest, pages: { guide, notes, draft } };
    env.Space = new Scope('Space', env);
    env.ChangeRequest = new Scope('ChangeRequest', env);
    return env;
}

/** A fresh scope of `kind` and the other scope of the same space. */
async function fresh(kind, title) {
    const env = await freshEnv(`${title} (${kind})`);
    return { env, scope: env[kind], otherScope: env[kind === 'Space' ? 'ChangeRequest' : 'Space'] };
}

const md = (text) => ({ markdown: text });
const text = (c) => c.body.markdown?.trim();
const ids = (items) => items.map((x) => x.id);
const sorted = (xs) => [...xs].sort();

/** The invariant parts of a freshly posted comment. */
function assertPosted(scope, c, who, markdown, revision) {
    assert.equal(c.object, 'comment');
    assert.equal(c.postedBy.id, who.id);
    assert.equal(c.status, 'open');
    assert.equal(c.resolvedAt, undefined);
    assert.equal(c.resolvedBy, undefined);
    assert.equal(c.editedAt, undefined);
    assert.equal(c.replies, 0);
    assert.deepEqual(c.reactions, []);
    assert.equal(text(c), markdown.trim());
    assert.equal(c.body.document, undefined, 'markdown by default');
    assert.equal(c.target.space, scope.spaceId);
    assert.equal(c.target.revision, revision);
    assert.equal(c.target.changeRequest, scope.crId, 'target.changeRequest names the change request (only there)');
    assert.equal(c.urls.location, scope.location(c.id));
    assert.ok(Date.parse(c.postedAt) > 0);
}

/** `{emoji: sorted user ids}` of a reactions array, checking count and reactedAt. */
function reactionMap(reactions) {
    const out = {};
    for (const r of reactions) {
        assert.equal(r.count, r.users.length, `${r.emoji}: count vs users`);
        assert.ok(!(r.emoji in out), `${r.emoji} appears once`);
        for (const u of r.users) assert.ok(Date.parse(u.reactedAt) > 0);
        out[r.emoji] = sorted(r.users.map((u) => u.user.id));
    }
    return out;
}

for (const kind of KINDS) {
    test(`${kind}: postComment — a comment member posts; a read member gets 403; bad bodies 400`, async () => {
        const { scope } = await fresh(kind, 'Post');
        const revision = await scope.revision();
        assert.equal(await scope.counter(), 0);
        const c = await scope.post(author, { body: md('First remark.') });
        assertPosted(scope, c, author, 'First remark.', revision);
        assert.equal(c.target.page, undefined);
        assert.deepEqual(c.permissions, { view: true, edit: true, reply: true, delete: true });
        assert.equal(await scope.counter(), 1);

        await scope.fails('post', reader, 403, { body: md('Readers cannot comment.') });
        await scope.fails('post', author, 400, {});
        await scope.fails('post', author, 400, { body: md('On a ghost page.'), page: 'nosuchpage0000000000' });
        assert.equal(await scope.counter(), 1, 'refused posts count nothing');
        const { items } = await scope.list(admin);
        assert.deepEqual(ids(items), [c.id]);
    });

    test(`${kind}: postComment — page, node and tableCell targets; the page must exist in the current revision`, async () => {
        const { env, scope } = await fresh(kind, 'Targets');
        const c = await scope.post(other, {
            body: md('About the guide.'),
            page: env.pages.guide,
            node: 'node-1',
            tableCell: { record: 'rec-1', definition: 'def-1' },
        });
        assertPosted(scope, c, other, 'About the guide.', await scope.revision());
        assert.deepEqual(c.target.page, { id: env.pages.guide, title: 'Guide', path: 'guide', outdated: false });
        assert.equal(c.target.node?.id, 'node-1');
        assert.deepEqual(c.target.tableCell, { record: 'rec-1', definition: 'def-1' });

        // The change request's own page exists only there.
        if (kind === 'ChangeRequest') {
            const d = await scope.post(other, { body: md('About the draft.'), page: env.pages.draft });
            assert.deepEqual(d.target.page, { id: env.pages.draft, title: 'Draft', path: 'draft', outdated: false });
        } else {
            await scope.fails('post', other, 400, { body: md('Not merged yet.'), page: env.pages.draft });
        }
        const got = await scope.get(reader, c.id);
        assert.deepEqual(got.target, c.target);
    });

    test(`${kind}: getComment — markdown by default, body.document with format=document; 404s`, async () => {
        const { scope, otherScope } = await fresh(kind, 'Get');
        const c = await scope.post(author, { body: md('Plain words.\n\nA second paragraph.') });
        const byDefault = await scope.get(reader, c.id);
        assert.equal(text(byDefault), 'Plain words.\n\nA second paragraph.');
        assert.equal(byDefault.body.document, undefined);
        const asMarkdown = await scope.get(reader, c.id, { format: 'markdown' });
        assert.deepEqual(asMarkdown.body, byDefault.body);
        const asDocument = await scope.get(reader, c.id, { format: 'document' });
        assert.equal(asDocument.body.markdown, undefined);
        assert.equal(asDocument.body.document?.object, 'document');
        assert.deepEqual(blockTexts(asDocument.body.document), ['Plain words.', 'A second paragraph.']);
        const { body: _a, ...restDoc } = asDocument;
        const { body: _b, ...restMd } = byDefault;
        assert.deepEqual(restDoc, restMd, 'only the body differs between formats');

        // A JSON document is accepted as a body too.
        const fromDoc = await scope.post(author, { body: { document: asDocument.body.document } });
        assert.equal(text(fromDoc), 'Plain words.\n\nA second paragraph.');

        await scope.fails('get', admin, 404, NO_SUCH_COMMENT);
        await otherScope.fails('get', admin, 404, c.id);
    });

    test(`${kind}: listComments — order, status, targetPage, authors, format, pagination`, async () => {
        const { env, scope } = await fresh(kind, 'List');
        const posted = [];
        for (const [who, page, words] of [
            [author, undefined, 'General remark.'],
            [author, env.pages.guide, 'Guide remark.'],
            [other, env.pages.notes, 'Notes remark.'],
            [admin, env.pages.guide, 'Admin on the guide.'],
        ]) {
            posted.push(await scope.post(who, page ? { body: md(words), page } : { body: md(words) }));
        }
        const [general, guideByAuthor, notesByOther, guideByAdmin] = posted;
        await scope.update(other, notesByOther.id, { resolved: true });

        const all = await scope.list(reader);
        const asc = await scope.list(reader, { order: 'asc' });
        const desc = await scope.list(reader, { order: 'desc' });
        assert.deepEqual(sorted(ids(all.items)), sorted(ids(posted)));
        assert.deepEqual(ids(all.items), ids(desc.items), 'order defaults to desc');
        assert.deepEqual(ids(desc.items), ids(asc.items).reverse());
        const times = asc.items.map((c) => Date.parse(c.postedAt));
        assert.deepEqual(times, [...times].sort((a, b) => a - b), 'asc: oldest first');
        assert.equal(all.pages[0].count, 4);

        // Walking pages of one.
        for (const order of ['asc', 'desc']) {
            const walked = await scope.list(reader, { order, limit: 1 });
            assert.equal(walked.pages.length, 4);
            assert.deepEqual(ids(walked.items), ids(order === 'asc' ? asc.items : desc.items));
        }

        const statusOf = async (status) => sorted(ids((await scope.list(reader, { status })).items));
        assert.deepEqual(await statusOf('all'), sorted(ids(posted)));
        assert.deepEqual(await statusOf('open'), sorted([general.id, guideByAuthor.id, guideByAdmin.id]));
        assert.deepEqual(await statusOf('resolved'), [notesByOther.id]);

        const onPage = async (targetPage, extra = {}) =>
            sorted(ids((await scope.list(reader, { targetPage, ...extra })).items));
        assert.deepEqual(await onPage(env.pages.guide), sorted([guideByAuthor.id, guideByAdmin.id]));
        assert.deepEqual(await onPage(env.pages.notes), [notesByOther.id]);
        assert.deepEqual(await onPage(env.pages.notes, { status: 'open' }), []);

        const by = async (authors, extra = {}) => sorted(ids((await scope.list(reader, { authors, ...extra })).items));
        assert.deepEqual(await by([author.id]), sorted([general.id, guideByAuthor.id]));
        assert.deepEqual(await by([other.id, admin.id]), sorted([notesByOther.id, guideByAdmin.id]));
        assert.deepEqual(await by([reader.id]), []);
        assert.deepEqual(await by([author.id], { targetPage: env.pages.guide }), [guideByAuthor.id]);

        const docs = await scope.list(reader, { format: 'document' });
        for (const c of docs.items) {
            assert.equal(c.body.markdown, undefined);
            assert.equal(c.body.document?.object, 'document');
        }
        const found = docs.items.find((c) => c.id === general.id);
        assert.deepEqual(blockTexts(found.body.document), ['General remark.']);
        for (const c of (await scope.list(reader, { format: 'markdown' })).items) {
            assert.equal(typeof c.body.markdown, 'string');
        }

        // Values outside the declared enums.
        for (const query of [{ status: 'closed' }, { order: 'newest' }, { format: 'html' }]) {
            await scope.fails('list', reader, 400, query);
        }
    });

    test(`${kind}: updateComment — resolve and reopen (status, resolvedAt, resolvedBy)`, async () => {
        const { scope } = await fresh(kind, 'Resolve');
        const c = await scope.post(author, { body: md('Please fix.') });
        const resolved = await scope.update(other, c.id, { resolved: true });
        assert.equal(resolved.status, 'resolved');
        assert.equal(resolved.resolvedBy?.id, other.id);
        assert.ok(Date.parse(resolved.resolvedAt) >= Date.parse(c.postedAt));
        assert.equal(resolved.editedAt, undefined, 'resolving is not editing');
        assert.equal(text(resolved), 'Please fix.');
        const got = await scope.get(reader, c.id);
        assert.equal(got.status, 'resolved');
        assert.equal(got.resolvedBy?.id, other.id);
        assert.equal(got.resolvedAt, resolved.resolvedAt);
        assert.equal(await scope.counter(), 0);

        const reopened = await scope.update(author, c.id, { resolved: false });
        assert.equal(reopened.status, 'open');
        assert.equal(reopened.resolvedAt, undefined);
        assert.equal(reopened.resolvedBy, undefined);
        assert.equal((await scope.get(reader, c.id)).status, 'open');
        assert.equal(await scope.counter(), 1);

        await scope.fails('update', reader, 403, c.id, { resolved: true });
        await scope.fails('update', admin, 404, NO_SUCH_COMMENT, { resolved: true });
        assert.equal((await scope.get(admin, c.id)).status, 'open');
    });

    test(`${kind}: updateComment — the author edits the body (editedAt); anyone else gets 403`, async () => {
        const { scope } = await fresh(kind, 'Edit');
        const c = await scope.post(author, { body: md('Frist draft.') });
        const edited = await scope.update(author, c.id, { body: md('First draft.') });
        assert.equal(text(edited), 'First draft.');
        assert.ok(Date.parse(edited.editedAt) >= Date.parse(c.postedAt));
        assert.equal(edited.postedAt, c.postedAt);
        assert.equal(edited.status, 'open');
        for (const who of [other, admin]) {
            await scope.fails('update', who, 403, c.id, { body: md('Hijacked.') });
        }
        const got = await scope.get(reader, c.id);
        assert.equal(text(got), 'First draft.');
        assert.equal(got.editedAt, edited.editedAt);
    });

    test(`${kind}: updateComment — reactions toggle the caller's own, aggregated per emoji`, async () => {
        const { scope } = await fresh(kind, 'React');
        const c = await scope.post(author, { body: md('React to me.') });
        let r = await scope.update(author, c.id, { addedReactions: ['👍', '🎉'] });
        assert.deepEqual(reactionMap(r.reactions), { '👍': [author.id], '🎉': [author.id] });
        r = await scope.update(other, c.id, { addedReactions: ['👍'] });
        assert.deepEqual(reactionMap(r.reactions), { '👍': sorted([author.id, other.id]), '🎉': [author.id] });
        const thumbs = r.reactions.find((x) => x.emoji === '👍');
        assert.equal(thumbs.count, 2);
        r = await scope.update(other, c.id, { addedReactions: ['👍'] });
        assert.equal(r.reactions.find((x) => x.emoji === '👍').count, 2, 'adding twice counts once');
        r = await scope.update(other, c.id, { removedReactions: ['🎉'] });
        assert.deepEqual(reactionMap(r.reactions), { '👍': sorted([author.id, other.id]), '🎉': [author.id] }, "one removes only one's own");
        r = await scope.update(other, c.id, { removedReactions: ['👍'] });
        assert.deepEqual(reactionMap(r.reactions), { '👍': [author.id], '🎉': [author.id] });
        assert.deepEqual(reactionMap((await scope.get(reader, c.id)).reactions), reactionMap(r.reactions));
        await scope.fails('update', reader, 403, c.id, { addedReactions: ['👀'] });
        r = await scope.update(author, c.id, { removedReactions: ['👍', '🎉'], addedReactions: [] });
        assert.deepEqual(r.reactions, [], 'an emoji without users disappears');
        assert.equal(r.editedAt, undefined, 'reacting is not editing');
    });

    test(`${kind}: replies — post, list, get (formats), edit, react, delete; the replies counter`, async () => {
        const { scope, otherScope } = await fresh(kind, 'Replies');
        const c = await scope.post(author, { body: md('Thread start.') });
        const op = (verb) => scope.opId(verb);
        const r1 = await scope.postReply(other, c.id, { body: md('First reply.') });
        assert.equal(r1.object, 'comment-reply');
        assert.equal(r1.postedBy.id, other.id);
        assert.equal(text(r1), 'First reply.');
        assert.deepEqual(r1.reactions, []);
        assert.equal(r1.editedAt, undefined);
        assert.equal(r1.urls.location, `${scope.location(c.id)}/replies/${r1.id}`);
        assert.deepEqual(r1.permissions, { view: true, edit: true, reply: true, delete: true });
        assert.equal((await scope.get(reader, c.id)).replies, 1);
        const r2 = await scope.postReply(author, c.id, { body: md('Second reply.') });
        assert.equal((await scope.get(reader, c.id)).replies, 2);
        if (kind === 'ChangeRequest') {
            // postCommentReplyInChangeRequest declares a format.
            const r3 = await scope.postReply(admin, c.id, { body: md('Third reply.') }, { format: 'document' });
            assert.deepEqual(blockTexts(r3.body.document), ['Third reply.']);
            check(op('deleteReply'), await scope.call('deleteReply', admin, c.id, r3.id), { status: 204 });
        }
        assert.equal((await scope.get(reader, c.id)).replies, 2);
        await scope.fails('postReply', reader, 403, c.id, { body: md('No.') });
        await scope.fails('postReply', author, 404, NO_SUCH_COMMENT, { body: md('Nowhere.') });
        await scope.fails('postReply', author, 400, c.id, {});

        // List: oldest first, pages of one.
        const listed = await listAll(op('listReplies'), (page) => scope.call('listReplies', reader, c.id, { page }));
        assert.deepEqual(sorted(ids(listed.items)), sorted([r1.id, r2.id]));
        assert.equal(listed.pages[0].count, 2);
        const walked = await listAll(op('listReplies'), (page) =>
            scope.call('listReplies', reader, c.id, { page, limit: 1 }),
        );
        assert.equal(walked.pages.length, 2);
        assert.deepEqual(ids(walked.items), ids(listed.items));
        const docs = await scope.ok('listReplies', reader, 200, c.id, { format: 'document' });
        for (const r of docs.items) assert.equal(r.body.document?.object, 'document');
        await scope.fails('listReplies', reader, 404, NO_SUCH_COMMENT);

        // Get, both formats.
        const got = await scope.ok('getReply', reader, 200, c.id, r1.id);
        assert.equal(text(got), 'First reply.');
        const gotDoc = await scope.ok('getReply', reader, 200, c.id, r1.id, { format: 'document' });
        assert.equal(gotDoc.body.markdown, undefined);
        assert.deepEqual(blockTexts(gotDoc.body.document), ['First reply.']);
        await scope.fails('getReply', reader, 404, c.id, NO_SUCH_REPLY);
        await scope.fails('getReply', reader, 404, NO_SUCH_COMMENT, r1.id);
        await otherScope.fails('getReply', reader, 404, c.id, r1.id);

        // Edit: the author only.
        const edited = await scope.ok('updateReply', other, 200, c.id, r1.id, { body: md('First reply, edited.') });
        assert.equal(text(edited), 'First reply, edited.');
        assert.ok(Date.parse(edited.editedAt) >= Date.parse(r1.postedAt));
        for (const who of [author, admin]) {
            await scope.fails('updateReply', who, 403, c.id, r1.id, { body: md('Hijacked.') });
        }
        assert.equal(text(await scope.ok('getReply', reader, 200, c.id, r1.id)), 'First reply, edited.');

        // Reactions on a reply.
        let rr = await scope.ok('updateReply', author, 200, c.id, r1.id, { addedReactions: ['❤️'] });
        rr = await scope.ok('updateReply', admin, 200, c.id, r1.id, { addedReactions: ['❤️'] });
        assert.deepEqual(reactionMap(rr.reactions), { '❤️': sorted([author.id, admin.id]) });
        rr = await scope.ok('updateReply', author, 200, c.id, r1.id, { removedReactions: ['❤️'] });
        assert.deepEqual(reactionMap(rr.reactions), { '❤️': [admin.id] });
        await scope.fails('updateReply', reader, 403, c.id, r1.id, { addedReactions: ['👀'] });
        assert.equal((await scope.get(reader, c.id)).reactions.length, 0, "a reply's reactions are its own");

        // Delete: the author or an admin; 204 also when absent.
        await scope.fails('deleteReply', author, 403, c.id, r1.id);
        await scope.fails('deleteReply', reader, 403, c.id, r1.id);
        check(op('deleteReply'), await scope.call('deleteReply', other, c.id, r1.id), { status: 204 });
        assert.equal((await scope.get(reader, c.id)).replies, 1);
        await scope.fails('getReply', reader, 404, c.id, r1.id);
        check(op('deleteReply'), await scope.call('deleteReply', other, c.id, r1.id), { status: 204 });
        assert.equal((await scope.get(reader, c.id)).replies, 1, 'deleting twice counts once');
        check(op('deleteReply'), await scope.call('deleteReply', admin, c.id, r2.id), { status: 204 });
        assert.equal((await scope.get(reader, c.id)).replies, 0);
        check(op('deleteReply'), await scope.call('deleteReply', admin, NO_SUCH_COMMENT, NO_SUCH_REPLY), {
            status: 204,
        });
        const empty = await scope.ok('listReplies', reader, 200, c.id);
        assert.deepEqual(empty.items, []);
    });

    test(`${kind}: deleteComment — the author or a space admin; others 403; 204 also when absent`, async () => {
        const { scope, otherScope } = await fresh(kind, 'Delete');
        const op = scope.opId('delete');
        const mine = await scope.post(author, { body: md('Mine.') });
        const theirs = await scope.post(other, { body: md('Theirs.') });
        await scope.postReply(other, mine.id, { body: md('A reply.') });
        assert.equal(await scope.counter(), 2);

        await scope.fails('delete', other, 403, mine.id);
        await scope.fails('delete', reader, 403, mine.id);
        // From the other scope, the comment does not exist: nothing happens.
        check(otherScope.opId('delete'), await otherScope.call('delete', admin, mine.id), { status: 204 });
        assert.equal(await scope.counter(), 2);

        check(op, await scope.call('delete', author, mine.id), { status: 204 });
        await scope.fails('get', admin, 404, mine.id);
        await scope.fails('listReplies', admin, 404, mine.id);
        assert.equal(await scope.counter(), 1);
        check(op, await scope.call('delete', author, mine.id), { status: 204 });
        assert.equal(await scope.counter(), 1, 'deleting twice counts once');

        check(op, await scope.call('delete', admin, theirs.id), { status: 204 });
        assert.equal(await scope.counter(), 0);
        check(op, await scope.call('delete', admin, NO_SUCH_COMMENT), { status: 204 });
        assert.deepEqual((await scope.list(admin)).items, []);
    });

    test(`${kind}: permissions — the booleans match what the server allows (author, other, admin, reader)`, async () => {
        const { scope } = await fresh(kind, 'Permissions');
        const expected = new Map([
            [author, { view: true, edit: true, reply: true, delete: true }],
            [other, { view: true, edit: false, reply: true, delete: false }],
            [admin, { view: true, edit: false, reply: true, delete: true }],
            [reader, { view: true, edit: false, reply: false, delete: false }],
        ]);
        const statusOf = async (promise) => {
            try {
                return (await promise).status;
            } catch (e) {
                if (e.response?.quire) return e.code;
                throw e;
            }
        };
        for (const [who, want] of expected) {
            const c = await scope.post(author, { body: md(`For ${who.user.displayName}.`) });
            const reply = await scope.postReply(author, c.id, { body: md('A reply by the author.') });
            const seen = await scope.get(who, c.id);
            assert.deepEqual(seen.permissions, want, `comment permissions of ${who.email}`);
            const listed = (await scope.list(who)).items.find((x) => x.id === c.id);
            assert.deepEqual(listed.permissions, want, `listed comment permissions of ${who.email}`);
            const seenReply = await scope.ok('getReply', who, 200, c.id, reply.id);
            assert.deepEqual(seenReply.permissions, want, `reply permissions of ${who.email}`);

            // What the server then allows.
            const allowed = (status) => status === 200 || status === 204;
            const edit = await statusOf(scope.call('update', who, c.id, { body: md('Edited.') }));
            assert.equal(allowed(edit), want.edit, `${who.email}: edit → ${edit}`);
            const editReply = await statusOf(scope.call('updateReply', who, c.id, reply.id, { body: md('Edited.') }));
            assert.equal(allowed(editReply), want.edit, `${who.email}: edit reply → ${editReply}`);
            const react = await statusOf(scope.call('update', who, c.id, { addedReactions: ['👍'] }));
            assert.equal(allowed(react), want.reply, `${who.email}: react → ${react}`);
            const answer = await statusOf(scope.call('postReply', who, c.id, { body: md('Answer.') }));
            assert.equal(allowed(answer), want.reply, `${who.email}: reply → ${answer}`);
            const delReply = await statusOf(scope.call('deleteReply', who, c.id, reply.id));
            assert.equal(allowed(delReply), want.delete, `${who.email}: delete reply → ${delReply}`);
            const del = await statusOf(scope.call('delete', who, c.id));
            assert.equal(allowed(del), want.delete, `${who.email}: delete → ${del}`);
            if (!want.delete) check(scope.opId('delete'), await scope.call('delete', author, c.id), { status: 204 });
        }
        assert.equal(await scope.counter(), 0);
    });

    test(`${kind}: counters — open comments exact after every post, resolve, reopen and delete`, async () => {
        const { scope, otherScope } = await fresh(kind, 'Counters');
        const expectCounts = async (open, step) => {
            assert.equal(await scope.counter(), open, `${kind}.comments after ${step}`);
            assert.equal(await scope.counter(reader), open, `${kind}.comments (as a reader) after ${step}`);
            const listed = await scope.ok('list', admin, 200, { status: 'open' });
            assert.equal(listed.items.length, open, `open comments listed after ${step}`);
            assert.equal(await otherScope.counter(), 0, `the other scope's counter after ${step}`);
        };
        await expectCounts(0, 'nothing');
        const a = await scope.post(author, { body: md('A.') });
        await expectCounts(1, 'posting a');
        const b = await scope.post(other, { body: md('B.') });
        await expectCounts(2, 'posting b');
        const c = await scope.post(admin, { body: md('C.') });
        await expectCounts(3, 'posting c');
        await scope.update(other, a.id, { resolved: true });
        await expectCounts(2, 'resolving a');
        await scope.update(admin, a.id, { resolved: true });
        await expectCounts(2, 'resolving a again');
        await scope.update(author, a.id, { resolved: false });
        await expectCounts(3, 'reopening a');
        await scope.update(author, a.id, { resolved: false });
        await expectCounts(3, 'reopening a again');
        await scope.update(author, b.id, { resolved: true, addedReactions: ['✅'] });
        await expectCounts(2, 'resolving b (with a reaction)');
        await scope.update(other, b.id, { body: md('B, edited.') });
        await expectCounts(2, 'editing resolved b');
        await scope.postReply(author, c.id, { body: md('Reply.') });
        await expectCounts(2, 'replying to c');
        check(scope.opId('delete'), await scope.call('delete', other, b.id), { status: 204 });
        await expectCounts(2, 'deleting resolved b');
        check(scope.opId('delete'), await scope.call('delete', admin, c.id), { status: 204 });
        await expectCounts(1, 'deleting open c');
        await scope.update(admin, a.id, { resolved: true });
        await expectCounts(0, 'resolving a once more');
        check(scope.opId('delete'), await scope.call('delete', author, a.id), { status: 204 });
        await expectCounts(0, 'deleting resolved a');
        await scope.fails('post', reader, 403, { body: md('Refused.') });
        await expectCounts(0, 'a refused post');
        const d = await scope.post(other, { body: md('D.') });
        await expectCounts(1, 'posting d');
        await scope.fails('update', reader, 403, d.id, { resolved: true });
        await expectCounts(1, 'a refused resolve');
    });

    // Concurrent calls on one comment: each must count once, whatever the interleaving.
    const N = 12;
    const ROUNDS = 3;
    const concurrently = (fn) => Promise.all(Array.from({ length: N }, (_, i) => fn(i)));

    /** A fresh scope with two open comments `a` and `b` (counter 2). */
    async function twoOpen(title) {
        const { scope } = await fresh(kind, title);
        const a = await scope.post(author, { body: md('A.') });
        await scope.post(author, { body: md('B.') });
        assert.equal(await scope.counter(), 2);
        return { scope, a };
    }

    test(`${kind}: counters — ${N} concurrent resolves of one comment count once (${ROUNDS} rounds)`, async () => {
        const { scope, a } = await twoOpen('Concurrent resolves');
        for (let round = 1; round <= ROUNDS; round++) {
            await concurrently(() => scope.update(admin, a.id, { resolved: true }));
            assert.equal((await scope.get(admin, a.id)).status, 'resolved');
            assert.equal(
                await scope.counter(),
                1,
                `${kind}.comments after ${N} concurrent resolves of one of 2 open comments (round ${round})`,
            );
            await scope.update(admin, a.id, { resolved: false });
            assert.equal(await scope.counter(), 2);
        }
    });

    test(`${kind}: counters — ${N} concurrent reopens of one comment count once (${ROUNDS} rounds)`, async () => {
        const { scope, a } = await twoOpen('Concurrent reopens');
        for (let round = 1; round <= ROUNDS; round++) {
            await scope.update(admin, a.id, { resolved: true });
            assert.equal(await scope.counter(), 1);
            await concurrently(() => scope.update(admin, a.id, { resolved: false }));
            assert.equal((await scope.get(admin, a.id)).status, 'open');
            assert.equal(
                await scope.counter(),
                2,
                `${kind}.comments after ${N} concurrent reopens of the resolved one of 2 (round ${round})`,
            );
        }
    });

    test(`${kind}: counters — ${N} concurrent deletes of one open comment count once (${ROUNDS} rounds)`, async () => {
        let { scope, a } = await twoOpen('Concurrent deletes');
        for (let round = 1; round <= ROUNDS; round++) {
            const deletes = await concurrently(() => scope.call('delete', admin, a.id));
            for (const res of deletes) check(scope.opId('delete'), res, { status: 204 });
            await scope.fails('get', admin, 404, a.id);
            assert.equal(
                await scope.counter(),
                1,
                `${kind}.comments after ${N} concurrent deletes of one of 2 open comments (round ${round})`,
            );
            a = await scope.post(author, { body: md(`A${round}.`) });
            assert.equal(await scope.counter(), 2);
        }
    });

    test(`${kind}: replies counter — ${N} concurrent replies, ${N} concurrent deletes of one reply`, async () => {
        const { scope, a } = await twoOpen('Concurrent replies');
        const replies = await concurrently((i) => scope.postReply(other, a.id, { body: md(`Reply ${i}.`) }));
        assert.equal((await scope.get(admin, a.id)).replies, N, `${N} concurrent replies`);
        const results = await concurrently(() => scope.call('deleteReply', admin, a.id, replies[0].id));
        for (const res of results) check(scope.opId('deleteReply'), res, { status: 204 });
        assert.equal((await scope.get(admin, a.id)).replies, N - 1, `${N} concurrent deletes of one reply count once`);
        const listed = await scope.ok('listReplies', admin, 200, a.id);
        assert.equal(listed.items.length, N - 1);
    });

    test(`${kind}: target.page.outdated — false until the page's content changes`, async () => {
        const { env, scope } = await fresh(kind, 'Outdated');
        const onGuide = await scope.post(author, { body: md('On the guide.'), page: env.pages.guide });
        const onNotes = await scope.post(author, { body: md('On the notes.'), page: env.pages.notes });
        assert.equal(onGuide.target.page.outdated, false);
        const revision = onGuide.target.revision;

        // Change the guide where the scope reads it: merged into the space, or in the change request.
        const edit = [{ operation: 'update_page', page: env.pages.guide, document: { markdown: 'A new guide.\n' } }];
        if (kind === 'Space') {
            const cr = await createChangeRequest(admin, env.space.id, 'Rewrite the guide');
            await updateContent(server, admin, env.space.id, cr.id, edit);
            check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(env.space.id, cr.id), {
                status: 200,
            });
        } else {
            await updateContent(server, admin, env.space.id, env.cr.id, edit);
        }
        assert.notEqual(await scope.revision(), revision);

        const guide = await scope.get(reader, onGuide.id);
        assert.deepEqual(guide.target.page, { id: env.pages.guide, title: 'Guide', path: 'guide', outdated: true });
        assert.equal(guide.target.revision, revision, 'target.revision stays the one it was posted on');
        const notes = await scope.get(reader, onNotes.id);
        assert.deepEqual(notes.target.page, { id: env.pages.notes, title: 'Notes', path: 'notes', outdated: false });
        const listed = await scope.list(reader, { targetPage: env.pages.guide });
        assert.deepEqual(
            listed.items.map((c) => [c.id, c.target.page.outdated]),
            [[onGuide.id, true]],
        );
        // A new comment on the changed page is current again.
        const current = await scope.post(other, { body: md('On the new guide.'), page: env.pages.guide });
        assert.equal(current.target.page.outdated, false);
        assert.equal(current.target.revision, await scope.revision());

        // A page that is gone: the comment on it is outdated, still naming the page.
        const remove = [{ operation: 'delete_page', page: env.pages.notes }];
        if (kind === 'Space') {
            const cr = await createChangeRequest(admin, env.space.id, 'Drop the notes');
            await updateContent(server, admin, env.space.id, cr.id, remove);
            check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(env.space.id, cr.id), {
                status: 200,
            });
        } else {
            await updateContent(server, admin, env.space.id, env.cr.id, remove);
        }
        const gone = await scope.get(reader, onNotes.id);
        assert.equal(gone.target.page.id, env.pages.notes);
        assert.equal(gone.target.page.title, 'Notes');
        assert.equal(gone.target.page.outdated, true);
        await scope.fails('post', author, 400, { body: md('On a deleted page.'), page: env.pages.notes });
    });
}

test('ChangeRequest: comments stay apart from the space, and a 404 for an unknown change request', async () => {
    const env = await freshEnv('Apart');
    const inCr = await env.ChangeRequest.post(author, { body: md('In the change request.') });
    const inSpace = await env.Space.post(author, { body: md('In the space.') });
    assert.deepEqual(ids((await env.ChangeRequest.list(admin)).items), [inCr.id]);
    assert.deepEqual(ids((await env.Space.list(admin)).items), [inSpace.id]);
    assert.equal(await env.ChangeRequest.counter(), 1);
    assert.equal(await env.Space.counter(), 1);
    await env.Space.fails('update', admin, 404, inCr.id, { resolved: true });
    await env.ChangeRequest.fails('update', admin, 404, inSpace.id, { resolved: true });
    await env.Space.fails('postReply', admin, 404, inCr.id, { body: md('Wrong scope.') });

    const ghost = new Scope('ChangeRequest', { ...env, cr: { id: 'nosuchchangerequest0' } });
    await ghost.fails('list', admin, 404);
    await ghost.fails('post', author, 404, { body: md('Nowhere.') });
    await ghost.fails('get', admin, 404, inCr.id);
});

test('ChangeRequest: once merged, the permissions booleans still match what the server allows', async () => {
    const env = await freshEnv('Merged');
    const scope = env.ChangeRequest;
    const c = await scope.post(author, { body: md('Before the merge.') });
    const reply = await scope.postReply(other, c.id, { body: md('A reply.') });
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(env.space.id, env.cr.id), { status: 200 });
    assert.equal((await getChangeRequest(admin, env.space.id, env.cr.id)).status, 'merged');

    const seen = await scope.get(author, c.id);
    const status = async (promise) => {
        try {
            return (await promise).status;
        } catch (e) {
            if (e.response?.quire) return e.code;
            throw e;
        }
    };
    const allowed = (s) => s === 200 || s === 204;
    const edit = await status(scope.call('update', author, c.id, { body: md('After the merge.') }));
    const answer = await status(scope.call('postReply', author, c.id, { body: md('Late answer.') }));
    const delReply = await status(scope.call('deleteReply', other, c.id, reply.id));
    const del = await status(scope.call('delete', author, c.id));
    assert.deepEqual(
        {
            edit: allowed(edit),
            reply: allowed(answer),
            delete: allowed(delReply) && allowed(del),
        },
        { edit: seen.permissions.edit, reply: seen.permissions.reply, delete: seen.permissions.delete },
        `author on a merged change request: permissions ${JSON.stringify(seen.permissions)}, ` +
            `server answered edit ${edit}, reply ${answer}, delete reply ${delReply}, delete ${del}`,
    );
});

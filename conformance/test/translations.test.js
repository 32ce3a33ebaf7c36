// Translations: the six operations through the official client, every answer validated
// against the official schemas, and a run against a loopback LibreTranslate server.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg, listAll } from '../lib/client.js';
import { updateContent, createChangeRequest } from '../lib/content.js';

let provider;
let providerUrl;
let sent = [];
let server;
let admin;
let creator;
let reader;
let org;
let space;

/** A LibreTranslate-speaking server: prefixes every text with `FR `. */
function startProvider() {
    return new Promise((resolve) => {
        const srv = createServer((req, res) => {
            let body = '';
            req.on('data', (c) => (body += c));
            req.on('end', () => {
                const q = JSON.parse(body).q;
                sent.push(...q);
                res.setHeader('content-type', 'application/json');
                res.end(JSON.stringify({ translatedText: q.map((t) => `FR ${t}`) }));
            });
        });
        srv.listen(0, '127.0.0.1', () => resolve(srv));
    });
}

before(async () => {
    provider = await startProvider();
    providerUrl = `http://127.0.0.1:${provider.address().port}`;
    process.env.QUIRE_TRANSLATION_LIBRETRANSLATE_URL = providerUrl;
    process.env.QUIRE_TRANSLATION_LIBRETRANSLATE_KEY = 'lt-conformance-secret';
    process.env.QUIRE_FETCH_ALLOW = '127.0.0.0/8';
    server = await startServer();
    delete process.env.QUIRE_TRANSLATION_LIBRETRANSLATE_URL;
    delete process.env.QUIRE_TRANSLATION_LIBRETRANSLATE_KEY;
    delete process.env.QUIRE_FETCH_ALLOW;
    [admin, creator, reader] = await Promise.all(['admin', 'creator', 'reader'].map((l) => newUser(server, l)));
    org = await setupOrg(server, admin, 'Translations Org', [
        { user: creator, role: 'create' },
        { user: reader, role: 'read' },
    ]);
    space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Handbook' }), { status: 201 });
    const cr = await createChangeRequest(admin, space.id, 'Write');
    await updateContent(server, admin, space.id, cr.id, [
        {
            operation: 'insert_page',
            title: 'Guide',
            document: { markdown: 'Read the guide first.\n\n```sh\nquire serve\n```\n' },
        },
    ]);
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
});
after(async () => {
    await server?.stop();
    provider?.close();
});

const instructions = (text) => ({
    object: 'document',
    data: {},
    nodes: [{ object: 'block', type: 'paragraph', nodes: [{ object: 'text', leaves: [{ object: 'leaf', text, marks: [] }] }] }],
});

async function settle(id) {
    for (let i = 0; i < 400; i++) {
        const t = check('getTranslation', await admin.api.orgs.getTranslation(org.id, id), { status: 200 });
        if (t.status === 'completed') return t;
        await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`translation ${id} did not complete`);
}

test('createTranslation: 201 pending; the run completes with a result space', async () => {
    const t = check(
        'createTranslation',
        await admin.api.orgs.createTranslation(org.id, {
            source: { space: space.id, language: 'en' },
            language: 'fr',
            instructions: instructions('Use a formal tone.'),
        }),
        { status: 201 },
    );
    assert.equal(t.object, 'translation');
    assert.equal(t.status, 'pending');
    assert.deepEqual(t.source, { space: space.id, language: 'en' });
    assert.equal(t.language, 'fr');
    assert.equal(t.stats.runs, 0);
    const done = await settle(t.id);
    assert.equal(done.failure, undefined, JSON.stringify(done));
    assert.equal(done.stats.runs, 1);
    assert.equal(done.stats.latestPages, 1);
    assert.ok(done.result.space && done.result.revision);
    assert.ok(!sent.some((s) => s.includes('quire serve')), 'code blocks are never sent');
    const pages = check('listPages', await admin.api.spaces.listPages(done.result.space), { status: 200 });
    assert.equal(pages.pages[0].title, 'FR Guide');
    assert.ok(!JSON.stringify(done).includes('lt-conformance-secret'));

    // runTranslation: 204; nothing changed, nothing sent.
    sent = [];
    const run = await admin.api.orgs.runTranslation(org.id, t.id);
    assert.equal(run.status, 204);
    await new Promise((r) => setTimeout(r, 200));
    const again = await settle(t.id);
    assert.equal(again.result.space, done.result.space);
    assert.deepEqual(sent, []);
});

test('listTranslations, getTranslation, updateTranslation, deleteTranslation', async () => {
    const a = check(
        'createTranslation',
        await creator.api.orgs.createTranslation(org.id, { source: { space: space.id, language: 'en' }, language: 'de' }),
        { status: 201 },
    );
    const { items } = await listAll('listTranslations', (page) =>
        reader.api.orgs.listTranslations(org.id, { limit: 1, ...(page ? { page } : {}) }),
    );
    assert.ok(items.some((t) => t.id === a.id));
    const got = check('getTranslation', await reader.api.orgs.getTranslation(org.id, a.id), { status: 200 });
    assert.deepEqual(got.permissions, { view: true, edit: false });
    const updated = check(
        'updateTranslation',
        await creator.api.orgs.updateTranslation(org.id, a.id, { instructions: instructions('Be brief.') }),
        { status: 200 },
    );
    assert.equal(updated.instructions.nodes[0].nodes[0].leaves[0].text, 'Be brief.');
    await expectApiError(reader.api.orgs.updateTranslation(org.id, a.id, { instructions: instructions('No') }), 403, 'updateTranslation');
    await expectApiError(reader.api.orgs.runTranslation(org.id, a.id), 403, 'runTranslation');
    const del = await creator.api.orgs.deleteTranslation(org.id, a.id);
    assert.equal(del.status, 204);
    const again = await creator.api.orgs.deleteTranslation(org.id, a.id);
    assert.equal(again.status, 204);
    await expectApiError(admin.api.orgs.getTranslation(org.id, a.id), 404, 'getTranslation');
    await expectApiError(admin.api.orgs.runTranslation(org.id, a.id), 404, 'runTranslation');
});

test('createTranslation: 400 naming the field, 403 for readers', async () => {
    const body = await expectApiError(
        admin.api.orgs.createTranslation(org.id, { source: { space: space.id, language: 'en' }, language: 'xx' }),
        400,
        'createTranslation',
    );
    assert.match(body.error.message, /language/);
    await expectApiError(
        admin.api.orgs.createTranslation(org.id, { source: { space: 'missing', language: 'en' }, language: 'fr' }),
        400,
        'createTranslation',
    );
    await expectApiError(
        reader.api.orgs.createTranslation(org.id, { source: { space: space.id, language: 'en' }, language: 'fr' }),
        403,
        'createTranslation',
    );
});

test('the glossary: updateGlossaryEntries, listGlossaryEntries, getGlossaryEntry', async () => {
    const put = await creator.api.orgs.updateGlossaryEntries(org.id, {
        operations: [
            { type: 'insert', translations: { en: 'walrus', de: 'Walross' } },
            { type: 'insert', translations: { en: 'tusk', fr: 'défense' } },
        ],
    });
    check('updateGlossaryEntries', put, { status: 204 });
    const { items } = await listAll('listGlossaryEntries', (page) =>
        reader.api.orgs.listGlossaryEntries(org.id, { limit: 1, ...(page ? { page } : {}) }),
    );
    const walrus = items.find((e) => e.translations.en === 'walrus');
    assert.deepEqual(walrus.translations, { en: 'walrus', de: 'Walross' });
    const got = check('getGlossaryEntry', await reader.api.orgs.getGlossaryEntry(org.id, walrus.id), { status: 200 });
    assert.deepEqual(got, walrus);
    await expectApiError(
        creator.api.orgs.updateGlossaryEntries(org.id, { operations: [{ type: 'delete', id: 'nosuchentry' }] }),
        400,
        'updateGlossaryEntries',
    );
    await expectApiError(
        reader.api.orgs.updateGlossaryEntries(org.id, { operations: [{ type: 'delete', id: walrus.id }] }),
        403,
        'updateGlossaryEntries',
    );
    check(
        'updateGlossaryEntries',
        await creator.api.orgs.updateGlossaryEntries(org.id, { operations: [{ type: 'delete', id: walrus.id }] }),
        { status: 204 },
    );
    await expectApiError(reader.api.orgs.getGlossaryEntry(org.id, walrus.id), 404, 'getGlossaryEntry');
});

// Reusable contents and documents through the official client: a zip in Git Sync's layout,
// imported, gives its `.gitbook/includes/` files as reusable contents that two pages include;
// they are read in the space, a change request and a revision, and documents are read back by
// the ids pages and reusable contents give. Every answer is checked against the spec.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { crc32 } from 'node:zlib';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';
import { createChangeRequest } from '../lib/content.js';

/** A zip archive (stored, not compressed) of `[path, text]` entries. */
function zipOf(entries) {
    const locals = [];
    const centrals = [];
    let offset = 0;
    for (const [path, text] of entries) {
        const name = Buffer.from(path);
        const data = Buffer.from(text);
        const crc = crc32(data);
        const local = Buffer.alloc(30);
        local.writeUInt32LE(0x04034b50, 0);
        local.writeUInt16LE(20, 4);
        local.writeUInt32LE(crc, 14);
        local.writeUInt32LE(data.length, 18);
        local.writeUInt32LE(data.length, 22);
        local.writeUInt16LE(name.length, 26);
        const central = Buffer.alloc(46);
        central.writeUInt32LE(0x02014b50, 0);
        central.writeUInt16LE(20, 4);
        central.writeUInt16LE(20, 6);
        central.writeUInt32LE(crc, 16);
        central.writeUInt32LE(data.length, 20);
        central.writeUInt32LE(data.length, 24);
        central.writeUInt16LE(name.length, 28);
        central.writeUInt32LE(offset, 42);
        locals.push(local, name, data);
        centrals.push(central, name);
        offset += local.length + name.length + data.length;
    }
    const dir = Buffer.concat(centrals);
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    end.writeUInt16LE(entries.length, 8);
    end.writeUInt16LE(entries.length, 10);
    end.writeUInt32LE(dir.length, 12);
    end.writeUInt32LE(offset, 16);
    return Buffer.concat([...locals, dir, end]);
}

const archive = zipOf([
    ['README.md', '# Welcome\n\n{% include ".gitbook/includes/support.md" %}\n'],
    ['guide.md', '# Guide\n\nSteps.\n\n{% include ".gitbook/includes/support.md" %}\n'],
    ['.gitbook/includes/support.md', '---\ntitle: Support banner\n---\n\nWrite to **support**.\n'],
]);

let sources;
let server;
let admin;
let reader;
let space;
before(async () => {
    sources = await new Promise((resolve) => {
        const srv = createServer((req, res) => {
            res.setHeader('content-type', 'application/zip');
            res.end(archive);
        });
        srv.listen(0, '127.0.0.1', () => resolve(srv));
    });
    process.env.QUIRE_FETCH_ALLOW = '127.0.0.1/32';
    server = await startServer();
    delete process.env.QUIRE_FETCH_ALLOW;
    [admin, reader] = await Promise.all(['admin', 'reader'].map((l) => newUser(server, l)));
    const org = await setupOrg(server, admin, 'Reusable Org', [{ user: reader, role: 'read' }]);
    space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Kit' }), { status: 201 });
    const url = `http://127.0.0.1:${sources.address().port}/kit.zip`;
    const imported = check('importContent', await admin.api.spaces.importContent(space.id, { url, source: 'zip' }), {
        status: 200,
    });
    assert.equal(imported.importedResources, 3);
});
after(async () => {
    await server?.stop();
    sources?.close();
});

test('reusable contents are read in the space, a change request and a revision', async () => {
    const rev = check('getCurrentRevision', await reader.api.spaces.getCurrentRevision(space.id), { status: 200 });
    assert.equal(rev.reusableContents.length, 1);
    const [rc] = rev.reusableContents;
    assert.equal(rc.title, 'Support banner');
    assert.ok(rc.document);
    const cr = await createChangeRequest(admin, space.id, 'Later');
    const reads = [
        ['getReusableContentById', reader.api.spaces.getReusableContentById(space.id, rc.id)],
        [
            'getReusableContentInRevisionById',
            reader.api.spaces.getReusableContentInRevisionById(space.id, rev.id, rc.id),
        ],
        [
            'getReusableContentInChangeRequestById',
            reader.api.spaces.getReusableContentInChangeRequestById(space.id, cr.id, rc.id),
        ],
    ];
    for (const [op, call] of reads) {
        assert.deepEqual(check(op, await call, { status: 200 }), rc, op);
    }
    const doc = check(
        'getReusableContentDocumentInRevisionById',
        await reader.api.spaces.getReusableContentDocumentInRevisionById(space.id, rev.id, rc.id),
        { status: 200 },
    );
    assert.equal(doc.object, 'document');
    assert.match(JSON.stringify(doc), /support/);
    await expectApiError(
        reader.api.spaces.getReusableContentById(space.id, 'missing'),
        404,
        'getReusableContentById',
    );
});

test('documents are read by the ids pages and reusable contents give', async () => {
    const rev = check('getCurrentRevision', await reader.api.spaces.getCurrentRevision(space.id), { status: 200 });
    const guide = rev.pages.find((p) => p.title === 'Guide');
    assert.ok(guide.documentId, 'a page with a body names its document');
    const doc = check('getDocumentById', await reader.api.spaces.getDocumentById(space.id, guide.documentId), {
        status: 200,
    });
    assert.match(JSON.stringify(doc), /Steps\./);
    const shared = check(
        'getDocumentById',
        await reader.api.spaces.getDocumentById(space.id, rev.reusableContents[0].document, { schema: 'current' }),
        { status: 200 },
    );
    assert.match(JSON.stringify(shared), /support/);
    await expectApiError(reader.api.spaces.getDocumentById(space.id, 'f'.repeat(64)), 404, 'getDocumentById');
});

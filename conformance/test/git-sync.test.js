// Git Sync through the official client: exportToGitRepository and importGitRepository
// (204), getSpaceGitInfo (GitSyncState, 404 before any sync), every answer validated against
// the official schemas, against a bare repository that `git upload-pack` and
// `git receive-pack` serve over smart HTTP on loopback; and the git fields of revisions,
// pages and files, checked against a clone of the space from Quire itself.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';
import { updateContent, createChangeRequest } from '../lib/content.js';

const hasGit = spawnSync('git', ['--version']).status === 0;

let dir;
let repo;
let remote;
let url;
let server;
let admin;
let editor;
let space;

function git(cwd, ...args) {
    return execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.com', ...args], {
        cwd,
        encoding: 'utf8',
    });
}

function serveRepository(bare) {
    return new Promise((resolve) => {
        const srv = createServer((req, res) => {
            const chunks = [];
            req.on('data', (c) => chunks.push(c));
            req.on('end', () => {
                for (const service of ['upload-pack', 'receive-pack']) {
                    if (req.method === 'GET' && req.url === `/docs.git/info/refs?service=git-${service}`) {
                        const first = `# service=git-${service}\n`;
                        const head = `${(first.length + 4).toString(16).padStart(4, '0')}${first}0000`;
                        const out = execFileSync('git', [service, '--stateless-rpc', '--advertise-refs', bare]);
                        res.setHeader('content-type', `application/x-git-${service}-advertisement`);
                        return res.end(Buffer.concat([Buffer.from(head), out]));
                    }
                    if (req.method === 'POST' && req.url === `/docs.git/git-${service}`) {
                        const out = execFileSync('git', [service, '--stateless-rpc', bare], {
                            input: Buffer.concat(chunks),
                        });
                        res.setHeader('content-type', `application/x-git-${service}-result`);
                        return res.end(out);
                    }
                }
                res.statusCode = 404;
                res.end('missing');
            });
        });
        srv.listen(0, '127.0.0.1', () => resolve(srv));
    });
}

/** The space's Git Sync state once its operation has ended. */
async function settled() {
    for (let i = 0; i < 200; i++) {
        const info = check('getSpaceGitInfo', await admin.api.spaces.getSpaceGitInfo(space.id), { status: 200 });
        if (info.operation?.state !== 'running') return info;
        await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the Git Sync operation did not end');
}

before(async () => {
    if (!hasGit) return;
    dir = mkdtempSync(join(tmpdir(), 'quire-git-sync-'));
    repo = join(dir, 'docs.git');
    git(dir, 'init', '-q', '--bare', '-b', 'main', repo);
    remote = await serveRepository(repo);
    url = `http://127.0.0.1:${remote.address().port}/docs.git`;
    process.env.QUIRE_FETCH_ALLOW = '127.0.0.1/32';
    server = await startServer();
    delete process.env.QUIRE_FETCH_ALLOW;
    [admin, editor] = await Promise.all(['admin', 'editor'].map((l) => newUser(server, l)));
    const org = await setupOrg(server, admin, 'Git Sync Org', [{ user: editor, role: 'edit' }]);
    space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Synced' }), { status: 201 });
    const cr = await createChangeRequest(admin, space.id, 'First page');
    await updateContent(server, admin, space.id, cr.id, [
        { operation: 'insert_page', title: 'Home', document: { markdown: 'Welcome.\n' } },
    ]);
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
});

after(async () => {
    await server?.stop();
    remote?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
});

test('getSpaceGitInfo is 404 before a sync; editors cannot set one up', { skip: !hasGit && 'no git' }, async () => {
    await expectApiError(admin.api.spaces.getSpaceGitInfo(space.id), 404, 'getSpaceGitInfo');
    await expectApiError(
        editor.api.spaces.exportToGitRepository(space.id, { url, ref: 'refs/heads/main', commitMessage: 'x' }),
        403,
        'exportToGitRepository',
    );
});

test('exportToGitRepository, then importGitRepository of an edit made in the repository', { skip: !hasGit && 'no git' }, async () => {
    const exported = await admin.api.spaces.exportToGitRepository(space.id, {
        url,
        ref: 'refs/heads/main',
        commitMessage: 'From Quire',
        gitInfo: { provider: 'gitlab', url: 'https://gitlab.example/team/docs/-/tree/main' },
    });
    check('exportToGitRepository', exported, { status: 204 });
    let info = await settled();
    assert.equal(info.operation.state, 'success', JSON.stringify(info));
    assert.equal(info.installationProvider, 'gitlab');
    assert.equal(info.repoName, 'docs');
    assert.equal(git(repo, 'log', '--format=%s', 'main'), 'From Quire\n');

    const work = join(dir, 'work');
    git(dir, 'clone', '-q', repo, work);
    assert.equal(readFileSync(join(work, 'README.md'), 'utf8'), '# Home\n\nWelcome.\n');
    writeFileSync(join(work, 'README.md'), '# Home\n\nWelcome from git.\n');
    git(work, 'commit', '-qam', 'Edit in git');
    git(work, 'push', '-q', 'origin', 'main');

    const imported = await admin.api.spaces.importGitRepository(space.id, { url, ref: 'refs/heads/main' });
    check('importGitRepository', imported, { status: 204 });
    info = await settled();
    assert.equal(info.operation.state, 'success', JSON.stringify(info));
    const pages = check('listPages', await admin.api.spaces.listPages(space.id), { status: 200 }).pages;
    const page = check(
        'getPageById',
        await admin.api.spaces.getPageById(space.id, pages[0].id, { format: 'markdown' }),
        { status: 200 },
    );
    assert.equal(page.markdown, 'Welcome from git.\n');
});

test('getCurrentRevision / getPageById / getFileById: the commit and blobs a clone of the space holds', { skip: !hasGit && 'no git' }, async () => {
    const cr = await createChangeRequest(admin, space.id, 'A note');
    await updateContent(server, admin, space.id, cr.id, [
        { operation: 'insert_files', files: [{ base64: Buffer.from('hello\n').toString('base64'), name: 'note.txt' }] },
    ]);
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
    const clone = join(dir, 'quire-clone');
    const host = server.url.replace(/^http:\/\//, '');
    git(dir, 'clone', '-q', `http://git:${admin.token}@${host}/git/${space.id}.git`, clone);
    const head = git(clone, 'rev-parse', 'HEAD').trim();
    const tree = Object.fromEntries(
        git(clone, 'ls-tree', '-r', 'HEAD')
            .trim()
            .split('\n')
            .map((line) => {
                const [meta, path] = line.split('\t');
                return [path, meta.split(' ')[2]];
            }),
    );

    const rev = check('getCurrentRevision', await admin.api.spaces.getCurrentRevision(space.id), { status: 200 });
    assert.equal(rev.git.oid, head);
    assert.equal(rev.git.createdByGitBook, true);
    assert.match(rev.git.message, /^GITBOOK-\d+: A note$/);
    const documents = rev.pages.filter((p) => p.type === 'document');
    assert.ok(documents.length > 0);
    for (const p of documents) assert.equal(p.git.oid, tree[p.git.path], JSON.stringify(p));
    const file = rev.files.find((f) => f.name === 'note.txt');
    assert.deepEqual(file.git, { oid: tree['.gitbook/assets/note.txt'], path: '.gitbook/assets/note.txt' });

    const page = check('getPageById', await admin.api.spaces.getPageById(space.id, documents[0].id), { status: 200 });
    assert.deepEqual(page.git, documents[0].git);
    const got = check('getFileById', await admin.api.spaces.getFileById(space.id, file.id), { status: 200 });
    assert.deepEqual(got.git, file.git);
});

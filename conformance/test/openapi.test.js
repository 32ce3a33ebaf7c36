// OpenAPI specifications through the official client: the eleven operations, with every
// response validated against the official schemas; processing from text and from a URL;
// and the official CLI (`gitbook openapi publish`) publishing to Quire unchanged.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg, listAll } from '../lib/client.js';

const here = dirname(fileURLToPath(import.meta.url));
const CLI = resolve(here, '..', 'node_modules', '@gitbook', 'cli', 'cli.js');

const PETS_YAML = `openapi: 3.0.3
info:
  title: Pets
  version: '1.0'
paths:
  /pets/{petId}:
    get:
      operationId: getPet
      parameters:
        - name: petId
          in: path
          required: true
          schema: { type: string }
      responses:
        200:
          description: The pet
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Pet'
components:
  schemas:
    Pet:
      type: object
      properties:
        id: { type: string }
`;

const PETS_31 = JSON.stringify({
    openapi: '3.1.0',
    info: { title: 'Pets', version: '2.0' },
    paths: { '/pets': { get: { responses: { 200: { description: 'OK' } } } } },
});

let server;
let admin;
let reader;
let outsider;
let org;
let source; // a loopback server serving specifications
let sourceUrl;
let work;

before(async () => {
    server = await startServer({ args: ['--fetch-allow', '127.0.0.1/32'] });
    admin = await newUser(server, 'admin');
    reader = await newUser(server, 'reader');
    outsider = await newUser(server, 'outsider');
    org = await setupOrg(server, admin, 'OpenAPI Org', [{ user: reader, role: 'read' }]);
    source = createServer((req, res) => {
        if (req.url === '/pets.yaml') {
            res.writeHead(200, { 'content-type': 'application/yaml' });
            res.end(PETS_YAML);
        } else if (req.url === '/pets-31.json') {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(PETS_31);
        } else {
            res.writeHead(404);
            res.end();
        }
    });
    await new Promise((r) => source.listen(0, '127.0.0.1', r));
    sourceUrl = `http://127.0.0.1:${source.address().port}`;
    work = await mkdtemp(join(tmpdir(), 'quire-openapi-'));
});
after(async () => {
    source?.close();
    if (work) await rm(work, { recursive: true, force: true });
    await server?.stop();
});

/** Waits until the spec's processing is complete; returns the (validated) spec. */
async function processed(slug) {
    const deadline = Date.now() + 20_000;
    for (;;) {
        const spec = check('getOpenAPISpecBySlug', await admin.api.orgs.getOpenApiSpecBySlug(org.id, slug), {
            status: 200,
        });
        if (spec.processingState === 'complete') return spec;
        assert.ok(Date.now() < deadline, `spec ${slug} never finished processing`);
        await new Promise((r) => setTimeout(r, 50));
    }
}

test('createOpenAPISpec, getOpenAPISpecBySlug, listOpenAPISpecs: from text, then processed', async () => {
    const created = check(
        'createOpenAPISpec',
        await admin.api.orgs.createOpenApiSpec(org.id, { slug: 'pets', source: { text: PETS_YAML } }),
        { status: 201 },
    );
    assert.equal(created.object, 'openapi-spec');
    assert.equal(created.slug, 'pets');
    assert.ok(['pending', 'progress', 'complete'].includes(created.processingState));
    const spec = await processed('pets');
    assert.equal(spec.lastProcessErrorCode, undefined);
    assert.equal(typeof spec.lastVersion, 'string');
    assert.equal(typeof spec.lastProcessedAt, 'string');

    const { items } = await listAll('listOpenAPISpecs', (page) =>
        admin.api.orgs.listOpenApiSpecs(org.id, { page, limit: 1 }),
    );
    assert.ok(items.some((s) => s.slug === 'pets'));
    check('listOpenAPISpecs', await reader.api.orgs.listOpenApiSpecs(org.id), { status: 200 });

    await expectApiError(
        admin.api.orgs.createOpenApiSpec(org.id, { slug: 'Not A Slug', source: { text: PETS_YAML } }),
        400,
        'createOpenAPISpec',
    );
    await expectApiError(admin.api.orgs.createOpenApiSpec(org.id, { slug: 'x', source: {} }), 400, 'createOpenAPISpec');
    await expectApiError(
        reader.api.orgs.createOpenApiSpec(org.id, { slug: 'nope', source: { text: PETS_YAML } }),
        403,
        'createOpenAPISpec',
    );
    await expectApiError(outsider.api.orgs.getOpenApiSpecBySlug(org.id, 'pets'), 404, 'getOpenAPISpecBySlug');
    await expectApiError(admin.api.orgs.getOpenApiSpecBySlug(org.id, 'absent'), 404, 'getOpenAPISpecBySlug');
});

test('createOrUpdateOpenAPISpecBySlug: 201 for a new slug, 200 with a new version when the document changed', async () => {
    check(
        'createOrUpdateOpenAPISpecBySlug',
        await admin.api.orgs.createOrUpdateOpenApiSpecBySlug(org.id, 'remote', { source: { url: `${sourceUrl}/pets.yaml` } }),
        { status: 201 },
    );
    const first = await processed('remote');
    assert.equal(first.sourceURL, `${sourceUrl}/pets.yaml`);
    assert.equal(first.lastProcessErrorCode, undefined);

    check(
        'createOrUpdateOpenAPISpecBySlug',
        await admin.api.orgs.createOrUpdateOpenApiSpecBySlug(org.id, 'remote', { source: { url: `${sourceUrl}/pets.yaml` } }),
        { status: 200 },
    );
    const same = await processed('remote');
    assert.equal(same.lastVersion, first.lastVersion, 'an unchanged document adds no version');

    check(
        'createOrUpdateOpenAPISpecBySlug',
        await admin.api.orgs.createOrUpdateOpenApiSpecBySlug(org.id, 'remote', { source: { text: PETS_31 } }),
        { status: 200 },
    );
    const changed = await processed('remote');
    assert.notEqual(changed.lastVersion, first.lastVersion);

    // A source that cannot be fetched, and Swagger 2.0: failed states with the official codes.
    await admin.api.orgs.createOrUpdateOpenApiSpecBySlug(org.id, 'gone', { source: { url: `${sourceUrl}/missing.yaml` } });
    const gone = await processed('gone');
    assert.equal(gone.lastProcessErrorCode, 'FETCH_ERROR');
    await admin.api.orgs.createOrUpdateOpenApiSpecBySlug(org.id, 'old', {
        source: { text: JSON.stringify({ swagger: '2.0', info: { title: 'Old', version: '1' }, paths: {} }) },
    });
    const old = await processed('old');
    assert.equal(old.lastProcessErrorCode, 'PARSE_ERROR');
    assert.equal(old.lastProcessedErrors[0].code, 'SWAGGER_2_UNSUPPORTED');

    await expectApiError(
        reader.api.orgs.createOrUpdateOpenApiSpecBySlug(org.id, 'remote', { source: { text: PETS_31 } }),
        403,
        'createOrUpdateOpenAPISpecBySlug',
    );
});

test('versions: list, latest, by id, and their content', async () => {
    const spec = await processed('remote');
    const { items } = await listAll('listOpenAPISpecVersions', (page) =>
        admin.api.orgs.listOpenApiSpecVersions(org.id, 'remote', { page, limit: 1 }),
    );
    assert.equal(items.length, 2);
    assert.equal(items[0].id, spec.lastVersion, 'newest first');

    const latest = check('getLatestOpenAPISpecVersion', await reader.api.orgs.getLatestOpenApiSpecVersion(org.id, 'remote'), {
        status: 200,
    });
    assert.equal(latest.id, spec.lastVersion);
    const byId = check(
        'getOpenAPISpecVersionById',
        await admin.api.orgs.getOpenApiSpecVersionById(org.id, 'remote', items[1].id),
        { status: 200 },
    );
    assert.equal(byId.object, 'openapi-spec-version');

    const latestContent = check(
        'getLatestOpenAPISpecVersionContent',
        await admin.api.orgs.getLatestOpenApiSpecVersionContent(org.id, 'remote'),
        { status: 200 },
    );
    assert.equal(Object.values(latestContent.filesystem)[0].openapi, '3.1.0');
    const oldContent = check(
        'getOpenAPISpecVersionContentById',
        await admin.api.orgs.getOpenApiSpecVersionContentById(org.id, 'remote', items[1].id),
        { status: 200 },
    );
    assert.equal(Object.values(oldContent.filesystem)[0].openapi, '3.0.3');

    // The version's URL serves the stored document.
    const res = await fetch(oldContent.url, { headers: { Authorization: `Bearer ${admin.token}` } });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).info.version, '1.0');

    await expectApiError(admin.api.orgs.getOpenApiSpecVersionById(org.id, 'remote', 'nope'), 404, 'getOpenAPISpecVersionById');
    await expectApiError(
        admin.api.orgs.getOpenApiSpecVersionContentById(org.id, 'remote', 'nope'),
        404,
        'getOpenAPISpecVersionContentById',
    );
    await expectApiError(admin.api.orgs.getLatestOpenApiSpecVersion(org.id, 'gone'), 404, 'getLatestOpenAPISpecVersion');
    await expectApiError(
        admin.api.orgs.getLatestOpenApiSpecVersionContent(org.id, 'gone'),
        404,
        'getLatestOpenAPISpecVersionContent',
    );
    await expectApiError(admin.api.orgs.listOpenApiSpecVersions(org.id, 'absent'), 404, 'listOpenAPISpecVersions');
});

test('updateOpenAPISpecBySlug: visibility decides who reads the document URL', async () => {
    const content = check(
        'getLatestOpenAPISpecVersionContent',
        await admin.api.orgs.getLatestOpenApiSpecVersionContent(org.id, 'pets'),
        { status: 200 },
    );
    assert.equal((await fetch(content.url)).status, 401, 'private: a token is needed');
    const pub = check(
        'updateOpenAPISpecBySlug',
        await admin.api.orgs.updateOpenApiSpecBySlug(org.id, 'pets', { visibility: 'public' }),
        { status: 200 },
    );
    assert.equal(pub.visibility, 'public');
    const open = await fetch(content.url);
    assert.equal(open.status, 200);
    assert.equal((await open.json()).openapi, '3.0.3');
    check('updateOpenAPISpecBySlug', await admin.api.orgs.updateOpenApiSpecBySlug(org.id, 'pets', { visibility: 'private' }), {
        status: 200,
    });
    assert.equal((await fetch(content.url)).status, 401);
    await expectApiError(
        admin.api.orgs.updateOpenApiSpecBySlug(org.id, 'pets', { visibility: 'secret' }),
        400,
        'updateOpenAPISpecBySlug',
    );
    await expectApiError(
        reader.api.orgs.updateOpenApiSpecBySlug(org.id, 'pets', { visibility: 'public' }),
        403,
        'updateOpenAPISpecBySlug',
    );
});

test('deleteOpenAPISpecBySlug: 204, also when absent', async () => {
    await admin.api.orgs.createOpenApiSpec(org.id, { slug: 'doomed', source: { text: PETS_YAML } });
    const res = await admin.api.orgs.deleteOpenApiSpecBySlug(org.id, 'doomed');
    check('deleteOpenAPISpecBySlug', res, { status: 204 });
    await expectApiError(admin.api.orgs.getOpenApiSpecBySlug(org.id, 'doomed'), 404, 'getOpenAPISpecBySlug');
    check('deleteOpenAPISpecBySlug', await admin.api.orgs.deleteOpenApiSpecBySlug(org.id, 'doomed'), { status: 204 });
    await expectApiError(reader.api.orgs.deleteOpenApiSpecBySlug(org.id, 'pets'), 403, 'deleteOpenAPISpecBySlug');
});

/** Runs the official CLI with Quire as its endpoint; returns its output. */
function gitbook(args) {
    return new Promise((res, rej) => {
        execFile(
            process.execPath,
            [CLI, ...args],
            {
                cwd: work,
                env: {
                    ...process.env,
                    GITBOOK_ENDPOINT: server.url,
                    GITBOOK_TOKEN: admin.token,
                    // The CLI keeps its settings under the home folder: a fresh one per run.
                    HOME: work,
                    XDG_CONFIG_HOME: work,
                },
                timeout: 60_000,
            },
            (err, stdout, stderr) => {
                if (err) return rej(new Error(`gitbook ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`));
                res(stdout);
            },
        );
    });
}

test('the official CLI publishes a specification from a file and from a URL', async () => {
    const file = join(work, 'cli-spec.yaml');
    await writeFile(file, PETS_YAML);
    const out = await gitbook(['openapi', 'publish', '--spec', 'cli-pets', '--organization', org.id, file]);
    assert.match(out, /cli-pets/);
    const fromFile = await processed('cli-pets');
    assert.equal(fromFile.lastProcessErrorCode, undefined);
    assert.equal(typeof fromFile.lastVersion, 'string');

    await gitbook(['openapi', 'publish', '--spec', 'cli-pets', '--organization', org.id, `${sourceUrl}/pets-31.json`]);
    const fromUrl = await processed('cli-pets');
    assert.equal(fromUrl.sourceURL, `${sourceUrl}/pets-31.json`);
    assert.notEqual(fromUrl.lastVersion, fromFile.lastVersion);
    const content = check(
        'getLatestOpenAPISpecVersionContent',
        await admin.api.orgs.getLatestOpenApiSpecVersionContent(org.id, 'cli-pets'),
        { status: 200 },
    );
    assert.equal(Object.values(content.filesystem)[0].openapi, '3.1.0');
});

test('getComputedRevision, getComputedDocument: the reference pages of a spec', async () => {
    const tagged = PETS_YAML.replace('      operationId: getPet\n', '      operationId: getPet\n      tags: [pets]\n');
    check(
        'createOpenAPISpec',
        await admin.api.orgs.createOpenApiSpec(org.id, { slug: 'computed', source: { text: tagged } }),
        { status: 201 },
    );
    await processed('computed');
    const space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Reference' }), {
        status: 201,
    });
    const source = (props) => ({
        type: 'builtin:openapi',
        props,
        dependencies: { spec: { ref: { kind: 'openapi', spec: 'computed' } } },
    });
    const rev = check(
        'getComputedRevision',
        await reader.api.spaces.getComputedRevision(space.id, { source: source({ models: true }), seed: 'c1' }),
        { status: 200 },
    );
    assert.deepEqual(
        rev.pages.map((p) => p.title),
        ['pets', 'Models'],
    );
    assert.deepEqual(rev.files, []);
    const doc = check(
        'getComputedDocument',
        await reader.api.spaces.getComputedDocument(space.id, {
            source: source({ doc: 'operations', page: 'pets' }),
            seed: 'c1',
        }),
        { status: 200 },
    );
    assert.equal(doc.nodes[0].type, 'openapi-operation');
    await expectApiError(
        reader.api.spaces.getComputedDocument(space.id, {
            source: { type: 'builtin:translation', props: { space: space.id, document: 'x' } },
            seed: 'c1',
        }),
        400,
        'getComputedDocument',
    );
});

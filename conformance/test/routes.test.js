// The route table against the official specifications (no server): every operation that
// `quire routes` lists under `/v1` must exist, under the same operationId, method and path
// template, in @gitbook/api 0.137.0 or 0.202.0. A route added with a misspelt operationId,
// the wrong method or a path that differs from the spec fails here.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { QUIRE_BIN } from '../lib/server.js';
import { spec137, spec202 } from '../lib/spec.js';

const run = promisify(execFile);

/** The table as the binary prints it: `[{method, path, operationId, access}]`. */
async function routeTable() {
    const { stdout } = await run(QUIRE_BIN, ['routes'], { maxBuffer: 16 * 1024 * 1024 });
    return JSON.parse(stdout);
}

/**
 * A Quire path template as the spec writes it: the specs' server base already ends in
 * `/v1`, and the one multi-segment parameter is routed as `{*pagePath}`.
 */
export function specPath(path) {
    const rest = path.replace(/^\/v1(?=\/|$)/, '');
    return (rest === '' ? '/' : rest).replace('{*pagePath}', '{pagePath}');
}

/** Why a route does not match the specs, or undefined when one spec declares it as routed. */
export function mismatch(route, specs = [spec137, spec202]) {
    if (!/^\/v1(\/|$)/.test(route.path)) return `${route.method} ${route.path}: not under /v1`;
    const path = specPath(route.path);
    const declared = specs
        .map((spec) => ({ spec: spec.id, entry: spec.operations.get(route.operationId) }))
        .filter((d) => d.entry);
    if (declared.length === 0) {
        return `${route.method} ${route.path}: operationId ${route.operationId} is in neither spec`;
    }
    if (declared.some((d) => d.entry.method === route.method && d.entry.path === path)) return undefined;
    const where = declared.map((d) => `${d.spec}: ${d.entry.method} ${d.entry.path}`).join('; ');
    return `${route.method} ${route.path} (${route.operationId}) differs from the spec (${where})`;
}

test('the specs declare their paths under the /v1 server base', () => {
    for (const spec of [spec137, spec202]) {
        assert.match(spec.raw.servers[0].url, /\/v1$/, spec.id);
    }
});

test('every /v1 route of the table is an official operation with the same method and path', async () => {
    const routes = await routeTable();
    assert.ok(routes.length > 100, `only ${routes.length} routes listed`);
    const api = routes.filter((r) => r.path === '/v1' || r.path.startsWith('/v1/'));
    // Everything outside /v1 (health, signed downloads) is Quire's own and exempt.
    assert.equal(api.length, routes.length, 'the table lists only API operations');
    const problems = api.map((r) => mismatch(r)).filter(Boolean);
    assert.deepEqual(problems, [], problems.join('\n'));
    const ids = new Set(api.map((r) => r.operationId));
    assert.equal(ids.size, api.length, 'an operationId is routed twice');
});

test('the comparison refuses a wrong operationId, method or path', () => {
    const good = { method: 'GET', path: '/v1/spaces/{spaceId}', operationId: 'getSpaceById' };
    assert.equal(mismatch(good), undefined);
    assert.equal(mismatch({ method: 'GET', path: '/v1/', operationId: 'getApiInformation' }), undefined);
    assert.equal(
        mismatch({
            method: 'GET',
            path: '/v1/spaces/{spaceId}/content/path/{*pagePath}',
            operationId: 'getPageByPath',
        }),
        undefined,
    );
    // Only in 0.202.0.
    assert.equal(mismatch({ method: 'POST', path: '/v1/orgs', operationId: 'createOrganization' }), undefined);
    assert.match(mismatch({ ...good, operationId: 'getSpace' }), /in neither spec/);
    assert.match(mismatch({ ...good, method: 'PUT' }), /differs/);
    assert.match(mismatch({ ...good, path: '/v1/spaces/{space}' }), /differs/);
    assert.match(mismatch({ ...good, path: '/spaces/{spaceId}' }), /not under \/v1/);
});

// The official client wired to a Quire server, with every response validated.
//
// Every HTTP response the suite receives — through the official client or through plain
// fetch — passes through `checkedFetch`, which finds the operation (method + path) in the
// official spec and validates the body against the declared response schema. A violation
// makes the call reject with a SchemaViolation, so the test that made it fails with the
// ajv errors and the body.

import assert from 'node:assert/strict';
import { GitBookAPI, GitBookAPIError } from '@gitbook/api';
import { GitBookAPI as GitBookAPI202, GitBookAPIError as GitBookAPIError202 } from '@gitbook/api-202';
import { spec137, spec202, validate, validateErrorShape, SchemaViolation } from './spec.js';
import { uniqueSuffix } from './server.js';

export { GitBookAPI, GitBookAPIError, SchemaViolation, spec137, spec202 };

/** Finds the operation for a request: the 0.137.0 spec first, then 0.202.0. */
function operationFor(method, apiPath) {
    for (const spec of [spec137, spec202]) {
        const op = spec.match(method, apiPath);
        if (op) return { spec, op };
    }
    return undefined;
}

async function checkedFetch(input, init = {}) {
    const method = (init.method || (typeof input === 'object' && input.method) || 'GET').toUpperCase();
    const res = await fetch(input, init);
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const text = await res.clone().text();
    let body;
    if (text.length > 0) {
        try {
            body = JSON.parse(text);
        } catch {
            throw new SchemaViolation(`${method} ${url.pathname} → ${res.status}: body is not JSON: ${text.slice(0, 500)}`);
        }
        const type = res.headers.get('content-type') || '';
        if (!type.startsWith('application/json')) {
            throw new SchemaViolation(
                `${method} ${url.pathname} → ${res.status}: JSON body served as content-type "${type}"`,
            );
        }
    }
    const apiPath = url.pathname.replace(/^\/v1(?=\/|$)/, '') || '/';
    const found = operationFor(method, apiPath);
    if (found) {
        validate(found.spec, found.op.id, res.status, body, { hasBody: text.length > 0 });
    } else if (res.ok) {
        throw new SchemaViolation(`${method} ${url.pathname} → ${res.status}: no such operation in the official spec`);
    } else {
        // An unknown endpoint must still answer with the common error shape.
        validateErrorShape(`${method} ${url.pathname}`, res.status, body);
    }
    res.quire = { operationId: found?.op.id, spec: found?.spec, body, text };
    return res;
}

/** The official client for `server`, authenticated with `token` (none when omitted). */
export function client(server, token) {
    return new GitBookAPI({
        endpoint: server.url,
        authToken: token,
        serviceBinding: { fetch: checkedFetch },
    });
}

/**
 * The 0.202.0 client, validated the same way, for operations that 0.137.0 lacks: it also
 * shows how newer clients serialise their queries (arrays as repeated keys).
 */
export function client202(server, token) {
    return new GitBookAPI202({
        endpoint: server.url,
        authToken: token,
        serviceBinding: { fetch: checkedFetch },
    });
}

/**
 * Checks a response obtained through the client: it was routed to `operationId`, and its
 * status and body conform to the official schema (validated again, explicitly).
 */
export function check(operationId, res, { spec = spec137, status } = {}) {
    assert.equal(res.quire?.operationId, operationId, `response came from ${res.quire?.operationId}, not ${operationId}`);
    if (status !== undefined) assert.equal(res.status, status, `${operationId}: expected HTTP ${status}, got ${res.status}`);
    validate(spec, operationId, res.status, res.quire.body, { hasBody: res.quire.text.length > 0 });
    return res.data ?? res.quire.body;
}

/**
 * Awaits a client call that must fail with HTTP `status`; returns the (validated) error body.
 * A schema violation (or any other error) is rethrown as is.
 */
export async function expectApiError(promise, status, operationId) {
    let err;
    try {
        const res = await promise;
        assert.fail(`expected HTTP ${status} from ${operationId ?? 'the call'}, got ${res.status}`);
    } catch (e) {
        err = e;
    }
    if (!(err instanceof GitBookAPIError || err instanceof GitBookAPIError202)) throw err;
    const body = err.response.quire?.body;
    assert.equal(err.code, status, `expected HTTP ${status}, got ${err.code}: ${JSON.stringify(body)}`);
    if (operationId) assert.equal(err.response.quire?.operationId, operationId);
    assert.equal(body?.error?.code, status);
    assert.equal(typeof body?.error?.message, 'string');
    return body;
}

/** Plain fetch (validated the same way) for operations the 0.137.0 client lacks. */
export async function raw(server, method, path, { token, body, headers = {} } = {}) {
    const init = { method, headers: { ...headers } };
    if (token) init.headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) {
        init.headers['Content-Type'] = 'application/json';
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
    }
    const res = await checkedFetch(`${server.url}${path}`, init);
    return { status: res.status, body: res.quire.body, headers: res.headers, res };
}

/** `createOrganization` (POST /v1/orgs, 0.202.0 spec): returns the organization. */
export async function createOrganization(server, token, title, extra = {}) {
    const { status, body } = await raw(server, 'POST', '/v1/orgs', { token, body: { title, ...extra } });
    assert.equal(status, 201, `createOrganization: expected 201, got ${status}: ${JSON.stringify(body)}`);
    validate(spec202, 'createOrganization', status, body);
    return body;
}

/**
 * A fresh user: token from `quire admin create-token`, client, and the user object.
 * `domain` picks the e-mail domain (default conformance.test); the local part is unique.
 */
export async function newUser(server, label = 'user', { name, domain = 'conformance.test' } = {}) {
    const email = `${label}-${uniqueSuffix()}@${domain}`;
    const displayName = name ?? `${label[0].toUpperCase()}${label.slice(1)} Conformance`;
    const token = await server.createToken(email, displayName);
    const api = client(server, token);
    const res = await api.user.getAuthenticatedUser();
    const user = check('getAuthenticatedUser', res, { status: 200 });
    return { email, token, api, user, id: user.id };
}

/** Walks every page of a list operation; returns all items and the responses. */
export async function listAll(operationId, call) {
    const items = [];
    const pages = [];
    let page;
    for (let i = 0; i < 1000; i++) {
        const res = await call(page);
        const data = check(operationId, res, { status: 200 });
        pages.push(data);
        items.push(...data.items);
        if (!data.next) break;
        page = data.next.page;
    }
    return { items, pages };
}

/**
 * Creates an organization owned by `owner` (its admin) and brings `members` in through
 * inviteUsersToOrganization, each `{ user, role }` (role null = guest).
 */
export async function setupOrg(server, owner, title, members = []) {
    const org = await createOrganization(server, owner.token, title);
    for (const { user, role } of members) {
        const res = await owner.api.orgs.inviteUsersToOrganization(org.id, {
            emails: [{ email: user.email, role }],
        });
        const data = check('inviteUsersToOrganization', res, { status: 200 });
        assert.deepEqual(data.users, [user.id], `${user.email} joins ${title} at once`);
    }
    return org;
}

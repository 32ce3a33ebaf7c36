// Helpers for the content tests: authoring batches, space counters, documents, downloads.

import assert from 'node:assert/strict';
import { check, raw, spec202 } from './client.js';
import { validate } from './spec.js';

/**
 * `updateChangeRequestContent` (POST …/change-requests/{cr}/content, 0.202.0 spec only):
 * applies `changes` and returns the 200 body — the ChangeRequest by default, or
 * `{changeRequest, changes, insertedFiles}` with `compat: false`.
 */
export async function updateContent(server, who, spaceId, crId, changes, { compat } = {}) {
    const query = compat === undefined ? '' : `?compat=${compat}`;
    const { status, body } = await raw(server, 'POST', `/v1/spaces/${spaceId}/change-requests/${crId}/content${query}`, {
        token: who.token,
        body: { changes },
    });
    assert.equal(status, 200, `updateChangeRequestContent: expected 200, got ${status}: ${JSON.stringify(body)}`);
    validate(spec202, 'updateChangeRequestContent', status, body);
    return body;
}

/** `updateChangeRequestContent` that must fail with `status`; returns the error body. */
export async function updateContentError(server, who, spaceId, crId, body, status) {
    const res = await raw(server, 'POST', `/v1/spaces/${spaceId}/change-requests/${crId}/content`, {
        token: who.token,
        body,
    });
    assert.equal(res.status, status, `updateChangeRequestContent: expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
    validate(spec202, 'updateChangeRequestContent', res.status, res.body);
    assert.equal(res.body.error.code, status);
    assert.equal(typeof res.body.error.message, 'string');
    return res.body;
}

export async function getSpace(who, spaceId) {
    return check('getSpaceById', await who.api.spaces.getSpaceById(spaceId), { status: 200 });
}

/** The space's change-request counters. */
export async function counters(who, spaceId) {
    const s = await getSpace(who, spaceId);
    return {
        changeRequests: s.changeRequests,
        changeRequestsOpen: s.changeRequestsOpen,
        changeRequestsDraft: s.changeRequestsDraft,
    };
}

export async function createChangeRequest(who, spaceId, subject) {
    const res = await who.api.spaces.createChangeRequest(spaceId, subject === undefined ? {} : { subject });
    const cr = check('createChangeRequest', res, { status: 201 });
    assert.equal(res.headers.get('location'), cr.urls.location, 'createChangeRequest 201 declares a Location header');
    return cr;
}

export async function getChangeRequest(who, spaceId, crId) {
    return check('getChangeRequestById', await who.api.spaces.getChangeRequestById(spaceId, crId), { status: 200 });
}

/** The text of each top-level block of a JSON document. */
export function blockTexts(document) {
    assert.equal(document?.object, 'document');
    const text = (node) =>
        node.object === 'text'
            ? (node.leaves ?? []).map((l) => l.text).join('')
            : (node.nodes ?? []).map(text).join('');
    return document.nodes.map(text);
}

/** A page tree reduced to `{id, path, pages}`. */
export function tree(pages) {
    return pages.map((p) => ({ id: p.id, path: p.path, pages: tree(p.pages ?? []) }));
}

/** Downloads a file's `downloadURL` with a plain fetch (no Authorization) and checks its bytes. */
export async function assertDownload(file, bytes) {
    const res = await fetch(file.downloadURL);
    const got = Buffer.from(await res.arrayBuffer());
    assert.equal(res.status, 200, `GET ${file.downloadURL} → ${res.status}: ${got.toString().slice(0, 300)}`);
    assert.ok(got.equals(bytes), `${file.name}: downloaded bytes differ (${got.length} bytes, expected ${bytes.length})`);
}

// Reviews of change requests (0.137.0): getReviewsByChangeRequestId,
// submitChangeRequestReview, getRequestedReviewersByChangeRequestId,
// requestReviewersForChangeRequest, removeRequestedReviewerFromChangeRequest, through the
// official client, every answer validated against the official schema.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';
import { createChangeRequest } from '../lib/content.js';

let server;
let admin;
let reviewer;
let reader;
let space;

before(async () => {
    server = await startServer();
    [admin, reviewer, reader] = await Promise.all(['admin', 'reviewer', 'reader'].map((l) => newUser(server, l)));
    const org = await setupOrg(server, admin, 'Reviews Org', [
        { user: reviewer, role: 'review' },
        { user: reader, role: 'read' },
    ]);
    space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Reviewed' }), { status: 201 });
});
after(async () => {
    await server?.stop();
});

test('a requested reviewer reviews; requests and reviews are listed and withdrawn', async () => {
    const cr = await createChangeRequest(admin, space.id, 'Needs eyes');
    const s = (who) => who.api.spaces;

    const sent = check(
        'requestReviewersForChangeRequest',
        await s(admin).requestReviewersForChangeRequest(space.id, cr.id, { users: [reviewer.id] }),
        { status: 200 },
    );
    assert.equal(sent.users.length, 1);
    assert.equal(sent.users[0].user.id, reviewer.id);
    await expectApiError(
        s(admin).requestReviewersForChangeRequest(space.id, cr.id, { users: [reader.id] }),
        400,
        'requestReviewersForChangeRequest',
    );
    await expectApiError(
        s(reader).requestReviewersForChangeRequest(space.id, cr.id, { users: [reviewer.id] }),
        403,
        'requestReviewersForChangeRequest',
    );
    const pending = check(
        'getRequestedReviewersByChangeRequestId',
        await s(reader).getRequestedReviewersByChangeRequestId(space.id, cr.id),
        { status: 200 },
    );
    assert.equal(pending.items.length, 1);

    const review = check(
        'submitChangeRequestReview',
        await s(reviewer).submitChangeRequestReview(space.id, cr.id, { status: 'approved' }),
        { status: 201 },
    );
    assert.equal(review.status, 'approved');
    assert.equal(review.requestedBy.id, admin.id);
    await expectApiError(
        s(reader).submitChangeRequestReview(space.id, cr.id, { status: 'approved' }),
        403,
        'submitChangeRequestReview',
    );
    const reviews = check(
        'getReviewsByChangeRequestId',
        await s(reader).getReviewsByChangeRequestId(space.id, cr.id),
        { status: 200 },
    );
    assert.deepEqual(reviews.items.map((r) => r.id), [review.id]);
    const fulfilled = check(
        'getRequestedReviewersByChangeRequestId',
        await s(admin).getRequestedReviewersByChangeRequestId(space.id, cr.id),
        { status: 200 },
    );
    assert.equal(fulfilled.items.length, 0);

    check(
        'requestReviewersForChangeRequest',
        await s(admin).requestReviewersForChangeRequest(space.id, cr.id, { users: [reviewer.id] }),
        { status: 200 },
    );
    const removed = await s(admin).removeRequestedReviewerFromChangeRequest(space.id, cr.id, reviewer.id);
    check('removeRequestedReviewerFromChangeRequest', removed, { status: 205 });
    const none = await s(admin).removeRequestedReviewerFromChangeRequest(space.id, cr.id, reviewer.id);
    check('removeRequestedReviewerFromChangeRequest', none, { status: 204 });
});

// API information, the authenticated user, users, and authentication errors.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.js';
import { client, check, expectApiError, newUser, raw, createOrganization } from '../lib/client.js';

let server;
let alice;
let bob;
let stranger;
before(async () => {
    server = await startServer();
    alice = await newUser(server, 'alice');
    bob = await newUser(server, 'bob');
    stranger = await newUser(server, 'stranger');
    // Alice and Bob share an organization; the stranger shares none with them.
    const org = await createOrganization(server, alice.token, 'Users Org');
    await alice.api.orgs.inviteUsersToOrganization(org.id, { emails: [bob.email] });
});
after(async () => {
    await server?.stop();
});

test('getApiInformation', async () => {
    const info = check('getApiInformation', await alice.api.getApiInformation(), { status: 200 });
    assert.equal(typeof info.version, 'string');
    assert.equal(typeof info.build, 'string');
});

test('getAuthenticatedUser returns the token owner', async () => {
    const me = check('getAuthenticatedUser', await alice.api.user.getAuthenticatedUser(), { status: 200 });
    assert.equal(me.object, 'user');
    assert.equal(me.id, alice.id);
    assert.equal(me.email, alice.email);
    assert.equal(me.displayName, 'Alice Conformance');
    assert.equal(me.urls.location, `${server.url}/v1/users/${alice.id}`);
});

test('a second create-token for the same e-mail authenticates the same user', async () => {
    const token = await server.createToken(alice.email);
    assert.notEqual(token, alice.token);
    const me = check('getAuthenticatedUser', await client(server, token).user.getAuthenticatedUser(), {
        status: 200,
    });
    assert.equal(me.id, alice.id);
});

test('401 without a token, with an unknown token, with a malformed header', async () => {
    const anonymous = client(server);
    await expectApiError(anonymous.user.getAuthenticatedUser(), 401, 'getAuthenticatedUser');
    await expectApiError(anonymous.getApiInformation(), 401, 'getApiInformation');
    await expectApiError(anonymous.orgs.listOrganizationsForAuthenticatedUser(), 401);

    const forged = client(server, 'quire_notarealtokenatall0000000000000000');
    await expectApiError(forged.user.getAuthenticatedUser(), 401, 'getAuthenticatedUser');

    const basic = await raw(server, 'GET', '/v1/user', { headers: { Authorization: 'Basic Zm9vOmJhcg==' } });
    assert.equal(basic.status, 401);
    assert.equal(basic.body.error.code, 401);
});

test('an unknown endpoint answers 404 with the error shape', async () => {
    const res = await raw(server, 'GET', '/v1/no-such-endpoint', { token: alice.token });
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 404);
});

test('a method the path does not support answers 405 with the error shape', async () => {
    const res = await raw(server, 'DELETE', '/v1/user', { token: alice.token });
    assert.equal(res.status, 405);
    assert.equal(res.body.error.code, 405);
});

test('getUserById: self and a co-member; 404 for strangers and unknown ids', async () => {
    const self = check('getUserById', await alice.api.users.getUserById(alice.id), { status: 200 });
    assert.equal(self.id, alice.id);

    const other = check('getUserById', await alice.api.users.getUserById(bob.id), { status: 200 });
    assert.equal(other.id, bob.id);
    assert.equal(other.displayName, 'Bob Conformance');

    await expectApiError(alice.api.users.getUserById(stranger.id), 404, 'getUserById');
    await expectApiError(alice.api.users.getUserById('doesnotexist0000'), 404, 'getUserById');
});

test('updateUserById: a user updates their own profile', async () => {
    const updated = check(
        'updateUserById',
        await alice.api.users.updateUserById(alice.id, { displayName: 'Alice Renamed' }),
        { status: 200 },
    );
    assert.equal(updated.displayName, 'Alice Renamed');
    assert.equal(updated.id, alice.id);

    const withPhoto = check(
        'updateUserById',
        await alice.api.users.updateUserById(alice.id, { photoURL: 'https://example.com/alice.png' }),
        { status: 200 },
    );
    assert.equal(withPhoto.photoURL, 'https://example.com/alice.png');
    assert.equal(withPhoto.displayName, 'Alice Renamed');

    const me = check('getAuthenticatedUser', await alice.api.user.getAuthenticatedUser(), { status: 200 });
    assert.equal(me.displayName, 'Alice Renamed');
    assert.equal(me.photoURL, 'https://example.com/alice.png');
});

test('updateUserById: another user gets 403; invalid bodies get 400', async () => {
    await expectApiError(
        bob.api.users.updateUserById(alice.id, { displayName: 'Hijacked' }),
        403,
        'updateUserById',
    );
    await expectApiError(alice.api.users.updateUserById(alice.id, { displayName: '' }), 400, 'updateUserById');
    await expectApiError(alice.api.users.updateUserById(alice.id, {}), 400, 'updateUserById');
    const still = check('getUserById', await bob.api.users.getUserById(alice.id), { status: 200 });
    assert.notEqual(still.displayName, 'Hijacked');
});

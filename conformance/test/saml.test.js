// SAML single sign-on providers through the official client: the six operations of
// `ORG/saml` and `ORG/sso`, with every response validated against the official schemas.
// Logins themselves (browser endpoints outside /v1) are tested in the server's HTTP tests.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../lib/server.js';
import { check, client, expectApiError, newUser, setupOrg, listAll } from '../lib/client.js';

const here = dirname(fileURLToPath(import.meta.url));
const CERT = resolve(here, '..', '..', 'crates', 'quire-server', 'tests', 'saml_idp', 'idp.crt');

let server;
let admin;
let member;
let org;
let team;
let certificate;
before(async () => {
    server = await startServer();
    admin = await newUser(server, 'admin');
    member = await newUser(server, 'member');
    org = await setupOrg(server, admin, 'SAML Org', [{ user: member, role: 'create' }]);
    team = check(
        'createOrganizationTeam',
        await admin.api.orgs.createOrganizationTeam(org.id, { title: 'SSO people' }),
        { status: 201 },
    );
    certificate = await readFile(CERT, 'utf8');
});
after(async () => {
    await server?.stop();
});

const settings = (label) => ({
    label,
    entityID: 'https://idp.conformance.test/metadata',
    ssoURL: 'https://idp.conformance.test/sso',
    certificate,
    defaultTeam: team.id,
    defaultRole: 'read',
});

test('createOrganizationSAMLProvider: 201 with the provider and its service endpoints', async () => {
    const res = await admin.api.orgs.createOrganizationSamlProvider(org.id, settings('Okta'));
    const p = check('createOrganizationSAMLProvider', res, { status: 201 });
    assert.equal(p.object, 'saml-provider');
    assert.equal(p.status, 'active');
    assert.equal(p.label, 'Okta');
    assert.equal(p.defaultRole, 'read');
    assert.equal(p.defaultTeam.id, team.id);
    assert.equal(res.headers.get('location'), p.urls.location);
    assert.equal(p.service.acsURL, `${server.url}/saml/${p.id}/acs`);
    assert.equal(p.service.startURL, `${server.url}/saml/${p.id}/start`);
    assert.equal(p.service.entityID, `${server.url}/saml/${p.id}/metadata`);
    // The service provider's metadata is served where its entity id points.
    const md = await fetch(p.service.entityID);
    assert.equal(md.status, 200);
    assert.match(await md.text(), new RegExp(`Location="${p.service.acsURL}"`));
});

test('createOrganizationSAMLProvider: 400 for bad settings, 403 for non-admins', async () => {
    const body = await expectApiError(
        admin.api.orgs.createOrganizationSamlProvider(org.id, { ...settings('Bad'), certificate: 'nope' }),
        400,
        'createOrganizationSAMLProvider',
    );
    assert.match(body.error.message, /certificate/);
    await expectApiError(
        admin.api.orgs.createOrganizationSamlProvider(org.id, { ...settings('Bad'), ssoURL: '/relative' }),
        400,
        'createOrganizationSAMLProvider',
    );
    // Every answer shows `ssoURL`, a URI: a provider is not created without one.
    const missing = await expectApiError(
        admin.api.orgs.createOrganizationSamlProvider(org.id, { label: 'Bare' }),
        400,
        'createOrganizationSAMLProvider',
    );
    assert.match(missing.error.message, /ssoURL/);
    await expectApiError(
        member.api.orgs.createOrganizationSamlProvider(org.id, settings('Mine')),
        403,
        'createOrganizationSAMLProvider',
    );
});

test('createOrganizationSAMLProvider: a provider without its IdP entity and certificate is pending', async () => {
    const p = check(
        'createOrganizationSAMLProvider',
        await admin.api.orgs.createOrganizationSamlProvider(org.id, {
            label: 'Pending',
            ssoURL: 'https://idp.conformance.test/sso',
        }),
        { status: 201 },
    );
    assert.equal(p.status, 'pending');
    check(
        'getOrganizationSAMLProviderById',
        await admin.api.orgs.getOrganizationSamlProviderById(org.id, p.id),
        { status: 200 },
    );
});

test('list, get, update and delete a provider', async () => {
    const created = check(
        'createOrganizationSAMLProvider',
        await admin.api.orgs.createOrganizationSamlProvider(org.id, settings('Entra')),
        { status: 201 },
    );
    const { items } = await listAll('listSAMLProvidersInOrganizationById', (page) =>
        admin.api.orgs.listSamlProvidersInOrganizationById(org.id, { page, limit: 1 }),
    );
    assert.ok(items.some((p) => p.id === created.id));
    await expectApiError(
        member.api.orgs.listSamlProvidersInOrganizationById(org.id),
        403,
        'listSAMLProvidersInOrganizationById',
    );

    const got = check(
        'getOrganizationSAMLProviderById',
        await admin.api.orgs.getOrganizationSamlProviderById(org.id, created.id),
        { status: 200 },
    );
    assert.deepEqual(got, created);

    const updated = check(
        'updateOrganizationSAMLProvider',
        await admin.api.orgs.updateOrganizationSamlProvider(org.id, created.id, {
            label: 'Entra ID',
            defaultRole: null,
        }),
        { status: 200 },
    );
    assert.equal(updated.label, 'Entra ID');
    assert.equal(updated.defaultRole, null);
    assert.equal(updated.ssoURL, created.ssoURL);

    const del = await admin.api.orgs.deleteOrganizationSamlProvider(org.id, created.id);
    assert.equal(del.status, 204);
    assert.equal(
        (await admin.api.orgs.deleteOrganizationSamlProvider(org.id, created.id)).status,
        204,
        'a delete of an absent provider answers 204 too',
    );
    await expectApiError(
        admin.api.orgs.getOrganizationSamlProviderById(org.id, created.id),
        404,
        'getOrganizationSAMLProviderById',
    );
});

test('listSSOProviderLoginsInOrganization: the active providers, without a token', async () => {
    const p = check(
        'createOrganizationSAMLProvider',
        await admin.api.orgs.createOrganizationSamlProvider(org.id, settings('Public login')),
        { status: 201 },
    );
    const anonymous = client(server);
    const logins = check(
        'listSSOProviderLoginsInOrganization',
        await anonymous.orgs.listSsoProviderLoginsInOrganization(org.id),
        { status: 200 },
    );
    assert.deepEqual(
        logins.items.find((l) => l.id === p.id),
        { id: p.id, label: 'Public login', startURL: p.service.startURL },
    );
    const start = await fetch(p.service.startURL, { redirect: 'manual' });
    assert.equal(start.status, 302);
    assert.match(start.headers.get('location'), /^https:\/\/idp\.conformance\.test\/sso\?SAMLRequest=/);
});

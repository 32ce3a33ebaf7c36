// Visitor authentication of published sites: the site's publishing-auth settings through the
// official client (admins only, the key is a secret), and a visitor token signed with the
// site's key opening a `visitor-auth` site in resolvePublishedContentByUrl.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';

let server;
let admin;
let reader;
let outsider;
let org;
let site;
before(async () => {
    server = await startServer();
    [admin, reader, outsider] = await Promise.all(['admin', 'reader', 'outsider'].map((l) => newUser(server, l)));
    org = await setupOrg(server, admin, 'Visitor Auth Org', [{ user: reader, role: 'read' }]);
    const space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Handbook' }), {
        status: 201,
    });
    site = check(
        'createSite',
        await admin.api.orgs.createSite(org.id, { title: 'Handbook', spaces: [space.id], visibility: 'visitor-auth' }),
        { status: 201 },
    );
    check('publishSite', await admin.api.orgs.publishSite(org.id, site.id), { status: 200 });
});
after(async () => {
    await server?.stop();
});

/** An HS256 JWT of `claims` signed with `key`. */
function sign(key, claims) {
    const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
    return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
}

test('getSitePublishingAuthById / updateSitePublishingAuthById / regenerateSitePublishingAuthById', async () => {
    const auth = check('getSitePublishingAuthById', await admin.api.orgs.getSitePublishingAuthById(org.id, site.id), {
        status: 200,
    });
    assert.equal(auth.object, 'publishing-auth');
    assert.equal(auth.backend, 'custom');
    assert.ok(auth.privateKey.length >= 32);
    await expectApiError(reader.api.orgs.getSitePublishingAuthById(org.id, site.id), 403, 'getSitePublishingAuthById');
    await expectApiError(outsider.api.orgs.getSitePublishingAuthById(org.id, site.id), 404, 'getSitePublishingAuthById');

    const updated = check(
        'updateSitePublishingAuthById',
        await admin.api.orgs.updateSitePublishingAuthById(org.id, site.id, {
            backend: 'custom',
            fallbackURL: 'https://login.example.com/',
        }),
        { status: 200 },
    );
    assert.equal(updated.fallbackURL, 'https://login.example.com/');
    assert.equal(updated.privateKey, auth.privateKey);
    await expectApiError(
        admin.api.orgs.updateSitePublishingAuthById(org.id, site.id, { backend: 'custom', fallbackURL: '/login' }),
        400,
        'updateSitePublishingAuthById',
    );

    const fresh = check(
        'regenerateSitePublishingAuthById',
        await admin.api.orgs.regenerateSitePublishingAuthById(org.id, site.id),
        { status: 200 },
    );
    assert.notEqual(fresh.privateKey, auth.privateKey);
    assert.equal(fresh.fallbackURL, 'https://login.example.com/');
});

test('a visitor token opens a visitor-auth site', async () => {
    const { privateKey } = check(
        'getSitePublishingAuthById',
        await admin.api.orgs.getSitePublishingAuthById(org.id, site.id),
        { status: 200 },
    );
    const url = `${server.url}/sites/${site.id}/`;
    await expectApiError(
        reader.api.urls.resolvePublishedContentByUrl({ url }),
        404,
        'resolvePublishedContentByUrl',
    );
    const exp = Math.floor(Date.now() / 1000) + 600;
    const found = check(
        'resolvePublishedContentByUrl',
        await reader.api.urls.resolvePublishedContentByUrl({ url, visitor: { jwtToken: sign(privateKey, { exp }) } }),
        { status: 200 },
    );
    assert.equal(found.site, site.id);
    assert.equal(typeof found.apiToken, 'string');
    await expectApiError(
        reader.api.urls.resolvePublishedContentByUrl({ url, visitor: { jwtToken: sign('wrong', { exp }) } }),
        404,
        'resolvePublishedContentByUrl',
    );
    // With redirectOnError, the Redirect answer to the fallback URL.
    check(
        'updateSitePublishingAuthById',
        await admin.api.orgs.updateSitePublishingAuthById(org.id, site.id, {
            backend: 'custom',
            fallbackURL: 'https://login.example.com/',
        }),
        { status: 200 },
    );
    const redirect = check(
        'resolvePublishedContentByUrl',
        await reader.api.urls.resolvePublishedContentByUrl({ url, redirectOnError: true }),
        { status: 200 },
    );
    assert.deepEqual(redirect, { target: 'external', redirect: 'https://login.example.com/' });
});

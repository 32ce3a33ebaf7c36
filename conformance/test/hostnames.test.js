// Sites on addresses of their own: a site served on its custom hostname and on its
// organization's subdomain (`--sites-domain`), and the custom-hostname and subdomain
// operations through the official client, every answer checked against the spec.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startServer } from '../lib/server.js';
import { check, expectApiError, newUser, setupOrg } from '../lib/client.js';
import { createChangeRequest, updateContent } from '../lib/content.js';
import { hostnameRecord, proveHostname, startDns } from '../lib/hostnames.js';

const DOMAIN = 'docs.conformance.test';
/** The organization's hostname, of this run alone (one organization holds it). */
const ORG_HOST = `h${Date.now().toString(36)}`;

let server;
let dns;
let admin;
let reader;
let org;
let site;
before(async () => {
    dns = await startDns();
    server = await startServer({ args: ['--sites-domain', DOMAIN, '--dns-server', dns.address] });
    [admin, reader] = await Promise.all(['admin', 'reader'].map((label) => newUser(server, label)));
    org = await setupOrg(server, admin, 'Hostnames Org', [{ user: reader, role: 'read' }]);
    const space = check('createSpace', await admin.api.orgs.createSpace(org.id, { title: 'Guide' }), { status: 201 });
    const cr = await createChangeRequest(admin, space.id, 'Write');
    await updateContent(server, admin, space.id, cr.id, [
        { operation: 'insert_page', title: 'Intro', document: { markdown: 'Welcome.' } },
        { operation: 'insert_page', title: 'Install', document: { markdown: 'Install it.' } },
    ]);
    check('mergeChangeRequest', await admin.api.spaces.mergeChangeRequest(space.id, cr.id), { status: 200 });
    site = check('createSite', await admin.api.orgs.createSite(org.id, { title: 'Docs', spaces: [space.id] }), {
        status: 201,
    });
    check('publishSite', await admin.api.orgs.publishSite(org.id, site.id), { status: 200 });
});
after(async () => {
    await server?.stop();
    await dns?.stop();
});

/** A GET of `path` on the server sent to `host`: status, content type and text. */
function fetchAs(host, path) {
    const { hostname, port } = new URL(server.url);
    return new Promise((resolve, reject) => {
        const req = http.request({ hostname, port, path, headers: { host } }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk) => (text += chunk));
            res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], text }));
        });
        req.on('error', reject);
        req.end();
    });
}

test('a custom hostname serves its site once its control is proven and is administered by its organization', async () => {
    // An IP literal (the DNS check asks no server), of this run alone: a hostname belongs to
    // one site on the whole server, and a suite's database may be shared between runs.
    // Two digits at least: the official pattern wants a last label of two characters or more.
    const byte = () => 10 + Math.floor(Math.random() * 240);
    const host = `10.${byte()}.${byte()}.${byte()}`;
    const updated = check(
        'updateSiteById',
        await admin.api.orgs.updateSiteById(org.id, site.id, { hostname: host }),
        { status: 200 },
    );
    assert.equal(updated.urls.published, `http://${host}/`);

    // Not served until its control is proven: a plain page says so.
    const unproven = await fetchAs(host, '/install');
    assert.equal(unproven.status, 404);
    assert.match(unproven.type, /^text\/plain/);
    assert.match(unproven.text, /not verified/);
    const pending = check('getCustomHostname', await admin.api.customHostnames.getCustomHostname(host), {
        status: 200,
    });
    assert.equal(pending.isActive, false);
    // A record holding another value proves nothing.
    const { name } = await hostnameRecord(server, admin, org.id, site.id);
    assert.equal(name, `_quire-challenge.${host}`);
    dns.publish(name, 'quire-verification=00000000000000000000000000000000');
    check('dnsRevalidateCustomHostname', await admin.api.customHostnames.dnsRevalidateCustomHostname(host), {
        status: 204,
    });
    assert.equal((await fetchAs(host, '/install')).status, 404);
    await proveHostname(server, dns, admin, org.id, site.id, host);

    const page = await fetchAs(host, '/install');
    assert.equal(page.status, 200);
    assert.match(page.type, /^text\/html/);
    assert.match(page.text, /Install it\./);
    assert.match(page.text, /href="\/intro"/);

    const lookup = check(
        'getPublishedContentByUrl',
        await admin.api.urls.getPublishedContentByUrl({ url: `http://${host}/install` }),
        { status: 200 },
    );
    assert.equal(lookup.site, site.id);
    assert.equal(lookup.pathname, 'install');
    assert.equal(lookup.canonicalUrl, `http://${host}/install`);

    const got = check('getCustomHostname', await admin.api.customHostnames.getCustomHostname(host), { status: 200 });
    assert.deepEqual(got.target, { type: 'site', site: site.id });
    assert.equal(got.isActive, true);
    await expectApiError(reader.api.customHostnames.getCustomHostname(host), 404, 'getCustomHostname');

    const revalidated = await admin.api.customHostnames.dnsRevalidateCustomHostname(host);
    check('dnsRevalidateCustomHostname', revalidated, { status: 204 });
    const checked = check('getCustomHostname', await admin.api.customHostnames.getCustomHostname(host), {
        status: 200,
    });
    assert.equal(checked.status, 'dns_wrong_cname', 'it resolves, but not to this server');

    check('removeCustomHostname', await admin.api.customHostnames.removeCustomHostname(host), { status: 205 });
    check('removeCustomHostname', await admin.api.customHostnames.removeCustomHostname(host), { status: 204 });
    await expectApiError(admin.api.customHostnames.getCustomHostname(host), 404, 'getCustomHostname');
});

test("an organization's subdomain serves its sites by basename", async () => {
    check('updateOrganizationById', await admin.api.orgs.updateOrganizationById(org.id, { hostname: ORG_HOST }), {
        status: 200,
    });
    check('updateSiteById', await admin.api.orgs.updateSiteById(org.id, site.id, { basename: 'guide' }), {
        status: 200,
    });
    const page = await fetchAs(`${ORG_HOST}.${DOMAIN}`, '/guide/install');
    assert.equal(page.status, 200);
    assert.match(page.text, /href="\/guide\/intro"/);

    const sub = check('getSubdomain', await reader.api.subdomains.getSubdomain(ORG_HOST), { status: 200 });
    assert.deepEqual(sub, {
        object: 'subdomain',
        subdomain: ORG_HOST,
        target: { type: 'organization', organization: org.id },
        isActive: true,
    });
    await expectApiError(reader.api.subdomains.getSubdomain('nobody'), 404, 'getSubdomain');
});
